"""`CompactionRequest`: one history plus what the host knows about where the agent is going."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._scope import Scope
from tracetrim._validators import FieldTypeError, int_in
from tracetrim.archive._sent import SentDocument


def _ids(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise FieldTypeError("expected a collection of ids, got a single string")
    ids = tuple(value)
    for item in ids:
        if not isinstance(item, str):
            raise FieldTypeError(f"ids must be strings, got {item!r}")
    return ids


@attrs.frozen
class CompactionRequest:
    """A history to compact. ``messages`` is read, never mutated; empty ``goal``/``next_action`` are
    derived from the first and the last user text."""

    messages: Sequence[Any] = attrs.field()
    goal: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    next_action: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    scope: Scope | None = attrs.field(
        default=None,
        kw_only=True,
        validator=attrs.validators.optional(attrs.validators.instance_of(Scope)),
    )
    protected_message_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids, kw_only=True)
    protected_call_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids, kw_only=True)
    sent: SentDocument | None = attrs.field(
        default=None,
        kw_only=True,
        repr=False,
        validator=attrs.validators.optional(attrs.validators.instance_of(SentDocument)),
    )
    """The document as the user sent it (the file's or request body's exact bytes and its format): an
    ENFORCE plan archives it beside the neutral history, so a restore gives back exactly those bytes."""
    token_budget: int | None = attrs.field(
        default=None,
        kw_only=True,
        validator=attrs.validators.optional(int_in(1)),
    )
    """The host's context budget in tokens, when it has one (adapters use it to decide when to plan)."""
