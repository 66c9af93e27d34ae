"""The adapters' budget: ``trigger_tokens`` / ``target_tokens``, by default shares of the context window.

A host thinks in its model's context window W: compact once the history passes 60% of it, down to 40%
(`TokenBudget.of_window`). Acting at 60% lets tracetrim run before a framework's own summarising step
(AgentScope's fires at 80% of the window by default). Each adapter asks its framework for W
(`context_window_of` checks it); where the framework does not know it, no budget is set and the
adapter plans as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Literal, TypeAlias, TypedDict

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._token_budget import TokenBudget, check_budget, default_target
from tracetrim._validators import FieldTypeError, FieldValueError, is_count
from tracetrim.harness_adapter._read_only import check_widenable, with_eligible
from tracetrim.harness_adapter._run import AdapterResult, CompactingAdapter, compact_history
from tracetrim.harness_adapter._strategy import CompactionStrategy

AUTO: Literal["auto"] = "auto"
"""The default of ``trigger_tokens`` and ``target_tokens``: derived from the context window when known."""

TokenSetting: TypeAlias = int | Literal["auto"] | None
"""A number of tokens, ``"auto"`` (a share of the context window) or None (not set)."""


class WindowOptions(TypedDict, total=False):
    """The keyword arguments every adapter takes besides its own (see `WindowedAdapter`); an adapter
    declares them as ``**options: Unpack[WindowOptions]`` and hands them on unchanged."""

    scope: Scope | None
    goal: str
    next_action: str
    trigger_tokens: TokenSetting
    target_tokens: TokenSetting
    context_window: int | None
    eligible_read_only: bool


@attrs.frozen
class Budget:
    """The trigger and target one compaction attempt ran with (None: not set), and the context window
    they were derived from (None: unknown or not used)."""

    trigger_tokens: int | None = None
    target_tokens: int | None = None
    context_window: int | None = None


def context_window_of(value: object) -> int | None:
    """``value`` when it is a usable context window (a positive integer, not a bool), else None."""
    if is_count(value) and value > 0:
        return value
    return None


def _check_setting(name: str, value: object, low: int) -> None:
    if value is None or value == AUTO:
        return
    if not is_count(value):
        raise FieldTypeError(f"{name} must be a number of tokens, 'auto' or None, got {value!r}")
    if value < low:
        raise FieldValueError(f"{name} must be at least {low}, got {value}")


def check_settings(trigger_tokens: object, target_tokens: object, context_window: object) -> None:
    """Refuse settings no history could satisfy, naming the argument at fault."""
    _check_setting("trigger_tokens", trigger_tokens, 1)
    _check_setting("target_tokens", target_tokens, 0)
    if context_window is not None and context_window_of(context_window) is None:
        raise FieldValueError(
            f"context_window must be a positive number of tokens or None, got {context_window!r}"
        )
    if isinstance(target_tokens, int) and not isinstance(trigger_tokens, int):
        raise FieldValueError(
            f"target_tokens={target_tokens} needs trigger_tokens set to a number too: a target is what a "
            "pass compacts down to once the history is over the trigger"
        )
    if isinstance(target_tokens, int) and isinstance(trigger_tokens, int):
        check_budget(trigger_tokens, target_tokens)


def resolve_budget(
    trigger_tokens: TokenSetting, target_tokens: TokenSetting, context_window: int | None, *, derive: bool
) -> Budget:
    """The budget in force: explicit numbers as given; ``"auto"`` as a share of ``context_window``
    when it is known and ``derive`` allows it, else not set.

    An ``"auto"`` target needs a trigger; under an explicit trigger below the derived target it is two
    thirds of the trigger (the ratio of the two shares), so that it stays below.
    """
    window = context_window if derive else None
    derived = TokenBudget.of_window(window) if window else None
    trigger = trigger_tokens
    if trigger == AUTO:
        trigger = derived.trigger_tokens if derived is not None else None
    target = target_tokens
    if target == AUTO:
        target = None
        if derived is not None and trigger is not None:
            target = derived.target_tokens
            if target is not None and target >= trigger:
                target = default_target(trigger)
    assert not isinstance(trigger, str) and not isinstance(target, str)
    return Budget(trigger, target, window)


def keeps_own_budget(strategy: CompactionStrategy) -> bool:
    """Whether ``strategy`` brings its own trigger and target, which the adapter leaves alone (its
    ``own_budget``: a `Compactor` whose config has a budget, an `OffloadStrategy`); a host's strategy
    without one takes the adapter's trigger."""
    return bool(getattr(strategy, "own_budget", False))


def budgeted(strategy: CompactionStrategy, budget: Budget) -> CompactionStrategy:
    """``strategy`` planning to ``budget`` (its ``with_budget``: for a `Compactor` without a budget of
    its own, a copy whose config carries it), or ``strategy`` itself when it takes no budget."""
    with_budget = getattr(strategy, "with_budget", None)
    if with_budget is None or budget.trigger_tokens is None or budget.target_tokens is None:
        return strategy
    twin: CompactionStrategy = with_budget(budget.trigger_tokens, budget.target_tokens)
    return twin


class WindowedAdapter(CompactingAdapter):
    """A `CompactingAdapter` whose ``trigger_tokens`` and ``target_tokens`` default to 60% and 40% of the
    model's context window.

    ``trigger_tokens``: below it the strategy is not asked at all. ``target_tokens``: what a `Compactor`
    without a budget of its own compacts down to (it plans with a copy of its config carrying the
    trigger and the target; see `CompactorConfig`). Each takes a number, ``"auto"`` (the default: a
    share of ``context_window``, else of the window the framework reports for the model, else not set)
    or None (not set: plan on every call, with the strategy's own rules). An explicit number always
    wins over a derived one; a `Compactor` whose config sets its own budget, and an `OffloadStrategy`,
    keep their config, and ``"auto"`` derives nothing for them. ``budget`` is what the latest attempt
    ran with.

    ``eligible_read_only`` (off by default): each attempt also opts in the tools the framework declares
    read-only (`read_only_tools`: MCP ``readOnlyHint``, the framework's own flags), on top of the
    strategy's ``eligible_tools``; ``read_only`` is what the latest attempt added.
    """

    def __init__(
        self,
        strategy: CompactionStrategy,
        *,
        scope: Scope | None = None,
        goal: str = "",
        next_action: str = "",
        trigger_tokens: TokenSetting = AUTO,
        target_tokens: TokenSetting = AUTO,
        context_window: int | None = None,
        eligible_read_only: bool = False,
    ) -> None:
        check_settings(trigger_tokens, target_tokens, context_window)
        if not isinstance(eligible_read_only, bool):
            raise FieldTypeError(f"eligible_read_only must be True or False, got {eligible_read_only!r}")
        if eligible_read_only:
            check_widenable(strategy)
        super().__init__(
            strategy,
            scope=scope,
            goal=goal,
            next_action=next_action,
            trigger_tokens=trigger_tokens if isinstance(trigger_tokens, int) else None,
        )
        self.auto_trigger = trigger_tokens == AUTO
        self.target_tokens: TokenSetting = target_tokens
        self.context_window = context_window
        self.budget = Budget()
        self.eligible_read_only = eligible_read_only
        self.read_only: frozenset[str] = frozenset()

    def budget_for(self, reported_window: object = None) -> Budget:
        """The budget for a model whose framework reports ``reported_window`` (None: unknown)."""
        trigger: TokenSetting = self.trigger_tokens
        if trigger is None and self.auto_trigger:
            trigger = AUTO
        window = self.context_window or context_window_of(reported_window)
        return resolve_budget(trigger, self.target_tokens, window, derive=not keeps_own_budget(self.strategy))

    async def compact_neutral(
        self,
        messages: Sequence[Message],
        *,
        scope: Scope,
        protected_message_ids: Iterable[str] = (),
        protected_call_ids: Iterable[str] = (),
        context_window: object = None,
        private: bool = False,
        read_only: Collection[str] = (),
        join_turns: bool = True,
    ) -> AdapterResult:
        """`compact_history` with this adapter's settings and the budget for ``context_window`` (what
        the framework reports for the model; ``private``: ``messages`` is the adapter's own conversion;
        ``read_only``: the tools the framework declares read-only, opted in under ``eligible_read_only``;
        ``join_turns``: see `compact_history`); the result is kept in ``last_result``."""
        self.budget = self.budget_for(context_window)
        strategy = budgeted(self.strategy, self.budget)
        self.read_only = frozenset(read_only) if self.eligible_read_only else frozenset()
        self.last_result = await compact_history(
            with_eligible(strategy, self.read_only),
            messages,
            scope=scope,
            goal=self.goal,
            next_action=self.next_action,
            protected_message_ids=protected_message_ids,
            protected_call_ids=protected_call_ids,
            trigger_tokens=self.budget.trigger_tokens,
            private=private,
            join_turns=join_turns,
        )
        return self.last_result
