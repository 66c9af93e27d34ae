"""What happened after a plan: the agent recalled a call's result, or later used it (audit evidence)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._scope import Scope
from tracetrim._validators import FieldTypeError, FieldValueError, non_empty_string

EVENTS = ("recalled", "used")
"""``recalled``: the agent fetched the call's archived result; ``used``: it used the result later on."""

FOLLOWUP_VERSION = 1
"""The layout of a follow-up line (``record_version`` in its JSON)."""


def now_iso() -> str:
    """The current UTC time as ISO 8601 to the microsecond (the ``at`` of records and follow-ups).

    The audit orders follow-ups after plans by comparing these strings, so they keep one format.
    """
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _event(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in EVENTS:
        raise FieldValueError(f"Followup.event must be one of {', '.join(EVENTS)}, got {value!r}")


@attrs.frozen(kw_only=True)
class Followup:
    """One thing the agent did with an earlier call's result after a plan: ``recalled`` or ``used`` it.

    The audit matches it to plan records by ``call_id`` (and ``scope`` where both carry one): a pair a
    plan would have dropped or shortened and that the agent then needed counts as a loss.
    """

    event: str = attrs.field(validator=_event)
    call_id: str = attrs.field(validator=non_empty_string)
    scope: dict[str, str] | None = None
    archive_ref: str = ""
    at: str = attrs.field(factory=now_iso)
    record_version: int = FOLLOWUP_VERSION

    @classmethod
    def recalled(cls, call_id: str, scope: Scope | None = None, archive_ref: str = "") -> Followup:
        """The agent fetched ``call_id``'s archived result (the recall tool reports this itself)."""
        return cls(event="recalled", call_id=call_id, scope=_scope(scope), archive_ref=archive_ref)

    @classmethod
    def used(cls, call_id: str, scope: Scope | None = None) -> Followup:
        """The agent later used ``call_id``'s result (an adapter hook or `quoted_calls` says so)."""
        return cls(event="used", call_id=call_id, scope=_scope(scope))


def _scope(scope: Scope | None) -> dict[str, str] | None:
    if scope is not None and not isinstance(scope, Scope):
        raise FieldTypeError(f"scope must be a tracetrim.Scope or None, got {type(scope).__name__}")
    return scope.as_dict() if scope is not None else None


Reporter = Callable[[Followup], object]
"""Takes a `Followup`: `tracetrim.JsonLinesObserver.report`, or a host's own sink."""


def quoted_calls(messages: Sequence[Mapping[str, Any]], since: int) -> list[str]:
    """Call ids whose results (before message ``since``) the agent quoted or reused from ``since`` on.

    The later pass of the audit: run it on the history as it grew after a plan made at ``since``
    messages, and report each id as `Followup.used`. The same rule finds what the learned judge is trained
    and scored on: identifiers, values and whole lines first seen in that result (`tracetrim.learn`;
    training also credits the latest copy of each, `tracetrim.learn.credited`).
    """
    if not 0 <= since <= len(messages):
        raise FieldValueError(
            f"since must be between 0 and {len(messages)} (the history's length), got {since}"
        )
    from tracetrim.learn._labels import evidence

    return sorted(evidence(messages, since))
