"""The one path every adapter takes: restore markers, decide whether to plan, plan, check, report."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

import attrs

from tracetrim._logging import logger as _log
from tracetrim._scope import Scope
from tracetrim._snapshot import EncodedHistory, Message, encode_each, encoded_length
from tracetrim._tokens import chars_to_tokens
from tracetrim._validators import FieldTypeError
from tracetrim.compactor import CompactionRequest, Outcome
from tracetrim.formats._common import ValidatedHistory
from tracetrim.harness_adapter._markers import restore_markers
from tracetrim.harness_adapter._pairing import pairing_problem
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._turns import join_bared_turns


@attrs.frozen
class AdapterResult:
    """What one compaction attempt produced for the host.

    ``messages`` is the neutral history to adopt, or None when the host keeps what it has (OFF, SHADOW,
    below the trigger, nothing to gain, any failure). ``outcome`` is the strategy's outcome (None when
    it was not asked); ``archive_ref`` names the archived original ("" when none).
    """

    messages: list[Message] | None
    outcome: Outcome | None = None
    archive_ref: str = ""
    planned: bool = False


def to_write(result: AdapterResult) -> list[Message]:
    """``result.messages`` (a strategy's plan: valid neutral messages, which the runner validated and
    copied) as a `ValidatedHistory`, which a format's writer takes without validating and encoding
    it again."""
    assert result.messages is not None
    return ValidatedHistory(result.messages)


def tokens_at_most(history: EncodedHistory) -> int:
    """An upper bound of `tracetrim._tokens.history_tokens` for ``history``: its canonical JSON, already
    made, holds every character a model reads and more, so under the trigger by this count is under it by
    the budget's count (skipping the plan is then safe, and costs no second walk)."""
    return chars_to_tokens(encoded_length(history))


def _check_strategy(strategy: object) -> None:
    if not isinstance(strategy, CompactionStrategy):  # the protocol: async plan() and compact()
        raise FieldTypeError(
            f"strategy must be a CompactionStrategy (async plan(request) -> Outcome and compact(request)),"
            f" got {type(strategy).__name__}",
            field="strategy",
        )


async def _ask(strategy: CompactionStrategy, request: CompactionRequest) -> AdapterResult:
    outcome = await strategy.plan(request)  # the outcome names the archived snapshot
    if outcome.adopted and outcome.plan is not None:
        return AdapterResult(outcome.plan.messages, outcome, outcome.plan.archive_ref, planned=True)
    return AdapterResult(None, outcome, planned=True)


def _changed(result: AdapterResult) -> bool:
    """Whether the adopted history differs from the one planned: the plan says so itself (shortening
    and dropping only ever remove characters), so neither history is encoded again to compare."""
    plan = result.outcome.plan if result.outcome is not None else None
    if plan is None:
        return False
    stats = plan.stats
    return stats.chars_after != stats.chars_before or stats.messages_after != stats.messages_before


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
    private: bool = False,
    join_turns: bool = True,
) -> AdapterResult:
    """Plan ``messages`` with ``strategy`` and return a history that is safe to adopt, or None.

    Below ``trigger_tokens`` (when set) the strategy is not asked at all, so no record is emitted.
    The result never separates a call from its result and never invents or reorders message ids.
    ``private`` says that ``messages`` is the caller's own copy (an adapter's conversion of its
    framework's history), which nothing else changes while it is planned: it is then encoded once,
    not once more at the end to check for such a change. ``join_turns`` joins an assistant turn a
    drop left without its calls to the assistant turn after it (`join_bared_turns`), for frameworks
    whose histories go to Gemini as turns.
    """
    _check_strategy(strategy)
    history: Sequence[Message] = restore_markers(messages)
    if trigger_tokens is not None or private:
        # Each message's canonical JSON, made once: the trigger is measured from it, and the strategy's
        # runner copies the history from it rather than encoding it again (nor, when ``private``,
        # once more to check that it did not change: see `EncodedHistory`).
        with contextlib.suppress(TypeError, ValueError):  # not JSON: the runner names the place
            history = encode_each(history, owned=private)
    if (
        trigger_tokens is not None
        and isinstance(history, EncodedHistory)
        and tokens_at_most(history) < trigger_tokens
    ):
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
    if result.messages is None or not _changed(result):
        return attrs.evolve(result, messages=None)
    adopted = join_bared_turns(history, result.messages) if join_turns else result.messages
    problem = pairing_problem(history, adopted)
    if problem is not None:
        _log.warning("tracetrim.adapter_rejected", problem=problem)
        return attrs.evolve(result, messages=None)
    return attrs.evolve(result, messages=adopted)


class CompactingAdapter:
    """What every adapter is configured with, and its one call into `compact_history`.

    ``strategy`` plans (a `Compactor`, an `OffloadStrategy`, any `CompactionStrategy`); ``scope`` is
    the archive scope (each adapter derives one from the run when it is None); ``goal`` and
    ``next_action`` are passed on (empty: derived from the history); ``trigger_tokens`` skips planning
    while the history is smaller, None plans every time. ``last_result`` is what the latest attempt
    produced.
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
        _check_strategy(strategy)
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
        private: bool = False,
        join_turns: bool = True,
    ) -> AdapterResult:
        """`compact_history` with this adapter's settings (``private``: ``messages`` is the adapter's own
        conversion; ``join_turns``: see there); the result is kept in ``last_result``."""
        self.last_result = await compact_history(
            self.strategy,
            messages,
            scope=scope,
            goal=self.goal,
            next_action=self.next_action,
            protected_message_ids=protected_message_ids,
            protected_call_ids=protected_call_ids,
            trigger_tokens=self.trigger_tokens,
            private=private,
            join_turns=join_turns,
        )
        return self.last_result
