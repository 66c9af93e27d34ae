"""Converters between neutral messages and OpenHands SDK event streams (a JSON list of events).

Shape, from the ``openhands-sdk`` package on PyPI (``openhands/sdk/event``: ``Event`` with ``kind``,
``id``, ``timestamp``, ``source``; ``ActionEvent`` with ``thought``, ``reasoning_content``,
``tool_name``, ``tool_call_id``, ``tool_call`` (``MessageToolCall``: ``id``, ``name``,
``arguments``, ``origin``), ``llm_response_id``; ``ObservationEvent`` with ``observation``
(``content`` parts, ``is_error``), ``action_id``; ``UserRejectObservation`` (``rejection_reason``),
``AgentErrorEvent`` (``error``); ``MessageEvent`` with ``llm_message``; ``SystemPromptEvent``;
``Condensation`` with ``forgotten_event_ids``, the SDK's own compaction). The SDK needs Python 3.12,
so it is the source, not an import, that these shapes follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, in_place

FORMAT = "openhands"
_RESULTS = {
    "ObservationEvent": "observation",
    "UserRejectObservation": "rejection_reason",
    "AgentErrorEvent": "error",
}
_STATES = {"ObservationEvent": "success", "UserRejectObservation": "denied", "AgentErrorEvent": "error"}
_SOURCES = frozenset({"agent", "user", "environment", "hook"})
_HELD = "\x00tracetrim.text"
"""Where an observation's text stood in the event kept in metadata: its block holds it, so a history
is not counted twice (a plan's reduction would be diluted)."""
_SHARED = ("reasoning_content", "thinking_blocks", "responses_reasoning_item")
"""What the SDK takes from a batch's first action for the whole assistant message."""


def is_openhands_event(event: Any) -> bool:
    """Whether ``event`` has an OpenHands SDK event's shape (``kind``, ``id``, ``source``)."""
    return (
        isinstance(event, dict)
        and isinstance(event.get("kind"), str)
        and "id" in event
        and common.tag(event.get("source")) in _SOURCES
    )


def _texts(parts: Any) -> list[str] | None:
    if not isinstance(parts, list):
        return None
    if all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts):
        return [p["text"] for p in parts]
    return None  # anything but text parts: the event is kept as it is, never judged


def _forgotten(events: Sequence[dict[str, Any]]) -> set[Any]:
    ids: set[Any] = set()
    for event in events:
        if event.get("kind") == "Condensation" and isinstance(event.get("forgotten_event_ids"), list):
            ids.update(i for i in event["forgotten_event_ids"] if isinstance(i, str))
    return ids


def _action(event: dict[str, Any], i: int) -> list[Block] | None:
    call = event.get("tool_call")
    if (
        not isinstance(call, dict)
        or not isinstance(event.get("tool_call_id"), str)
        or not event["tool_call_id"]
    ):
        return None
    arguments = call.get("arguments")
    name = event.get("tool_name")
    if not isinstance(arguments, str) or not isinstance(name, str):
        return None
    blocks: list[Block] = []
    if isinstance(event.get("reasoning_content"), str) and event["reasoning_content"]:
        blocks.append({"type": "thinking", "thinking": event["reasoning_content"]})
    blocks.extend({"type": "text", "text": t} for t in _texts(event.get("thought")) or [])
    blocks.append(
        {
            "type": "tool_call",
            "id": event["tool_call_id"],
            "name": name,
            "input": arguments,
            "state": "finished",
        }
    )
    return blocks


def _result(event: dict[str, Any], names: dict[str, str]) -> list[Block] | None:
    kind = event.get("kind")
    field = _RESULTS.get(kind) if isinstance(kind, str) else None
    call_id = common.tag(event.get("tool_call_id"))
    if field is None or call_id not in names:
        return None
    value = event.get(field)
    if field == "observation":
        texts = _texts(value.get("content")) if isinstance(value, dict) else None
        if texts is None or not isinstance(value, dict):
            return None
        text = "\n".join(texts)
        state = "error" if value.get("is_error") else "success"
    elif isinstance(value, str):
        text, state = value, _STATES[str(kind)]
    else:
        return None
    return [{"type": "tool_result", "id": call_id, "name": names[call_id], "output": text, "state": state}]


def from_openhands(events: Sequence[Any]) -> list[Message]:
    """Convert an OpenHands SDK event list to neutral messages.

    Each ``ActionEvent`` becomes an assistant message (reasoning, thought text, one tool_call), each
    ``ObservationEvent`` / ``UserRejectObservation`` / ``AgentErrorEvent`` answering it a tool_result
    message, each ``MessageEvent`` a text message of its role; the whole event is kept in
    ``metadata["tracetrim.openhands"]``. Everything else, and every event an SDK ``Condensation``
    forgot, rides in carriers in place (never judged).
    """
    common.require_sequence(events, "an OpenHands event stream", "events")
    for i, event in enumerate(events):
        common.require_dict(event, "an event", message=i)
    forgotten = _forgotten(events)
    names: dict[str, str] = {}
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    for i, event in enumerate(events):
        blocks: list[Block] | None = None
        role = "assistant"
        kind = event.get("kind")
        if common.tag(event.get("id")) not in forgotten:
            if kind == "ActionEvent":
                blocks = _action(event, i)
                if blocks is not None:
                    names[event["tool_call_id"]] = event["tool_name"]
            elif common.tag(kind) in _RESULTS:
                blocks = _result(event, names)
            elif kind == "MessageEvent" and isinstance(event.get("llm_message"), dict):
                llm = event["llm_message"]
                texts = _texts(llm.get("content"))
                if texts is not None and llm.get("role") in ("user", "assistant", "system"):
                    role = llm["role"]
                    blocks = [{"type": "text", "text": t} for t in texts]
        if not blocks:  # None, or a message with no text at all
            run.hold(event)
            continue
        if "id" not in event:
            raise SnapshotError("an OpenHands event must have an id", message=i, field="id")
        neutral = {"id": str(event["id"]), "role": role, "content": blocks}
        meta: dict[str, Any] = {"event": event}
        if blocks[0]["type"] == "tool_result":
            meta = _held(event)
        run.add(common.attach_meta(neutral, FORMAT, common.copied(meta)))
    return common.mark_pending(run.messages())


def _held(event: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a result's event: the event with its text held out (the block has it), and the
    lengths of an observation's text parts, to cut the text back into them."""
    field = _RESULTS[event["kind"]]
    if field != "observation":
        return {"event": {**event, field: _HELD}}
    value = event[field]
    parts = [{**p, "text": _HELD} for p in value["content"]]
    return {
        "event": {**event, field: {**value, "content": parts}},
        "lengths": [len(p["text"]) for p in value["content"]],
    }


def _cut(text: str, lengths: list[Any]) -> list[str] | None:
    """``text`` cut back into parts of ``lengths`` joined by newlines, or None where it does not fit."""
    pieces: list[str] = []
    at = 0
    for k, length in enumerate(lengths):
        if not isinstance(length, int) or length < 0:
            return None
        pieces.append(text[at : at + length])
        at += length
        if k < len(lengths) - 1:
            if text[at : at + 1] != "\n":
                return None
            at += 1
    return pieces if at == len(text) else None


def _with_result(event: dict[str, Any], block: Block, i: int, j: int, lengths: Any) -> dict[str, Any]:
    text = common.output_text(block, "OpenHands", i, j)
    field = _RESULTS[event["kind"]]
    if field != "observation":
        event[field] = text
        return event
    observation = event[field]
    parts = observation.get("content") or []
    if isinstance(lengths, list) and len(lengths) == len(parts):
        pieces = _cut(text, lengths)
        if pieces is not None:  # the text as it came, in its own parts
            observation["content"] = [{**p, "text": t} for p, t in zip(parts, pieces, strict=True)]
            return event
    elif "\n".join(_texts(parts) or []) == text:  # an event kept whole (a snapshot archived before)
        return event
    first = parts[0] if parts else {"type": "text"}
    observation["content"] = [{**first, "text": text}]
    return event


def _convert(message: Message, i: int) -> list[Any]:
    meta = common.format_meta(message, FORMAT)
    event = common.copied(meta.get("event"))
    calls = [b for b in message["content"] if b["type"] == "tool_call"]
    results = [(j, b) for j, b in enumerate(message["content"]) if b["type"] == "tool_result"]
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    if isinstance(event, dict) and event.get("kind") == "ActionEvent":
        return [event] if calls else [_Dropped(event, texts)]
    if isinstance(event, dict) and common.tag(event.get("kind")) in _RESULTS:
        return [_with_result(event, results[0][1], i, results[0][0], meta.get("lengths"))] if results else []
    if isinstance(event, dict) and event.get("kind") == "MessageEvent":
        original = _texts(event["llm_message"].get("content"))
        if original == texts:
            return [event]
        return [_message_event(event, message["role"], texts)]
    if calls or results:
        raise SnapshotError("a tool call or result with no OpenHands event to write it as", message=i)
    return [_message_event({"id": message.get("id", f"m{i}"), "source": "agent"}, message["role"], texts)]


def _message_event(event: dict[str, Any], role: str, texts: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "MessageEvent", "id": event.get("id")}
    if "timestamp" in event:
        out["timestamp"] = event["timestamp"]
    out["source"] = "user" if role == "user" else "agent"
    out["llm_message"] = {"role": role, "content": [{"type": "text", "text": t} for t in texts]}
    return out


@attrs.frozen
class _Dropped:
    """An ``ActionEvent`` whose call went, with the text that stays (its thought, a tombstone)."""

    event: dict[str, Any]
    texts: list[str]


def _event(member: Any) -> dict[str, Any]:
    return member.event if isinstance(member, _Dropped) else member


def _batches(events: Sequence[Any]) -> list[list[Any]]:
    """Runs of actions from one LLM response (the SDK sends each run as one assistant message)."""
    runs: list[list[Any]] = []
    previous: Any = None
    for event in events:
        action = _event(event)
        batch = action.get("llm_response_id") if action.get("kind") == "ActionEvent" else None
        if batch is not None and runs and batch == previous:
            runs[-1].append(event)
        else:
            runs.append([event])
        previous = batch
    return runs


def _parts(texts: list[str], like: Any) -> list[dict[str, Any]]:
    shape = like[0] if isinstance(like, list) and like and isinstance(like[0], dict) else {"type": "text"}
    return [{**shape, "text": t} for t in texts]


def _one_message(batch: list[Any]) -> list[Any]:
    """A batch written back as the SDK rebuilds it: the thought, reasoning and thinking the response
    shared ride on its first action, so what is left of a dropped action joins the first one kept.
    With none kept, the texts left are said as one agent message."""
    kept = [e for e in batch if not isinstance(e, _Dropped)]
    if len(kept) == len(batch):
        return batch
    texts: list[str] = []
    for member in batch:
        texts.extend(member.texts if isinstance(member, _Dropped) else _texts(member.get("thought")) or [])
    if not kept:
        return [_message_event(_event(batch[0]), "assistant", texts)] if texts else []
    first = common.copied(kept[0])
    like = [_event(m).get("thought") for m in batch if _event(m).get("thought")]
    first["thought"] = _parts(texts, like[0] if like else None)
    for field in _SHARED:
        shared = [m.event[field] for m in batch if isinstance(m, _Dropped) and m.event.get(field)]
        if shared and not first.get(field):
            first[field] = shared[0]
    rest = [{**e, "thought": []} if e.get("thought") else e for e in kept[1:]]
    return [first, *rest]


def to_openhands(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to OpenHands SDK events (the inverse of `from_openhands`).

    Unchanged events come back as they were; a shortened result replaces its observation's text. An
    action whose call was dropped leaves what it said (its thought, a tombstone) and its reasoning to
    the first action kept from the same LLM response, or, with none kept, to a ``MessageEvent`` from the
    agent: no event holds a call without its observation and no text splits a batch from its results.
    """
    out = in_place(common.neutral_input(messages), FORMAT, _convert)
    return [event for batch in _batches(out) for event in _one_message(batch)]
