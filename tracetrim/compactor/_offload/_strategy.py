"""`OffloadStrategy`: size rules instead of a judge; large results offloaded, old groups summarised."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs

from tracetrim._json import canonical_length
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens
from tracetrim.archive import Archive, snapshot_ref
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._flow import (
    Stop,
    check_unchanged,
    compacted_history,
    load_request,
    pair_decisions,
    run_plan,
    save_original,
    with_reduction,
)
from tracetrim.compactor._observation import default_goal
from tracetrim.compactor._offload._config import OffloadConfig, OffloadMode
from tracetrim.compactor._offload._select import (
    compress_groups,
    history_tokens,
    message_tokens,
    offload_pairs,
)
from tracetrim.compactor._offload._summary import replace_groups, summary_message
from tracetrim.compactor._outcome import Action, Outcome, Plan, PlanStats, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._rebuild import Rebuilt, Shortening, rebuild
from tracetrim.compactor._request import CompactionRequest
from tracetrim.decision import Summarizer, Summary


@attrs.frozen
class _Proposal:
    """What the size rules produce before anything is archived."""

    compacted: Rebuilt | None
    groups: list[range]
    summaries: list[Summary]
    tokens_before: int
    tokens_compacted: int
    ratio: float


class OffloadStrategy:
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

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The harness entry point: the new history, the original one after a failure in ENFORCE mode,
        or None (OFF and SHADOW) so the host runs its own compaction unchanged."""
        return compacted_history(self.execution, request, await self.plan(request))

    async def plan(self, request: CompactionRequest) -> Outcome:
        """Apply the size rules and return the outcome; see `Outcome` for what each status means."""
        return await run_plan(self.execution, request, lambda _started: self._plan(request))

    async def _plan(self, request: CompactionRequest) -> Outcome:
        config, mode = self.config, self.execution.mode
        deadline = asyncio.get_running_loop().time() + self.execution.budget_s
        transcript = load_request(request, config.max_transcript_chars)
        if mode is Mode.ENFORCE and request.scope is None:
            raise Stop(
                Status.ERROR, Reason.SCOPE_REQUIRED, "ENFORCE mode needs request.scope to archive under"
            )
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
        )
        kept = {p.key: (Action.KEEP, "below_threshold") for p in pairs if p.candidate}
        if tokens <= config.max_total_tokens:
            raise Stop(
                Status.SKIPPED,
                Reason.BELOW_THRESHOLD,
                f"the history holds {tokens:,} tokens; max_total_tokens is {config.max_total_tokens:,}",
                Plan(messages=messages, decisions=pair_decisions(messages, pairs, kept, {}, {}), stats=base),
            )

        predicted = snapshot_ref(scope, messages) if scope is not None else ""
        proposal = await self._propose(request, messages, pairs, chosen, predicted, tokens, count, deadline)
        compacted = proposal.compacted.messages if proposal.compacted is not None else messages
        applied = _applied(pairs, chosen, proposal)
        offloaded = sum(
            1
            for action, _ in (proposal.compacted.applied.values() if proposal.compacted else ())
            if action is Action.DROP_RESULT
        )
        summarised = sum(len(group) for group in proposal.groups)
        if not offloaded and not proposal.groups:
            raise Stop(
                Status.SKIPPED,
                Reason.NO_CANDIDATES,
                f"the history holds {tokens:,} tokens, but no tool result is above "
                f"{config.max_tool_message_tokens:,} tokens outside the protected messages"
                + ("" if config.mode is OffloadMode.COMPACT else " and no message group can be summarised"),
                Plan(
                    messages=messages, decisions=pair_decisions(messages, pairs, applied, {}, {}), stats=base
                ),
            )

        saved = ""
        if mode is Mode.ENFORCE:
            archive = self.archive
            assert archive is not None and scope is not None
            saved = await save_original(archive, scope, messages, deadline)
            if saved != predicted and proposal.compacted is not None:
                # A custom archive names snapshots its own way: the markers must say its name.
                proposal = attrs.evolve(proposal, compacted=self._rebuild(messages, pairs, chosen, saved))
                compacted = proposal.compacted.messages if proposal.compacted is not None else messages
            refs = [
                await save_original(archive, scope, compacted[g.start : g.stop], deadline)
                for g in proposal.groups
            ]
        else:
            refs = [
                snapshot_ref(scope, compacted[g.start : g.stop]) if scope else "" for g in proposal.groups
            ]
        summaries = [
            summary_message(
                compacted[g.start : g.stop],
                s.text,
                ref,
                sum(message_tokens(m, count) for m in compacted[g.start : g.stop]),
            )
            for g, s, ref in zip(proposal.groups, proposal.summaries, refs, strict=True)
        ]
        final = replace_groups(compacted, proposal.groups, summaries)
        chars_after = dict(proposal.compacted.chars_after) if proposal.compacted is not None else {}
        chars_after.update({key: 0 for key, (action, _) in applied.items() if action is Action.DROP_CALL})
        tokens_after = history_tokens(final, count)
        stats = with_reduction(
            PlanStats(
                messages_before=len(messages),
                messages_after=len(final),
                chars_before=transcript.chars,
                chars_after=canonical_length(final),
                candidates=offloaded + summarised,
                protected=base.protected,
                requests=sum(s.requests for s in proposal.summaries),
                retries=sum(s.retries for s in proposal.summaries),
                input_tokens=sum(s.usage.input_tokens for s in proposal.summaries),
                output_tokens=sum(s.usage.output_tokens for s in proposal.summaries),
                fitting_stage="+".join(
                    stage for stage, ran in (("compact", offloaded), ("compress", proposal.groups)) if ran
                ),
            )
        )
        plan = Plan(
            messages=final,
            decisions=pair_decisions(messages, pairs, applied, chars_after, {}),
            stats=stats,
            archive_ref=saved,
        )
        detail = (
            f"{tokens:,} -> {tokens_after:,} tokens; {offloaded} tool results offloaded "
            f"(compaction kept {proposal.ratio:.0%}); {len(proposal.groups)} groups of {summarised} "
            "messages summarised"
        )
        check_unchanged(request, transcript)
        if mode is Mode.SHADOW:
            return Outcome(
                status=Status.DECIDED,
                reason=Reason.SHADOW_PROPOSAL,
                detail=f"{detail}; not adopted (SHADOW)",
                plan=plan,
            )
        return Outcome(
            status=Status.DECIDED,
            reason=Reason.ARCHIVED_PROPOSAL,
            detail=f"{detail}; original archived as {saved}",
            plan=plan,
        )

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
    ) -> _Proposal:
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
            summaries = await self._summarise(current, groups, goal, deadline)
        return _Proposal(compacted, groups, summaries, tokens, tokens_compacted, ratio)

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
    ) -> list[Summary]:
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
            raise Stop(
                Status.ERROR, Reason.TIMEOUT, f"summaries did not finish within {self.execution.budget_s} s"
            ) from None
        except ExceptionGroup as failed:
            cause = _first_leaf(failed)
            raise Stop(
                Status.ERROR, Reason.SUMMARY_ERROR, f"summarizer failed: {type(cause).__name__}: {cause}"
            ) from None
        summaries = []
        for n, task in enumerate(running, start=1):
            answer = task.result()
            summary = Summary(text=answer) if isinstance(answer, str) else answer
            if not isinstance(summary, Summary):
                raise Stop(
                    Status.ERROR,
                    Reason.SUMMARY_ERROR,
                    f"summarizer returned {type(answer).__name__} for group {n}, not a Summary or str",
                )
            if not summary.text.strip():
                raise Stop(
                    Status.ERROR, Reason.EMPTY_SUMMARY, f"summarizer returned an empty summary for group {n}"
                )
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


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
