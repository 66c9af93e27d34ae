"""`OffloadStrategy`: size rules instead of a judge; large results offloaded, old groups summarised."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs

from tracetrim._json import canonical_length
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens
from tracetrim.archive import Archive, snapshot_ref
from tracetrim.compactor._budget import history_tokens, message_tokens, rewrite_tokens, token_counts
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._flow import pair_decisions, with_reduction
from tracetrim.compactor._observation import default_goal
from tracetrim.compactor._offload._config import OffloadConfig, OffloadMode
from tracetrim.compactor._offload._select import compress_groups, offload_pairs
from tracetrim.compactor._offload._summary import replace_groups, summary_message
from tracetrim.compactor._outcome import Action, Outcome, Plan, PlanStats, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._rebuild import Rebuilt, Shortening, rebuild
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._runner import Proposal, Strategy
from tracetrim.compactor._transcript import Transcript
from tracetrim.decision import Summarizer, Summary


@attrs.frozen
class _Proposal:
    """What the size rules produce before anything is archived."""

    compacted: Rebuilt | None
    chosen: set[str]
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

    ``config.mode`` picks ``compact`` (large tool results become a preview plus a marker),
    ``compress`` (older message groups become one summary message each, written by ``summarizer``)
    or ``auto`` (compact, then compress when compaction kept more than ``compact_ratio_threshold`` of
    the tokens). See `OffloadConfig` for the rules. ``execution.mode`` works as for `Compactor`: OFF
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
            raise ValueError(
                f"offload mode {self.config.mode.value!r} needs a summarizer (e.g. ChatSummarizer); "
                "use mode 'compact' to offload large tool results only"
            )
        if summarizer is not None and not callable(summarizer):
            raise TypeError("summarizer must be a Summarizer (an async callable taking messages)")
        if self.execution.mode is Mode.ENFORCE and archive is None:
            raise ValueError("ENFORCE mode needs an archive: originals are saved before a shorter history")
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
        tokens = history_tokens(messages, count)
        base = PlanStats(
            messages_before=len(messages),
            messages_after=len(messages),
            chars_before=transcript.chars,
            chars_after=transcript.chars,
            protected=sum(1 for pair in pairs if not pair.candidate),
            tokens_before=tokens,
            tokens_after=tokens,
        )
        kept = {p.key: (Action.KEEP, "below_threshold") for p in pairs if p.candidate}
        if tokens <= config.max_total_tokens:
            return Outcome(
                status=Status.SKIPPED,
                reason=Reason.BELOW_THRESHOLD,
                detail=f"the history holds {tokens:,} tokens; "
                f"max_total_tokens is {config.max_total_tokens:,}",
                plan=Plan(
                    messages=messages, decisions=pair_decisions(messages, pairs, kept, {}, {}), stats=base
                ),
            )

        proposal = await self._propose(request, messages, pairs, chosen, ref, tokens, count, deadline)
        if isinstance(proposal, Outcome):
            return proposal
        applied = _applied(pairs, chosen, proposal)
        if not proposal.offloaded and not proposal.groups:
            return Outcome(
                status=Status.SKIPPED,
                reason=Reason.NO_CANDIDATES,
                detail=f"the history holds {tokens:,} tokens, but no tool result is above "
                f"{config.max_tool_message_tokens:,} tokens outside the protected messages"
                + ("" if config.mode is OffloadMode.COMPACT else " and no message group can be summarised"),
                plan=Plan(
                    messages=messages, decisions=pair_decisions(messages, pairs, applied, {}, {}), stats=base
                ),
            )

        async def remake(saved: str, refs: Sequence[str] | None) -> Proposal:
            compacted = self._rebuild(messages, pairs, chosen, saved) if proposal.compacted else None
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
        applied = _applied(pairs, proposal.chosen, proposal)
        chars_after = dict(proposal.compacted.chars_after) if proposal.compacted is not None else {}
        chars_after.update({key: 0 for key, (action, _) in applied.items() if action is Action.DROP_CALL})
        after_tokens = token_counts(final, count)
        tokens_after = sum(after_tokens)
        summarised = sum(len(group) for group in proposal.groups)
        stats = with_reduction(
            attrs.evolve(
                base,
                messages_after=len(final),
                chars_after=canonical_length(final),
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
                cache_rewrite_tokens=rewrite_tokens(messages, final, after_tokens),
            )
        )
        plan = Plan(
            messages=final, decisions=pair_decisions(messages, pairs, applied, chars_after, {}), stats=stats
        )
        detail = (
            f"{base.tokens_before:,} -> {tokens_after:,} tokens; {proposal.offloaded} tool results offloaded "
            f"(compaction kept {proposal.ratio:.0%}); {len(proposal.groups)} groups of {summarised} "
            "messages summarised"
        )
        return Proposal(plan, detail, tuple(zip(groups, refs, strict=True)))

    async def _propose(
        self,
        request: CompactionRequest,
        messages: list[Message],
        pairs: Sequence[Pair],
        chosen: set[str],
        ref: str,
        tokens: int,
        count: TokenCounter,
        deadline: float,
    ) -> _Proposal | Outcome:
        config = self.config
        compacted: Rebuilt | None = None
        current, ratio, tokens_compacted = messages, 1.0, tokens
        if config.mode is not OffloadMode.COMPRESS:
            compacted = self._rebuild(messages, pairs, chosen, ref)
            current = compacted.messages
            tokens_compacted = history_tokens(current, count)
            ratio = tokens_compacted / tokens if tokens else 1.0
        compress = config.mode is OffloadMode.COMPRESS or (
            config.mode is OffloadMode.AUTO and ratio > config.compact_ratio_threshold
        )
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
            goal = request.goal or default_goal(messages)
            summarised = await self._summarise(current, groups, goal, deadline)
            if isinstance(summarised, Outcome):
                return summarised
            summaries = summarised
        return _Proposal(compacted, chosen, groups, summaries, tokens, tokens_compacted, ratio)

    def _rebuild(self, messages: list[Message], pairs: Sequence[Pair], chosen: set[str], ref: str) -> Rebuilt:
        actions = {key: (Action.DROP_RESULT, "over_token_limit") for key in chosen}
        return rebuild(
            messages,
            pairs,
            actions,
            archive_ref=ref,
            shortening=Shortening(self.config.preview_head_chars, self.config.preview_tail_chars),
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


def _applied(pairs: Sequence[Pair], chosen: set[str], proposal: _Proposal) -> dict[str, tuple[Action, str]]:
    """Per pair key, what the proposal does: offloaded, summarised, or kept and why."""
    applied: dict[str, tuple[Action, str]] = {}
    if proposal.compacted is not None:
        applied.update(proposal.compacted.applied)
    for pair in pairs:
        if pair.candidate and (proposal.compacted is None or pair.key not in chosen):
            applied[pair.key] = (Action.KEEP, "under_token_limit" if proposal.compacted else "not_summarized")
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
