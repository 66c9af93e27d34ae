"""Carrier messages: what a file holds besides its live messages, kept in place inside the neutral history.

A carrier is a neutral ``system`` message with no content blocks: the planner counts no tokens for it,
asks nothing about it and never drops it, so what it carries (a Claude Code summary entry, a Codex
``event_msg`` line, the part of a session before its own compaction, a request body's ``model`` and
``tools``) comes back from the writer exactly where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message
from tracetrim.formats._common import content_id, format_meta, meta_key
from tracetrim.formats._common import copied as private_copy

_CARRIED = "carried"


def carrier(fmt: str, values: Any, seen: dict[str, int]) -> Message:
    """A carrier of ``values`` (copied) for format ``fmt``, its id derived from what it carries."""
    return {
        "id": content_id("carry-", values, seen),
        "role": "system",
        "content": [],
        "metadata": {meta_key(fmt): {_CARRIED: private_copy(values)}},
    }


class CarrierRun:
    """A reader's output in the making: the values it holds between live messages go out as one
    carrier just before the next message (and at the end), so each keeps its place."""

    def __init__(self, fmt: str, seen: dict[str, int]) -> None:
        self._fmt = fmt
        self._seen = seen
        self._out: list[Message] = []
        self._held: list[Any] = []

    def hold(self, value: Any) -> None:
        """Carry ``value`` (a line, an entry, an event the neutral form has no message for)."""
        self._held.append(value)

    def add(self, message: Message) -> None:
        """Append a live message, after a carrier of what is held."""
        self._flush()
        self._out.append(message)

    def messages(self) -> list[Message]:
        """Everything added and held, in order."""
        self._flush()
        return self._out

    def _flush(self) -> None:
        if self._held:
            self._out.append(carrier(self._fmt, self._held, self._seen))
            self._held = []


def interleaved(fmt: str, items: Sequence[Any], live: Mapping[int, Message]) -> list[Message]:
    """A reader's output: each message of ``live`` (by where its item stands in ``items``) in its
    place, the other items of ``items`` carried between them."""
    run = CarrierRun(fmt, {})
    for i, item in enumerate(items):
        if i in live:
            run.add(live[i])
        else:
            run.hold(item)
    return run.messages()


def carried(message: Message, fmt: str, *, copied: bool = True) -> Any | None:
    """What ``message`` carries when it is a carrier of ``fmt`` (a copy; with ``copied`` false, the
    values themselves, to read and never change), else None."""
    if message.get("role") != "system" or message.get("content"):
        return None
    meta = format_meta(message, fmt)
    if _CARRIED not in meta:
        return None
    return private_copy(meta[_CARRIED]) if copied else meta[_CARRIED]


def in_place(
    messages: Sequence[Message], fmt: str, convert: Callable[[Message, int], list[Any]]
) -> list[Any]:
    """What a writer of ``fmt`` writes for ``messages``, in order: each carrier's values where it stood,
    each other message as ``convert(message, index)`` gives it."""
    out: list[Any] = []
    for i, message in enumerate(messages):
        value = carried(message, fmt) if isinstance(message, dict) else None
        out.extend(value if value is not None else convert(message, i))
    return out


def split_carriers(messages: Sequence[Message], fmt: str) -> tuple[list[Any], list[Message]]:
    """What the carriers of ``fmt`` in ``messages`` carry, and the other messages, each in order."""
    values: list[Any] = []
    rest: list[Message] = []
    for message in messages:
        value = carried(message, fmt)
        if value is None:
            rest.append(message)
        else:
            values.append(value)
    return values, rest


BODY_KEY = "\x00tracetrim.list"
"""Where a carried document's message list stood (a placeholder value no JSON file holds)."""


def document_fields(fields: Mapping[str, Any], key: str, after: Sequence[str] = ()) -> dict[str, Any]:
    """A file's other fields with a placeholder at ``key``, the message list's place: where ``fields``
    hold ``key`` (the whole document was passed), there; else after the last of ``after`` it has,
    else last."""
    if key in fields:
        return {k: (BODY_KEY if k == key else private_copy(v)) for k, v in fields.items()}
    out: dict[str, Any] = {}
    present = [k for k in after if k in fields]
    anchor = present[-1] if present else None
    for k, v in fields.items():
        out[k] = private_copy(v)
        if k == anchor:
            out[key] = BODY_KEY
    out.setdefault(key, BODY_KEY)
    return out


def fill_document(
    document: Mapping[str, Any], items: Any, written: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A carried ``document`` with ``items`` under ``messages`` at the placeholder (the writers' one
    contract; `HistoryFormat.write_document` renames it to the file's own key) and the writer's other
    fields (Anthropic's ``system``) in their places; written keys the document lacks go last."""
    written = written or {}
    out: dict[str, Any] = {}
    for k, v in document.items():
        if v == BODY_KEY:
            out["messages"] = items
        else:
            out[k] = private_copy(written[k]) if k in written else v
    for k, v in written.items():
        out.setdefault(k, private_copy(v))
    return out
