"""The one token budget: past ``trigger_tokens`` a pass runs, and works down to ``target_tokens``.

The planner's budget mode, the offload, the adapters' context-window budget and the replay's host all
decide with this value, so "when does it fire" and "what may a target be" have one answer.
"""

from __future__ import annotations

import attrs

from tracetrim._validators import FieldValueError, int_in, is_count, is_number

TRIGGER_SHARE = 0.6
"""Of a context window, where a budget derived from it fires (`TokenBudget.of_window`)."""
TARGET_SHARE = 0.4
"""Of a context window, what a budget derived from it works down to."""


def default_target(trigger_tokens: int) -> int:
    """The target for a trigger given alone: two thirds of it, the ratio of the window's two shares."""
    return trigger_tokens * 2 // 3


def check_budget(
    trigger_tokens: int | None, target_tokens: int | None, *, owner: str | None = None, why: str = ""
) -> None:
    """Refuse a target at or above its trigger (a pass that only reaches the trigger fires again next
    turn), naming ``owner.target_tokens`` (``target_tokens`` without an owner); ``why`` replaces the
    default reason's tail."""
    if trigger_tokens is None or target_tokens is None or target_tokens < trigger_tokens:
        return
    reason = why or "compacting only to the trigger would fire again next turn"
    raise FieldValueError(
        f"({target_tokens}) must be below trigger_tokens ({trigger_tokens}): {reason}",
        owner=owner,
        field="target_tokens",
    )


def _check_target(instance: TokenBudget, _attribute: attrs.Attribute[int | None], value: int | None) -> None:
    check_budget(instance.trigger_tokens, value, owner=type(instance).__name__)


@attrs.frozen
class TokenBudget:
    """When a compaction pass runs and how far it goes, in tokens (system messages excluded, as the
    planner counts them).

    A pass runs once the history holds more than ``trigger_tokens``; with ``target_tokens`` it works
    down to at most that many and stops, so the next turns do not fire again until the history has
    grown back past the trigger. Without a target a pass applies its rules in full.
    """

    trigger_tokens: int = attrs.field(validator=int_in(0))
    target_tokens: int | None = attrs.field(
        default=None, validator=[attrs.validators.optional(int_in(0)), _check_target]
    )

    def fires(self, tokens: int) -> bool:
        """Whether a history of ``tokens`` tokens is over the trigger."""
        return tokens > self.trigger_tokens

    def met(self, tokens: int) -> bool:
        """Whether ``tokens`` is at or under the target (always, without one)."""
        return self.target_tokens is None or tokens <= self.target_tokens

    def below_trigger(self, tokens: int) -> str:
        """The detail of a pass that did not fire over ``tokens`` tokens of history."""
        return f"the history holds {tokens:,} tokens; trigger_tokens is {self.trigger_tokens:,}"

    def describe(self) -> str:
        """One line, e.g. ``over 12,000 tokens, down to 8,000``."""
        down = f", down to {self.target_tokens:,}" if self.target_tokens is not None else ""
        return f"over {self.trigger_tokens:,} tokens{down}"

    @classmethod
    def of_window(
        cls, context_window: int, *, trigger_share: float = TRIGGER_SHARE, target_share: float = TARGET_SHARE
    ) -> TokenBudget:
        """Fire past ``trigger_share`` of a model's ``context_window`` tokens, work down to
        ``target_share`` of it (by default 60% and 40%: the gap keeps the next turns from firing again
        at once, and what lies above the trigger leaves room for the system prompt, the tools and the
        reply)."""
        for name, value in (("trigger_share", trigger_share), ("target_share", target_share)):
            if not is_number(value) or not 0.0 < value <= 1.0:
                raise FieldValueError(
                    f"must be within (0, 1], got {value!r}", owner="TokenBudget", field=name
                )
        if not is_count(context_window) or context_window < 1:
            raise FieldValueError(
                f"must be a positive integer, got {context_window!r}",
                owner="TokenBudget",
                field="context_window",
            )
        if target_share >= trigger_share:
            raise FieldValueError(
                f"({target_share}) must be below trigger_share ({trigger_share})",
                owner="TokenBudget",
                field="target_share",
            )
        trigger = max(int(context_window * trigger_share), 1)
        return cls(trigger, min(int(context_window * target_share), trigger - 1))
