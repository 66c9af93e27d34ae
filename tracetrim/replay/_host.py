"""The host's rule for when compaction fires: a token budget, a context window's shares, or every K steps."""

from __future__ import annotations

import attrs

from tracetrim._token_budget import TARGET_SHARE, TRIGGER_SHARE, TokenBudget, check_budget, default_target
from tracetrim._validators import FieldValueError, int_in


@attrs.frozen(kw_only=True)
class HostRule:
    """When the host asks its compaction strategy to run, and what size it asks for.

    ``trigger_tokens`` with ``target_tokens``: fire when the history (system messages excluded, the
    planner's count) is over the trigger, compact to the target. ``every_steps``: fire before every
    K-th model call as well. At least one of the two is set. `window` builds the first from a context
    window the way the adapters do (60% / 40%).
    """

    trigger_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(1)))
    target_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(0)))
    every_steps: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(1)))

    def __attrs_post_init__(self) -> None:
        if self.trigger_tokens is None and self.every_steps is None:
            raise FieldValueError(
                "needs trigger_tokens (with target_tokens), a context window, or every_steps",
                owner="HostRule",
            )
        if self.trigger_tokens is not None and self.target_tokens is None:
            raise FieldValueError("is needed with trigger_tokens", owner="HostRule", field="target_tokens")
        check_budget(
            self.trigger_tokens, self.target_tokens, owner="HostRule", why="or it fires again at once"
        )

    @classmethod
    def window(
        cls,
        context_window: int,
        *,
        trigger_share: float = TRIGGER_SHARE,
        target_share: float = TARGET_SHARE,
        every_steps: int | None = None,
    ) -> HostRule:
        """Fire past ``trigger_share`` of ``context_window`` tokens, compact to ``target_share`` of it."""
        budget = TokenBudget.of_window(context_window, trigger_share=trigger_share, target_share=target_share)
        return cls(
            trigger_tokens=budget.trigger_tokens, target_tokens=budget.target_tokens, every_steps=every_steps
        )

    @property
    def budget(self) -> TokenBudget | None:
        """The token budget (None: only ``every_steps`` fires)."""
        if self.trigger_tokens is None:
            return None
        return TokenBudget(self.trigger_tokens, self.target_tokens)

    def fires(self, tokens: int, step: int) -> bool:
        """Whether compaction runs before model call number ``step`` (from 0) over ``tokens`` of history."""
        budget = self.budget
        over = budget is not None and budget.fires(tokens)
        due = self.every_steps is not None and step > 0 and step % self.every_steps == 0
        return over or due

    def target_for(self, tokens: int) -> int:
        """The size a budgeted strategy compacts ``tokens`` of history down to when this rule fires."""
        if self.target_tokens is not None:
            return self.target_tokens
        return default_target(tokens)  # as if the history it is handed were at the trigger

    def describe(self) -> str:
        """One line: what fires and to what size, e.g. ``over 12,000 tokens, down to 8,000``."""
        budget = self.budget
        parts = [budget.describe()] if budget is not None else []
        if self.every_steps is not None:
            target = "" if self.target_tokens is not None else " (budgets: down to 2/3 of the history)"
            parts.append(f"every {self.every_steps} steps{target}")
        return "; ".join(parts)
