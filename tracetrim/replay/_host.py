"""The host's rule for when compaction fires: a token budget, a context window's shares, or every K steps."""

from __future__ import annotations

import attrs

from tracetrim._validators import FieldValueError, int_in, is_count, is_number

TRIGGER_SHARE = 0.6
"""Of a context window, where the adapters' ``"auto"`` budget fires (README, "A budget from the model's
context window")."""
TARGET_SHARE = 0.4
"""Of a context window, what the adapters' ``"auto"`` budget compacts down to."""
EVERY_STEPS_TARGET = 2 / 3
"""With ``every_steps`` and no ``target_tokens``, a budgeted strategy compacts to this share of the
history it is handed (as `benchmarks/quality.py`'s budget row: 60% of a window down to 40%)."""


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
        if (
            self.trigger_tokens is not None
            and self.target_tokens is not None
            and self.target_tokens >= self.trigger_tokens
        ):
            raise FieldValueError(
                f"({self.target_tokens}) must be below trigger_tokens ({self.trigger_tokens})",
                owner="HostRule",
                field="target_tokens",
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
        for name, value in (("trigger_share", trigger_share), ("target_share", target_share)):
            if not is_number(value) or not 0.0 < value <= 1.0:
                raise FieldValueError(f"must be within (0, 1], got {value!r}", owner="HostRule", field=name)
        if not is_count(context_window) or context_window < 2:
            raise FieldValueError(
                f"must be an integer of at least 2, got {context_window!r}",
                owner="HostRule",
                field="context_window",
            )
        if target_share >= trigger_share:
            raise FieldValueError(
                f"({target_share}) must be below trigger_share ({trigger_share})",
                owner="HostRule",
                field="target_share",
            )
        return cls(
            trigger_tokens=max(int(context_window * trigger_share), 1),
            target_tokens=int(context_window * target_share),
            every_steps=every_steps,
        )

    def fires(self, tokens: int, step: int) -> bool:
        """Whether compaction runs before model call number ``step`` (from 0) over ``tokens`` of history."""
        over = self.trigger_tokens is not None and tokens > self.trigger_tokens
        due = self.every_steps is not None and step > 0 and step % self.every_steps == 0
        return over or due

    def target_for(self, tokens: int) -> int:
        """The size a budgeted strategy compacts ``tokens`` of history down to when this rule fires."""
        if self.target_tokens is not None:
            return self.target_tokens
        return int(tokens * EVERY_STEPS_TARGET)

    def describe(self) -> str:
        """One line: what fires and to what size, e.g. ``over 12,000 tokens, down to 8,000``."""
        parts = []
        if self.trigger_tokens is not None:
            parts.append(f"over {self.trigger_tokens:,} tokens, down to {self.target_tokens:,}")
        if self.every_steps is not None:
            target = "" if self.target_tokens is not None else " (budgets: down to 2/3 of the history)"
            parts.append(f"every {self.every_steps} steps{target}")
        return "; ".join(parts)
