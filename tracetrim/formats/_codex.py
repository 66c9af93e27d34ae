"""Converters between neutral messages and Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``).

Shape, from codex-rs ``protocol`` (``RolloutLine`` = ``timestamp`` + ``RolloutItem``, serde-tagged
``type`` / ``payload``): ``session_meta``, ``response_item`` (a Responses API item: ``message``,
``reasoning``, ``function_call``, ``function_call_output``, ``custom_tool_call``, ``local_shell_call``
...), ``event_msg``, ``turn_context`` and ``compacted`` (``CompactedItem``: ``message`` and, in newer
versions, ``replacement_history``: on resume it replaces everything before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._common import (
    ValidatedHistory,
    attach_meta,
    copied,
    format_meta,
    history_uuid,
    neutral_input,
    read_from,
    require_dict,
    require_sequence,
)
from tracetrim.formats._openai_responses import from_openai_responses, text_part_type, to_openai_responses
from tracetrim.formats._order import order_of, reorder
from tracetrim.formats._shape import JsonLines

FORMAT = "codex"
LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
"""The ``type`` of the Codex rollout lines tracetrim knows (Codex adds others, e.g. ``world_state`` and
``token_usage_record`` in 0.17x: kept in place like every line that is not a ``response_item``)."""


_LINE_KEYS = frozenset({"timestamp", "type", "payload"})


def is_codex_line(line: Any) -> bool:
    """Whether ``line`` has a Codex rollout line's shape: a ``type`` and a ``payload`` (of any type, so a
    line kind a newer Codex writes still reads)."""
    return isinstance(line, dict) and isinstance(line.get("type"), str) and "payload" in line


def is_codex_rollout(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a Codex rollout: every line one (`is_codex_line`), one of a kind Codex has
    always written among them."""
    return all(map(is_codex_line, lines)) and any(line["type"] in LINE_TYPES for line in lines)


def _item_count(message: Message) -> int:
    return len(to_openai_responses(ValidatedHistory([message])))  # a message this module read or checked


def from_codex(lines: Sequence[Any]) -> list[Message]:
    """Convert the lines of a Codex rollout to neutral messages.

    The ``response_item`` lines after the last ``compacted`` line are the live context, read together
    by `from_openai_responses`; every other line (and all up to that ``compacted`` line) rides in
    carriers in place, never judged. Each message keeps its items' line timestamps.
    """
    require_sequence(lines, "a Codex rollout", "lines")
    for i, line in enumerate(lines):
        require_dict(line, "a rollout line", message=i)
        if line.get("type") == "response_item":
            require_dict(line.get("payload"), "a response_item payload", message=i, field="payload")
    start = max((i + 1 for i, line in enumerate(lines) if line.get("type") == "compacted"), default=0)
    live = [i for i in range(start, len(lines)) if lines[i].get("type") == "response_item"]
    neutral = from_openai_responses([lines[i]["payload"] for i in live])
    first: dict[int, Message] = {}
    covered: set[int] = set()
    at = 0
    for message in neutral:
        mine = live[at : at + _item_count(message)]
        at += len(mine)
        meta: dict[str, Any] = {
            "timestamps": [copied(lines[i].get("timestamp")) for i in mine],
            "order": [order_of(lines[i]["payload"]) for i in mine],
        }
        extra = [{k: v for k, v in lines[i].items() if k not in _LINE_KEYS} for i in mine]
        if any(extra):
            meta["extra"] = copied(extra)
        attach_meta(message, FORMAT, meta)
        if mine:
            first[mine[0]] = message
            covered.update(mine)
    if at != len(live):
        raise SnapshotError(f"{len(live)} response items read back as {at}; cannot keep their places")
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    for i, line in enumerate(lines):
        if i in covered:
            if i in first:
                run.add(first[i])
            continue
        run.hold(line)
    return run.messages()


def _items_of(live: list[Message]) -> list[list[dict[str, Any]]]:
    """Each live message's items: written together (so calls meet their outputs), split by count."""
    together = to_openai_responses(ValidatedHistory(live)) if live else []
    counts = [_item_count(message) for message in live]
    if sum(counts) != len(together):
        return [to_openai_responses(ValidatedHistory([message])) for message in live]
    out: list[list[dict[str, Any]]] = []
    at = 0
    for count in counts:
        out.append(together[at : at + count])
        at += count
    return out


def to_codex(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to Codex rollout lines (the inverse of `from_codex`): carried lines
    as they were, the others as ``response_item`` lines of `to_openai_responses`' items with their
    timestamps (an item without one takes the timestamp of the line before it)."""
    messages = neutral_input(messages)  # checked once: the messages' items are written from it
    values = [carried(m, FORMAT) for m in messages]
    live = [m for m, value in zip(messages, values, strict=True) if value is None]
    items = iter(_items_of(live))
    out: list[Any] = []
    if not read_from(messages, FORMAT):  # from elsewhere: Codex resumes no rollout that does not start so
        out.append(_session_meta(live))
    last: Any = out[0]["timestamp"] if out else None
    for message, value in zip(messages, values, strict=True):
        if value is not None:
            out.extend(value)
            last = next((line["timestamp"] for line in reversed(value) if "timestamp" in line), last)
            continue
        meta = format_meta(message, FORMAT)
        stamps = list(meta.get("timestamps") or [])
        extra = list(meta.get("extra") or [])
        orders = list(meta.get("order") or [])
        for n, item in enumerate(next(items)):
            if n < len(orders):
                item = reorder(item, orders[n])
            elif not meta:
                item = _with_parts(item)
            stamp = stamps[n] if n < len(stamps) else (stamps[-1] if stamps else last)
            line = {"timestamp": copied(stamp), "type": "response_item", "payload": item}
            line.update(copied(extra[n]) if n < len(extra) else {})
            out.append(line)
            last = stamp
    return JsonLines(out)


_EPOCH = "1970-01-01T00:00:00.000Z"
"""The time of a rollout written from a history that carries none (a neutral message has no time)."""


def _session_meta(live: Sequence[Message]) -> dict[str, Any]:
    """The ``session_meta`` line of a rollout written from a history read from another format: the
    fields codex-rs requires (``id``, ``timestamp``, ``cwd``, ``originator``, ``cli_version``), its id
    derived from the history, so writing it twice gives the same file."""
    payload = {"id": history_uuid(live), "timestamp": _EPOCH, "cwd": ".", "originator": "tracetrim"}
    payload["cli_version"] = "0"
    return {"timestamp": _EPOCH, "type": "session_meta", "payload": payload}


def _with_parts(item: dict[str, Any]) -> dict[str, Any]:
    """A message item whose content is a string, with that string as one text part: the Responses API
    takes either, but codex-rs reads only parts, and skips the line on resume otherwise."""
    if item.get("type") != "message" or not isinstance(item.get("content"), str):
        return item
    part = {"type": text_part_type(str(item.get("role", ""))), "text": item["content"]}
    return {**item, "content": [part]}
