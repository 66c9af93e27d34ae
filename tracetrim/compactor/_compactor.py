"""`Compactor`: the one orchestrator running the planning stages, then archiving and adopting."""

from __future__ import annotations

import asyncio
from typing import cast

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._tokens import estimate_tokens
from tracetrim.archive import Archive, snapshot_ref
from tracetrim.compactor._answers import InvalidAnswer, ModelFailed, ask
from tracetrim.compactor._batches import RequestOverBudget, make_batches
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._excerpt import salience
from tracetrim.compactor._flow import (
    Stop,
    check_unchanged,
    compacted_history,
    load_request,
    make_record,
    pair_decisions,
    rebuilt_length,
    run_plan,
    save_original,
    with_reduction,
)
from tracetrim.compactor._judging import history_view, judge_history, stated_plan
from tracetrim.compactor._observation import StateOverBudget, default_goal, default_next_action, observe
from tracetrim.compactor._outcome import Action, Outcome, Plan, PlanStats, Reason, Status
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages
from tracetrim.compactor._policy import decide
from tracetrim.compactor._rebuild import Shortening, rebuild
from tracetrim.compactor._request import CompactionRequest
from tracetrim.decision import DecisionModel, LearnedDecisionModel, Usage
from tracetrim.decision._history import HistoryJudge

__all__ = ["Compactor", "make_record"]


class Compactor:
    """Plans the compaction of a history with a decision model; archives and adopts in ENFORCE mode.

    ``model`` defaults to the embedded `LearnedDecisionModel`. An in-process `HistoryJudge` sees
    the whole history once; any other `DecisionModel` answers batched questions about a bounded state.
    ENFORCE requires an ``archive``.
    `plan` and `compact` never raise, except for cancellation, which propagates.
    """

    def __init__(
        self,
        model: DecisionModel | HistoryJudge | None = None,
        *,
        config: CompactorConfig | None = None,
        execution: ExecutionOptions | None = None,
        archive: Archive | None = None,
    ) -> None:
        if model is None:
            model = LearnedDecisionModel()
        if not (callable(model) or isinstance(model, HistoryJudge)):
            raise TypeError("model must be a DecisionModel (an async callable taking state and questions)")
        self.model: DecisionModel | HistoryJudge = model
        self.config = config or CompactorConfig()
        self.execution = execution or ExecutionOptions()
        if self.execution.mode is Mode.ENFORCE and archive is None:
            raise ValueError(
                "ENFORCE mode needs an archive: the original is saved before a shorter one is adopted"
            )
        self.archive = archive

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The harness entry point: the new history, the original one after a failure in ENFORCE mode,
        or None (OFF and SHADOW) so the host runs its own compaction unchanged."""
        return compacted_history(self.execution, request, await self.plan(request))

    async def plan(self, request: CompactionRequest) -> Outcome:
        """Judge every eligible pair and return the outcome; see `Outcome` for what each status means."""
        return await run_plan(self.execution, request, lambda started: self._plan(request, started))

    async def _plan(self, request: CompactionRequest, started: float) -> Outcome:
        config, mode = self.config, self.execution.mode
        deadline = asyncio.get_running_loop().time() + self.execution.budget_s
        transcript = load_request(request, config.max_transcript_chars)
        if mode is Mode.ENFORCE and request.scope is None:
            raise Stop(
                Status.ERROR, Reason.SCOPE_REQUIRED, "ENFORCE mode needs request.scope to archive under"
            )
        messages = transcript.messages
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
        base = PlanStats(
            messages_before=len(messages),
            messages_after=len(messages),
            chars_before=transcript.chars,
            chars_after=transcript.chars,
            candidates=len(candidates),
            protected=len(pairs) - len(candidates),
        )
        if not candidates:
            decisions = pair_decisions(messages, pairs, {}, {}, {})
            raise Stop(
                Status.SKIPPED,
                Reason.NO_CANDIDATES,
                "no pair is eligible for compaction",
                Plan(messages=messages, decisions=decisions, stats=base),
            )

        goal = request.goal or default_goal(messages)
        if isinstance(self.model, HistoryJudge):
            next_action = request.next_action or stated_plan(messages)
            judged = self._judge_in_process(messages, pairs, goal, next_action)
        else:
            next_action = request.next_action or default_next_action(messages)
            judged = await self._ask_remote(messages, pairs, candidates, goal, next_action, deadline)

        probabilities = judged.probabilities
        actions = {
            pair.key: decide(
                probabilities[f"call_{pair.key}"],
                probabilities[f"result_{pair.key}"],
                config.keep_threshold,
                config.discard,
            )
            for pair in candidates
        }
        ref = _proposal_ref(request.scope, messages, mode)
        shortening = Shortening(config.truncate_head_chars, config.truncate_tail_chars)
        if config.excerpt_chars and any(action is Action.DROP_RESULT for action, _ in actions.values()):
            index = salience(messages)
            shortening = attrs.evolve(shortening, budget=config.excerpt_chars, index=index)
        rebuilt = rebuild(messages, pairs, actions, archive_ref=ref, shortening=shortening)
        stats = PlanStats(
            messages_before=len(messages),
            messages_after=len(rebuilt.messages),
            chars_before=transcript.chars,
            chars_after=rebuilt_length(messages, rebuilt.messages, transcript.sizes),
            candidates=len(candidates),
            protected=len(pairs) - len(candidates),
            requests=judged.requests,
            retries=judged.retries,
            input_tokens=judged.usage.input_tokens,
            output_tokens=judged.usage.output_tokens,
            state_tokens=judged.state_tokens,
            fitting_stage=judged.stage,
        )
        stats = with_reduction(stats)
        decisions = pair_decisions(messages, pairs, rebuilt.applied, rebuilt.chars_after, probabilities)

        if stats.reduction < config.minimum_reduction:
            check_unchanged(request, transcript)
            raise Stop(
                Status.INCONCLUSIVE,
                Reason.INSUFFICIENT_REDUCTION,
                f"the proposal saves {stats.reduction:.1%}; "
                f"minimum_reduction is {config.minimum_reduction:.0%}",
                Plan(messages=messages, decisions=decisions, stats=stats),
            )
        if mode is Mode.SHADOW:
            check_unchanged(request, transcript)
            return Outcome(
                status=Status.DECIDED,
                reason=Reason.SHADOW_PROPOSAL,
                detail="proposal not adopted (SHADOW)",
                plan=Plan(messages=rebuilt.messages, decisions=decisions, stats=stats),
            )

        assert self.archive is not None and request.scope is not None
        saved = await save_original(self.archive, request.scope, messages, deadline)
        # The markers must name the reference the archive gave; rebuilding touches only the changed blocks.
        rebuilt = rebuild(messages, pairs, actions, archive_ref=saved, shortening=shortening)
        if len(saved) != len(ref):  # a custom archive's references differ in length: sizes change
            chars_after = rebuilt_length(messages, rebuilt.messages, transcript.sizes)
            stats = with_reduction(attrs.evolve(stats, chars_after=chars_after))
            decisions = pair_decisions(messages, pairs, rebuilt.applied, rebuilt.chars_after, probabilities)
        check_unchanged(request, transcript)
        return Outcome(
            status=Status.DECIDED,
            reason=Reason.ARCHIVED_PROPOSAL,
            detail=f"original archived as {saved}",
            plan=Plan(messages=rebuilt.messages, decisions=decisions, stats=stats, archive_ref=saved),
        )

    def _judge_in_process(
        self, messages: list[Message], pairs: list[Pair], goal: str, next_action: str
    ) -> _Judged:
        """An in-process judge sees the whole history once: no state fitting, no batches, no budget."""
        assert isinstance(self.model, HistoryJudge)
        view = history_view(messages, pairs, goal=goal, next_action=next_action)
        try:
            probabilities = judge_history(self.model, view)
        except ModelFailed as exc:
            raise Stop(Status.ERROR, Reason.MODEL_ERROR, str(exc)) from None
        except InvalidAnswer as exc:
            raise Stop(Status.ERROR, Reason.INVALID_ANSWER, str(exc)) from None
        return _Judged(probabilities, stage=WHOLE_HISTORY)

    async def _ask_remote(
        self,
        messages: list[Message],
        pairs: list[Pair],
        candidates: list[Pair],
        goal: str,
        next_action: str,
        deadline: float,
    ) -> _Judged:
        """A remote-style model answers questions about a bounded state, in batches, under the deadline."""
        config = self.config
        count = config.token_counter or estimate_tokens
        try:
            observation = observe(
                messages,
                pairs,
                goal=goal,
                next_action=next_action,
                preserve_recent=config.preserve_recent_messages,
                preview_chars=config.result_preview_chars,
                max_tokens=config.max_state_tokens,
                count_tokens=count,
            )
            batches = make_batches(
                candidates,
                state_tokens=observation.tokens,
                max_questions=config.max_questions,
                max_request_tokens=config.max_request_tokens,
                count_tokens=count,
            )
        except StateOverBudget as exc:
            raise Stop(Status.ERROR, Reason.STATE_OVER_BUDGET, str(exc)) from None
        except RequestOverBudget as exc:
            raise Stop(Status.ERROR, Reason.REQUEST_OVER_BUDGET, str(exc)) from None

        try:
            async with asyncio.timeout_at(deadline):
                answers = await ask(
                    cast(DecisionModel, self.model),
                    observation.state,
                    batches,
                    max_concurrency=config.max_concurrency,
                )
        except TimeoutError:
            raise Stop(
                Status.ERROR,
                Reason.TIMEOUT,
                f"decision requests did not finish within {self.execution.budget_s} s",
            ) from None
        except ModelFailed as exc:
            raise Stop(Status.ERROR, Reason.MODEL_ERROR, str(exc)) from None
        except InvalidAnswer as exc:
            raise Stop(Status.ERROR, Reason.INVALID_ANSWER, str(exc)) from None
        return _Judged(
            answers.probabilities,
            requests=answers.requests,
            retries=answers.retries,
            usage=answers.usage,
            state_tokens=observation.tokens,
            stage=observation.stage,
        )


WHOLE_HISTORY = "whole_history"
"""The fitting stage an in-process judge reports: it saw every message, nothing was fitted."""


@attrs.frozen
class _Judged:
    """The answers stage's output, whichever kind of model gave it."""

    probabilities: dict[str, float]
    requests: int = 0
    retries: int = 0
    usage: Usage = attrs.field(factory=Usage)
    state_tokens: int = 0
    stage: str = ""


_UNSAVED_REF = "0" * 64
"""Stands in for the reference while an ENFORCE proposal is sized: as long as a real one."""


def _proposal_ref(scope: Scope | None, messages: list[Message], mode: Mode) -> str:
    """The reference the proposal's markers name before anything is saved.

    SHADOW names the reference the original would get, so its proposal reads as ENFORCE's would.
    ENFORCE uses a stand-in of the same length and writes the archive's own reference after the save,
    so the original is encoded once (by the archive), not twice. (The offload strategy predicts the
    reference instead: its summariser reads the compacted history before anything is saved.)
    """
    if scope is None:
        return ""
    return snapshot_ref(scope, messages) if mode is Mode.SHADOW else _UNSAVED_REF
