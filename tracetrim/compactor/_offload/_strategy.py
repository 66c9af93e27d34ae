"""`OffloadStrategy`: size rules instead of a judge; large results offloaded, old groups summarised."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens, message_tokens, token_counts
from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.archive import Archive, snapshot_ref
from tracetrim.compactor._budget import KEPT_REASON, rebuilt_tokens, rewrite_tokens
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._excerpt import salience
from tracetrim.compactor._flow import (
    below_trigger,
    carried_chars,
    pair_decisions,
    rebuilt_length,
    unchanged_stats,
    with_reduction,
)
from tracetrim.compactor._offload._config import OffloadConfig, OffloadMode
from tracetrim.compactor._offload._select import (
    compress_groups,
    offload_pairs,
    oldest_groups,
    oldest_within_target,
)
from tracetrim.compactor._offload._summary import replace_groups, summary_message
from tracetrim.compactor._outcome import Action, Outcome, Plan, PlanStats, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._rebuild import Rebuilt, Shortening, rebuild
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._runner import Proposal, Strategy
from tracetrim.compactor._transcript import Transcript
from tracetrim.decision import Summarizer, Summary
from tracetrim.decision._goal import default_goal


@attrs.frozen
class _Proposal:
    """What the size rules produce before anything is archived."""

    compacted: Rebuilt | None
    chosen: set[str]
    over_limit: set[str]
    shortening: Shortening
    groups: list[range]
    summaries: list[Summary]
    tokens_before: int
    tokens_compacted: int
    ratio: float

    @property
    def offloaded(self) -> int:
        """How many tool results were cut to a preview."""
        applied = self.compacted.applied.values() if self.compacted is not None else ()
        return sum(1 for action, _ in applied if action is Action.DROP_RESULT)


class OffloadStrategy(Strategy):
    """Shrinks a history by size rules alone (no decision model), keeping every original in the archive.

    ``config.mode`` picks ``compact`` (large tool results are shortened as the planner shortens: head,
    excerpt, tail and marker), ``compress`` (older message groups become one summary message each,
    written by ``summarizer``) or ``auto`` (compact, then compress when the history is still over
    ``target_tokens``, or without a target when compaction kept more than ``compact_ratio_threshold``
    of the tokens). Below ``trigger_tokens`` the plan is SKIPPED (``BELOW_TRIGGER``). A pass that
    cannot reach ``target_tokens`` still adopts what the rules allow; ``stats.target_met`` says so.
    See `OffloadConfig` for the rules. ``execution.mode`` works as for `Compactor`: OFF
    does nothing, SHADOW returns the proposal from `plan` and None from `compact`, ENFORCE archives
    the original history (and each summarised group) before adopting, and keeps the original on any
    failure. `plan` and `compact` never raise, except for cancellation, which propagates.
    """

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        config: OffloadConfig | None = None,
        execution: ExecutionOptions | None = None,
        archive: Archive | None = None,
    ) -> None:
        self.config = config or OffloadConfig()
        self.execution = execution or ExecutionOptions()
        if self.config.mode is not OffloadMode.COMPACT and summarizer is None:
            raise FieldValueError(
                f"offload mode {self.config.mode.value!r} needs a summarizer (e.g. ChatSummarizer); "
                "use mode 'compact' to offload large tool results only"
            )
        if summarizer is not None and not callable(summarizer):
            raise FieldTypeError("summarizer must be a Summarizer (an async callable taking messages)")
        if self.execution.mode is Mode.ENFORCE and archive is None:
            raise FieldValueError(
                "ENFORCE mode needs an archive: originals are saved before a shorter history"
            )
        self.summarizer = summarizer
        self.archive = archive

    @property
    def max_transcript_chars(self) -> int:
        """``config.max_transcript_chars``: larger histories are SKIPPED."""
        return self.config.max_transcript_chars

    async def propose(
        self, transcript: Transcript, request: CompactionRequest, ref: str, deadline: float
    ) -> Proposal | Outcome:
        """The proposal for one loaded history (markers naming ``ref``, summaries naming their groups'
        references), or the outcome saying why there is none. Nothing is archived here."""
        config = self.config
        messages, scope = transcript.messages, request.scope
        count = config.token_counter or estimate_tokens
        pairs, chosen = offload_pairs(
            messages,
            keep_recent=config.keep_recent_count,
            protected_ids=set(request.protected_message_ids),
            pinned_ids=config.pinned_message_ids,
            protected_call_ids=set(request.protected_call_ids),
            exempt_tools=config.exempt_tools,
            max_result_tokens=config.max_tool_message_tokens,
            count=count,
        )
        per_message = token_counts(messages, count)
        tokens = sum(per_message)
        base = unchanged_stats(transcript, pairs, tokens, config.target_tokens)
        base = attrs.evolve(base, candidates=0)  # counted once the rules have chosen
        waiting = below_trigger(config.budget, transcript, pairs, base)
        if waiting is not None:
            return waiting

        proposal = await self._propose(request, messages, pairs, chosen, ref, per_message, count, deadline)
        if isinstance(proposal, Outcome):
            return proposal
        applied = _applied(pairs, proposal)
        if not proposal.offloaded and not proposal.groups:
            return Outcome(
                status=Status.SKIPPED,
                reason=Reason.NO_CANDIDATES,
                detail=f"the history holds {tokens:,} tokens, but no tool result is above "
                f"{config.max_tool_message_tokens:,} tokens outside the protected messages"
                + ("" if config.mode is OffloadMode.COMPACT else " and no message group can be summarised"),
                plan=Plan(
                    messages=messages,
                    decisions=pair_decisions(messages, pairs, applied, {}, {}, transcript.blocks),
                    stats=base,
                ),
            )

        async def remake(saved: str, refs: Sequence[str] | None) -> Proposal:
            compacted = None
            if proposal.compacted is not None:
                compacted = self._rebuild(messages, pairs, proposal.chosen, saved, proposal.shortening)
            remade = attrs.evolve(proposal, compacted=compacted)
            return attrs.evolve(self._final(transcript, scope, pairs, remade, refs, base), remake=remake)

        return attrs.evolve(self._final(transcript, scope, pairs, proposal, None, base), remake=remake)

    def _final(
        self,
        transcript: Transcript,
        scope: Scope | None,
        pairs: Sequence[Pair],
        proposal: _Proposal,
        refs: Sequence[str] | None,
        base: PlanStats,
    ) -> Proposal:
        """The proposed history: offloaded results, and summaries naming their groups' references
        (``refs``, or as `snapshot_ref` predicts them)."""
        messages = transcript.messages
        count = self.config.token_counter or estimate_tokens
        compacted = proposal.compacted.messages if proposal.compacted is not None else messages
        groups = [compacted[g.start : g.stop] for g in proposal.groups]
        if refs is None:
            refs = [snapshot_ref(scope, group) if scope is not None else "" for group in groups]
        summaries = [
            summary_message(group, s.text, ref, sum(message_tokens(m, count) for m in group))
            for group, s, ref in zip(groups, proposal.summaries, refs, strict=True)
        ]
        final = replace_groups(compacted, proposal.groups, summaries)
        applied = _applied(pairs, proposal)
        chars_after = dict(proposal.compacted.chars_after) if proposal.compacted is not None else {}
        chars_after.update({key: 0 for key, (action, _) in applied.items() if action is Action.DROP_CALL})
        after_tokens = token_counts(final, count)
        tokens_after = sum(after_tokens)
        summarised = sum(len(group) for group in proposal.groups)
        stats = with_reduction(
            attrs.evolve(
                base,
                messages_after=len(final),
                chars_after=rebuilt_length(messages, final, transcript.sizes),
                candidates=proposal.offloaded + summarised,
                requests=sum(s.requests for s in proposal.summaries),
                retries=sum(s.retries for s in proposal.summaries),
                input_tokens=sum(s.usage.input_tokens for s in proposal.summaries),
                output_tokens=sum(s.usage.output_tokens for s in proposal.summaries),
                fitting_stage="+".join(
                    stage
                    for stage, ran in (("compact", proposal.offloaded), ("compress", proposal.groups))
                    if ran
                ),
                tokens_after=tokens_after,
                target_met=None
                if self.config.target_tokens is None
                else self.config.budget.met(tokens_after),
                cache_rewrite_tokens=rewrite_tokens(messages, final, after_tokens),
            ),
            carried_chars(transcript),
        )
        plan = Plan(
            messages=final,
            decisions=pair_decisions(messages, pairs, applied, chars_after, {}, transcript.blocks),
            stats=stats,
        )
        detail = (
            f"{base.tokens_before:,} -> {tokens_after:,} tokens; {proposal.offloaded} tool results offloaded "
            f"(compaction kept {proposal.ratio:.0%}); {len(proposal.groups)} groups of {summarised} "
            "messages summarised"
        )
        if stats.target_met is not None:
            reached = "reached" if stats.target_met else "not reached within the rules"
            detail += f"; target_tokens ({stats.target_tokens:,}) {reached}"
        return Proposal(plan, detail, tuple(zip(groups, refs, strict=True)))

    async def _propose(
        self,
        request: CompactionRequest,
        messages: list[Message],
        pairs: Sequence[Pair],
        over_limit: set[str],
        ref: str,
        per_message: list[int],
        count: TokenCounter,
        deadline: float,
    ) -> _Proposal | Outcome:
        config = self.config
        tokens = sum(per_message)
        target = config.target_tokens
        shortening = self._shortening(messages, over_limit)
        compacted: Rebuilt | None = None
        chosen: set[str] = set()
        current, current_tokens, ratio, tokens_compacted = messages, per_message, 1.0, tokens
        if config.mode is not OffloadMode.COMPRESS:
            chosen = set(over_limit)
            compacted = self._rebuild(messages, pairs, chosen, ref, shortening)
            if target is not None:
                # Only the oldest results the target needs: the next turns stay below the trigger.
                chosen = oldest_within_target(messages, pairs, compacted, count, tokens=tokens, target=target)
                compacted = self._rebuild(messages, pairs, chosen, ref, shortening)
            current = compacted.messages
            current_tokens = rebuilt_tokens(messages, current, per_message, count)
            tokens_compacted = sum(current_tokens)
            ratio = tokens_compacted / tokens if tokens else 1.0
        over = tokens_compacted > target if target is not None else ratio > config.compact_ratio_threshold
        compress = config.mode is OffloadMode.COMPRESS or (config.mode is OffloadMode.AUTO and over)
        groups: list[range] = []
        summaries: list[Summary] = []
        if compress:
            groups = compress_groups(
                current,
                keep_recent=config.compress_keep_recent_count,
                protected_ids=set(request.protected_message_ids),
                pinned_ids=config.pinned_message_ids,
                protected_call_ids=set(request.protected_call_ids),
                max_group_tokens=config.group_token_threshold,
                count=count,
            )
            if target is not None:
                groups = oldest_groups(groups, current_tokens, tokens_compacted - target)
            goal = request.goal or default_goal(messages)
            summarised = await self._summarise(current, groups, goal, deadline)
            if isinstance(summarised, Outcome):
                return summarised
            summaries = summarised
        return _Proposal(
            compacted, chosen, over_limit, shortening, groups, summaries, tokens, tokens_compacted, ratio
        )

    def _shortening(self, messages: list[Message], over_limit: set[str]) -> Shortening:
        """The planner's way of shortening a result, with this config's sizes: the salience index (a pass
        over the history) is built only when a result is to be shortened and excerpts are on."""
        config = self.config
        plain = Shortening(config.preview_head_chars, config.preview_tail_chars)
        if not over_limit or not config.excerpt_chars or config.mode is OffloadMode.COMPRESS:
            return plain
        return attrs.evolve(plain, budget=config.excerpt_chars, index=salience(messages))

    def _rebuild(
        self, messages: list[Message], pairs: Sequence[Pair], chosen: set[str], ref: str, how: Shortening
    ) -> Rebuilt:
        """``messages`` with the ``chosen`` results shortened: by an excerpt where the planner's rule
        allows one (at most 40% of the result), else, as the size rule promises every result over the
        limit, by the plain head and tail."""
        rebuilt = rebuild(messages, pairs, _offloading(chosen), archive_ref=ref, shortening=how)
        rest = {key for key in chosen if rebuilt.applied[key][0] is Action.KEEP}
        if how.index is None or not rest:
            return rebuilt
        # Untouched blocks stay where they were, so the pairs still point at the right ones.
        plain = Shortening(how.head, how.tail)
        again = rebuild(rebuilt.messages, pairs, _offloading(rest), archive_ref=ref, shortening=plain)
        chars_after = dict(rebuilt.chars_after)
        chars_after.update({key: again.chars_after[key] for key in rest if key in again.chars_after})
        return Rebuilt(
            messages=again.messages,
            applied={**rebuilt.applied, **{key: again.applied[key] for key in rest}},
            chars_after=chars_after,
        )

    async def _summarise(
        self, messages: list[Message], groups: Sequence[range], goal: str, deadline: float
    ) -> list[Summary] | Outcome:
        summarizer = self.summarizer
        assert summarizer is not None
        slots = asyncio.Semaphore(self.config.max_concurrency)

        async def one(group: range) -> Summary | str:
            async with slots:
                return await summarizer(messages[group.start : group.stop], goal=goal)

        try:
            async with asyncio.timeout_at(deadline):
                async with asyncio.TaskGroup() as tasks:
                    running = [tasks.create_task(one(group)) for group in groups]
        except TimeoutError:
            return _error(Reason.TIMEOUT, f"summaries did not finish within {self.execution.budget_s} s")
        except ExceptionGroup as failed:
            cause = _first_leaf(failed)
            return _error(Reason.SUMMARY_ERROR, f"summarizer failed: {type(cause).__name__}: {cause}")
        summaries = []
        for n, task in enumerate(running, start=1):
            answer: object = task.result()  # a host's summarizer may break its contract
            summary = Summary(text=answer) if isinstance(answer, str) else answer
            if not isinstance(summary, Summary):
                return _error(
                    Reason.SUMMARY_ERROR,
                    f"summarizer returned {type(answer).__name__} for group {n}, not a Summary or str",
                )
            if not summary.text.strip():
                return _error(Reason.EMPTY_SUMMARY, f"summarizer returned an empty summary for group {n}")
            summaries.append(attrs.evolve(summary, text=summary.text.strip()))
        return summaries


def _offloading(keys: set[str]) -> dict[str, tuple[Action, str]]:
    return {key: (Action.DROP_RESULT, "over_token_limit") for key in keys}


def _applied(pairs: Sequence[Pair], proposal: _Proposal) -> dict[str, tuple[Action, str]]:
    """Per pair key, what the proposal does: offloaded, summarised, or kept and why (under the limit,
    or over it but not needed to reach the target)."""
    applied: dict[str, tuple[Action, str]] = {}
    if proposal.compacted is not None:
        applied.update(proposal.compacted.applied)
    for pair in pairs:
        if pair.candidate and (proposal.compacted is None or pair.key not in proposal.chosen):
            reason = "not_summarized"
            if proposal.compacted is not None:
                reason = KEPT_REASON if pair.key in proposal.over_limit else "under_token_limit"
            applied[pair.key] = (Action.KEEP, reason)
    summarised = {i for group in proposal.groups for i in group}
    for pair in pairs:
        at = pair.call_at or pair.result_at
        if at is not None and at[0] in summarised:
            applied[pair.key] = (Action.DROP_CALL, "summarized")
    return applied


def _error(reason: Reason, detail: str) -> Outcome:
    return Outcome(status=Status.ERROR, reason=reason, detail=detail)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
