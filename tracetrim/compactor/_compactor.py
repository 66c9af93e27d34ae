"""`Compactor`: the pair planner, a strategy that proposes; the shared runner archives and adopts."""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from typing import Any

import attrs

from tracetrim._gc_pause import gc_paused
from tracetrim._record import make_record
from tracetrim._tokens import estimate_tokens, token_counts
from tracetrim._validators import FieldValueError
from tracetrim.archive import Archive
from tracetrim.compactor._actions import choose_actions
from tracetrim.compactor._asking import judge
from tracetrim.compactor._budget import model_calls, rebuilt_tokens, rewrite_tokens
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._eligibility import no_candidates_detail
from tracetrim.compactor._flow import (
    below_trigger,
    carried_chars,
    pair_decisions,
    proposal_detail,
    rebuilt_length,
    refusal,
    skipped,
    unchanged_stats,
    with_reduction,
)
from tracetrim.compactor._outcome import Outcome, Plan, Reason, Status
from tracetrim.compactor._pairs import find_pairs, protected_messages
from tracetrim.compactor._rebuild import rebuild
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._runner import Proposal, Strategy
from tracetrim.compactor._transcript import Transcript
from tracetrim.decision import LearnedDecisionModel
from tracetrim.decision._history import JudgeNote
from tracetrim.decision._remote import ModelOrJudge, as_judge, check_model

__all__ = ["Compactor", "make_record"]


class Compactor(Strategy):
    """Plans the compaction of a history with a decision model; archives and adopts in ENFORCE mode.

    ``model`` defaults to the embedded `LearnedDecisionModel`. The planner judges with one protocol,
    `HistoryJudge`, which sees the whole history once; any `DecisionModel` is wrapped for it
    (`tracetrim.decision._remote.RemoteJudge`) and answers batched questions about a bounded state
    fitted with ``config``'s remote settings.
    ENFORCE requires an ``archive``.
    `plan` and `compact` never raise, except for cancellation, which propagates.
    """

    def __init__(
        self,
        model: ModelOrJudge | None = None,
        *,
        config: CompactorConfig | None = None,
        execution: ExecutionOptions | None = None,
        archive: Archive | None = None,
    ) -> None:
        if model is None:
            model = LearnedDecisionModel()
        self.config = config or CompactorConfig()
        check_model(model)  # a model it cannot judge with fails here, not at the first plan
        self.model: ModelOrJudge = model
        self.execution = execution or ExecutionOptions()
        if self.execution.mode is Mode.ENFORCE and archive is None:
            raise FieldValueError(
                "ENFORCE mode needs an archive: the original is saved before a shorter one is adopted"
            )
        self.archive = archive

    @property
    def own_budget(self) -> bool:
        """Whether ``config`` sets a token budget of its own (`CompactorConfig.budgeted`)."""
        return self.config.budgeted

    def with_budget(self, trigger_tokens: int, target_tokens: int) -> Compactor:
        """Itself when its config has a budget of its own, else a copy whose config carries this one
        (the original is not changed: a host may share it)."""
        if self.own_budget:
            return self
        twin = copy.copy(self)
        twin.config = attrs.evolve(self.config, trigger_tokens=trigger_tokens, target_tokens=target_tokens)
        return twin

    def with_eligible_tools(self, names: Collection[str]) -> Compactor:
        """Itself when its config already opts in every one of ``names``, else a copy whose
        ``eligible_tools`` adds them (an adapter's ``eligible_read_only``; the original is not changed)."""
        if not set(names) - self.config.eligible_tools:
            return self
        twin = copy.copy(self)
        twin.config = attrs.evolve(self.config, eligible_tools=self.config.eligible_tools | set(names))
        return twin

    @property
    def max_transcript_chars(self) -> int:
        """``config.max_transcript_chars``: larger histories are SKIPPED."""
        return self.config.max_transcript_chars

    async def propose(
        self, transcript: Transcript, request: CompactionRequest, ref: str, deadline: float
    ) -> Proposal | Outcome:
        """The proposal for one loaded history (markers naming ``ref``), or the outcome saying why there
        is none: pairs, the model's answers, the policy, the rebuild. Nothing is archived here."""
        config = self.config
        messages = transcript.messages
        with gc_paused():  # pure stages: nothing here yields to the event loop
            protected = protected_messages(
                messages,
                preserve_recent=config.preserve_recent_messages,
                protected_ids=set(request.protected_message_ids),
                pinned_ids=config.pinned_message_ids,
            )
            pairs = find_pairs(
                messages,
                eligible_tools=config.eligible_tools,
                protected=protected,
                protected_call_ids=set(request.protected_call_ids),
            )
            candidates = [pair for pair in pairs if pair.candidate]
            count = config.token_counter or estimate_tokens
            per_message = token_counts(messages, count)
            base = unchanged_stats(transcript, pairs, sum(per_message), config.target_tokens)
            budget = config.budget
            waiting = below_trigger(budget, transcript, pairs, base)
            if waiting is not None:
                return waiting
            if not candidates:
                detail = no_candidates_detail(pairs, config.eligible_tools)
                return skipped(Reason.NO_CANDIDATES, detail, transcript, pairs, {}, base)

        judged = await judge(
            as_judge(self.model, config),  # per plan: a copy's config (`with_budget`) is the one in force
            messages,
            pairs,
            request,
            deadline=deadline,
            budget_s=self.execution.budget_s,
        )
        if isinstance(judged, Outcome):
            return judged
        with gc_paused():
            chosen = choose_actions(
                messages,
                pairs,
                candidates,
                judged.probabilities,
                config=config,
                ref=ref,
                tokens=per_message,
                count=count,
                census=judged.census,
            )

        def make(ref: str) -> Proposal:
            """Stage 7 and the numbers: the rebuilt history whose markers name ``ref``."""
            rebuilt = rebuild(
                messages,
                pairs,
                chosen.actions,
                archive_ref=ref,
                shortening=chosen.shortening,
                tombstones=config.tombstones,
                pointers=chosen.pointers,
            )
            after_tokens = rebuilt_tokens(messages, rebuilt.messages, per_message, count)
            tokens_after = sum(after_tokens)
            stats = attrs.evolve(
                base,
                messages_after=len(rebuilt.messages),
                chars_after=rebuilt_length(messages, rebuilt.messages, transcript.sizes),
                requests=judged.requests,
                retries=judged.retries,
                input_tokens=judged.usage.input_tokens,
                output_tokens=judged.usage.output_tokens,
                state_tokens=judged.state_tokens,
                fitting_stage=judged.stage,
                tokens_after=tokens_after,
                target_met=None if budget is None else budget.met(tokens_after),
                cache_rewrite_tokens=rewrite_tokens(messages, rebuilt.messages, after_tokens),
                **judge_stats(judged.note),
            )
            decisions = pair_decisions(
                messages, pairs, rebuilt.applied, rebuilt.chars_after, judged.probabilities, transcript.blocks
            )
            plan = Plan(
                messages=rebuilt.messages,
                decisions=decisions,
                stats=with_reduction(stats, carried_chars(transcript)),
            )
            return Proposal(
                plan, proposal_detail(plan.stats, judged.note.text if judged.note is not None else "")
            )

        with gc_paused():
            proposal = make(ref)

        stats = proposal.plan.stats
        refused = refusal(config, stats, model_calls(messages))
        if refused is not None:
            reason, detail = refused
            original = Plan(messages=messages, decisions=proposal.plan.decisions, stats=stats)
            return Outcome(status=Status.INCONCLUSIVE, reason=reason, detail=detail, plan=original)

        async def remake(saved: str, snapshots: Sequence[str] | None) -> Proposal:
            return make(saved)

        return attrs.evolve(proposal, remake=remake)


def judge_stats(note: JudgeNote | None) -> dict[str, Any]:
    """The `PlanStats` fields an in-process judge's note fills (none without a note)."""
    if note is None:
        return {}
    return {
        "judge_level_shift": note.level_shift,
        "judge_reuse": note.reuse,
        "judge_out_of_range": note.out_of_range,
        "judge_cautious": note.cautious,
    }
