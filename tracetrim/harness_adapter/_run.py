"""The one path every adapter takes: restore markers, decide whether to plan, plan, check, report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from tracetrim._logging import logger as _log
from tracetrim._marker import MARKER_KEY
from tracetrim._scope import Scope
from tracetrim._snapshot import EncodedHistory, Message, encode_each, encoded_length
from tracetrim.compactor import CompactionRequest, Outcome
from tracetrim.harness_adapter._markers import restore_markers
from tracetrim.harness_adapter._pairing import pairing_problem
from tracetrim.harness_adapter._strategy import CompactionStrategy, PlanningStrategy


@attrs.frozen
class AdapterResult:
    """What one compaction attempt produced for the host.

    ``messages`` is the neutral history to adopt, or None when the host keeps what it has (OFF, SHADOW,
    below the trigger, nothing to gain, any failure). ``outcome`` is the strategy's outcome when it is a
    `PlanningStrategy` (`Compactor`, `OffloadStrategy`); ``archive_ref`` names the archived original
    ("" when none).
    """

    messages: list[Message] | None
    outcome: Outcome | None = None
    archive_ref: str = ""
    planned: bool = False


def history_tokens(messages: Sequence[Message]) -> int:
    """The estimated tokens of a neutral history (its canonical JSON), as `estimate_tokens` counts them."""
    return _tokens(messages if isinstance(messages, EncodedHistory) else encode_each(messages))


def _tokens(history: EncodedHistory) -> int:
    return (encoded_length(history) + 3) // 4  # estimate_tokens: four UTF-8 bytes a token


def _archive_ref(messages: Sequence[Message]) -> str:
    for message in messages:
        for block in message.get("content", ()):
            meta = block.get("metadata") if isinstance(block, dict) else None
            marker = meta.get(MARKER_KEY) if isinstance(meta, dict) else None
            if isinstance(marker, dict) and isinstance(marker.get("archive_ref"), str):
                return str(marker["archive_ref"])
    return ""


async def _ask(strategy: CompactionStrategy, request: CompactionRequest) -> AdapterResult:
    if isinstance(strategy, PlanningStrategy):  # the outcome names the archived snapshot
        outcome = await strategy.plan(request)
        if outcome.adopted and outcome.plan is not None:
            return AdapterResult(outcome.plan.messages, outcome, outcome.plan.archive_ref, planned=True)
        return AdapterResult(None, outcome, planned=True)
    # A host's own strategy only says what to adopt; its markers are all there is to name the archive.
    messages = await strategy.compact(request)
    return AdapterResult(messages, None, _archive_ref(messages or ()), planned=True)


def _changed(result: AdapterResult, history: Sequence[Message]) -> bool:
    """Whether the history to adopt differs from ``history``.

    A planning strategy's plan says so itself (shortening and dropping only ever remove characters),
    so the history is not encoded twice more to compare; a host's own strategy's history is compared
    as values (the JSON a strategy returns differs from its input only by a change it made).
    """
    plan = result.outcome.plan if result.outcome is not None else None
    if plan is not None:
        stats = plan.stats
        return stats.chars_after != stats.chars_before or stats.messages_after != stats.messages_before
    return result.messages != list(history)


async def compact_history(
    strategy: CompactionStrategy,
    messages: Sequence[Message],
    *,
    scope: Scope | None,
    goal: str = "",
    next_action: str = "",
    protected_message_ids: Iterable[str] = (),
    protected_call_ids: Iterable[str] = (),
    trigger_tokens: int | None = None,
) -> AdapterResult:
    """Plan ``messages`` with ``strategy`` and return a history that is safe to adopt, or None.

    Below ``trigger_tokens`` (when set) the strategy is not asked at all, so no record is emitted.
    The result never separates a call from its result and never invents or reorders message ids.
    """
    history: Sequence[Message] = restore_markers(messages)
    if trigger_tokens is not None:
        # Measured from each message's canonical JSON, which the strategy's runner then reuses rather
        # than encoding the history again.
        history = encode_each(history)
        if history_tokens(history) < trigger_tokens:
            return AdapterResult(None)
    request = CompactionRequest(
        history,
        goal,
        next_action,
        scope=scope,
        protected_message_ids=tuple(protected_message_ids),
        protected_call_ids=tuple(protected_call_ids),
        token_budget=trigger_tokens,
    )
    result = await _ask(strategy, request)
    if result.messages is None or not _changed(result, history):
        return attrs.evolve(result, messages=None)
    problem = pairing_problem(history, result.messages)
    if problem is not None:
        _log.warning("tracetrim.adapter_rejected", problem=problem)
        return attrs.evolve(result, messages=None)
    return result


class CompactingAdapter:
    """What every adapter is configured with, and its one call into `compact_history`.

    ``strategy`` plans (a `Compactor` or any `CompactionStrategy`); ``scope`` is the archive scope
    (each adapter derives one from the run when it is None); ``goal`` and ``next_action`` are passed
    on (empty: derived from the history); ``trigger_tokens`` skips planning while the history is
    smaller, None plans every time. ``last_result`` is what the latest attempt produced.
    """

    def __init__(
        self,
        strategy: CompactionStrategy,
        *,
        scope: Scope | None = None,
        goal: str = "",
        next_action: str = "",
        trigger_tokens: int | None = None,
    ) -> None:
        self.strategy = strategy
        self.scope = scope
        self.goal = goal
        self.next_action = next_action
        self.trigger_tokens = trigger_tokens
        self.last_result: AdapterResult | None = None

    async def compact_neutral(
        self,
        messages: Sequence[Message],
        *,
        scope: Scope,
        protected_message_ids: Iterable[str] = (),
        protected_call_ids: Iterable[str] = (),
    ) -> AdapterResult:
        """`compact_history` with this adapter's settings; the result is kept in ``last_result``."""
        self.last_result = await compact_history(
            self.strategy,
            messages,
            scope=scope,
            goal=self.goal,
            next_action=self.next_action,
            protected_message_ids=protected_message_ids,
            protected_call_ids=protected_call_ids,
            trigger_tokens=self.trigger_tokens,
        )
        return self.last_result
