"""Converters between neutral messages and OpenHands V0 event histories (``openhands-ai`` before 1.0).

Shape, from ``openhands-ai`` 0.62 on PyPI (``openhands/events/serialization/event.py``): each event has
``id``, ``timestamp``, ``source`` and either ``action`` (with ``args``) or ``observation`` (with
``content``, ``extras``, ``cause``); a tool's action and its observation carry ``tool_call_metadata``
(``function_name``, ``tool_call_id``, the LLM's whole ``model_response``). A trajectory file
(``save_trajectory_path``) is the list of events; an evaluation's ``output.jsonl`` line holds it under
``history``. What V0 sends is rebuilt by its ``ConversationMemory``: each tool action stands for the
assistant message of its ``model_response`` (its ``content`` and every ``tool_calls`` entry), sent only
once every call that message lists is observed; so a call that goes must also leave the
``model_response`` of the calls it was sent with, or they are never sent. ``condensation`` actions are
V0's own compaction: what they forgot is kept in place, not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, in_place

FORMAT = "openhands-v0"
_SOURCES = frozenset({"agent", "user", "environment"})
_TEXT_ACTIONS = frozenset({"message", "system"})
_NOT_CALLS = frozenset({"finish", "message", "system", "recall", "condensation", "condensation_request"})
"""Actions ConversationMemory never sends as a tool call, even with ``tool_call_metadata``."""
_STATES = {"error": "error", "user_rejected": "denied"}
_HELD = "\x00tracetrim.content"
"""Where a kept event's text stood: the neutral block holds it, so the history is not counted twice."""


def is_openhands_v0_event(event: Any) -> bool:
    """Whether ``event`` has an OpenHands V0 event's shape: ``action`` or ``observation`` (one of
    them, a string) beside a ``source`` or an ``id``; never a chat message or an SDK event."""
    if not isinstance(event, dict) or "role" in event or "kind" in event:
        return False
    action, observation = event.get("action"), event.get("observation")
    if (action is None) == (observation is None) or not isinstance(action or observation, str):
        return False
    return common.tag(event.get("source")) in _SOURCES or isinstance(event.get("id"), int)


def _response(event: dict[str, Any]) -> dict[str, Any] | None:
    """The ``model_response`` an action was parsed from, when it is there."""
    metadata = event.get("tool_call_metadata")
    response = metadata.get("model_response") if isinstance(metadata, dict) else None
    return response if isinstance(response, dict) else None


def _response_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message of an action's ``model_response`` (its one choice), when it has one."""
    response = _response(event)
    choices = response.get("choices") if response is not None else None
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _response_id(event: dict[str, Any]) -> Any:
    response = _response(event)
    return common.tag(response.get("id")) if response is not None else None


def _sent_call(event: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The ``tool_calls`` entry of the action's response that is this action's call."""
    message = _response_message(event)
    calls = message.get("tool_calls") if message is not None else None
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) and call.get("id") == call_id and isinstance(call.get("function"), dict):
            return call
    return None


def _call(event: dict[str, Any]) -> Block | None:
    """An action's tool call, as sent (its response's arguments) or, where the trajectory kept no
    response, as its ``args`` say."""
    metadata = event.get("tool_call_metadata")
    if common.tag(event.get("action")) in _NOT_CALLS or not isinstance(metadata, dict):
        return None
    call_id, name = metadata.get("tool_call_id"), metadata.get("function_name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        return None
    sent = _sent_call(event, call_id)
    if sent is not None:
        arguments = sent["function"].get("arguments")
        name = sent["function"].get("name", name)
    elif _response_message(event) is None and isinstance(event.get("args"), dict):
        arguments = common.dump_input(event["args"])
    else:
        return None  # a response that does not list this call: V0 never sends it
    if not isinstance(arguments, str) or not isinstance(name, str):
        return None
    return {"type": "tool_call", "id": call_id, "name": name, "input": arguments, "state": "finished"}


def _said(event: dict[str, Any]) -> str:
    """What the assistant said with a response's calls (its message's ``content``)."""
    message = _response_message(event)
    content = message.get("content") if message is not None else None
    return content if isinstance(content, str) and content.strip() else ""


def _result(event: dict[str, Any], names: dict[str, str]) -> Block | None:
    metadata = event.get("tool_call_metadata")
    call_id = metadata.get("tool_call_id") if isinstance(metadata, dict) else None
    content = event.get("content")
    if not isinstance(call_id, str) or call_id not in names or not isinstance(content, str):
        return None
    state = _STATES.get(str(event.get("observation")), "success")
    return {
        "type": "tool_result",
        "id": call_id,
        "name": names.pop(call_id),
        "output": content,
        "state": state,
    }


def _text(event: dict[str, Any]) -> tuple[str, str] | None:
    """A message or system action's role and text."""
    args = event.get("args")
    content = args.get("content") if isinstance(args, dict) else None
    if common.tag(event.get("action")) not in _TEXT_ACTIONS or not isinstance(content, str):
        return None
    if event["action"] == "system":
        return "system", content
    return ("user" if event.get("source") == "user" else "assistant"), content


def _forgotten(events: Sequence[dict[str, Any]]) -> set[Any]:
    """The ids every ``condensation`` action forgot (a list of ids, or a first and last id)."""
    ids: set[Any] = set()
    for event in events:
        args = event.get("args")
        if event.get("action") != "condensation" or not isinstance(args, dict):
            continue
        if isinstance(args.get("forgotten_event_ids"), list):
            ids.update(i for i in args["forgotten_event_ids"] if isinstance(i, int))
        start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
        if isinstance(start, int) and isinstance(end, int) and end - start < 10_000_000:
            ids.update(range(start, end + 1))
    return ids


def from_openhands_v0(events: Sequence[Any]) -> list[Message]:
    """Convert an OpenHands V0 event history to neutral messages.

    Each tool action becomes an assistant message (the first of its response also holding what the
    assistant said), each observation answering it a tool_result message (``error`` read as an error,
    ``user_rejected`` as denied), each ``message`` / ``system`` action a text message of its role; the
    whole event is kept in ``metadata["tracetrim.openhands-v0"]``. Everything else (recalls, state
    changes, ``finish``), and every event a ``condensation`` forgot, rides in carriers in place.
    """
    common.require_sequence(events, "an OpenHands V0 event history", "events")
    for i, event in enumerate(events):
        common.require_dict(event, "an event", message=i)
    forgotten = _forgotten(events)
    live = [not (isinstance(e.get("id"), int) and e["id"] in forgotten) for e in events]
    calls = [_call(e) if "action" in e and alive else None for e, alive in zip(events, live, strict=True)]
    batches: dict[Any, list[str]] = {}
    for event, call in zip(events, calls, strict=True):
        if call is not None:
            batches.setdefault(_response_id(event) or call["id"], []).append(call["id"])
    names: dict[str, str] = {}
    said: set[Any] = set()
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    for event, alive, call in zip(events, live, calls, strict=True):
        blocks: list[Block] | None = None
        role = "assistant"
        meta: dict[str, Any] = {}
        kept = event
        if alive:
            if call is not None:
                names[call["id"]] = call["name"]
                blocks = [call]
                batch = _response_id(event) or call["id"]
                meta["batch"] = batches[batch]
                if batch not in said:
                    said.add(batch)
                    if text := _said(event):
                        blocks.insert(0, {"type": "text", "text": text})
            elif "action" in event:
                said_text = _text(event)
                if said_text is not None:
                    role, body = said_text
                    blocks = [{"type": "text", "text": body}]
                    kept = {**event, "args": {**event["args"], "content": _HELD}}
            else:
                result = _result(event, names)
                blocks = [result] if result is not None else None
                kept = {**event, "content": _HELD}
        if blocks is None:
            run.hold(event)
            continue
        own = event.get("id")
        ident = str(own) if isinstance(own, (int, str)) and str(own) not in seen else None
        if ident is None:
            ident = common.content_id("ohv0-", event, seen)
        seen.setdefault(ident, 1)
        neutral = {"id": ident, "role": role, "content": blocks}
        run.add(common.attach_meta(neutral, FORMAT, {"event": common.copied(kept), **meta}))
    return common.mark_pending(run.messages())


@attrs.frozen
class _Action:
    """A tool action written back: its event, the texts its message holds, its call's id while the call
    stays (None once it went), and the calls of its response the history held (`batch`)."""

    event: dict[str, Any]
    texts: list[str]
    call: str | None
    batch: tuple[str, ...]


def _convert(message: Message, i: int) -> list[Any]:
    meta = common.format_meta(message, FORMAT)
    event = common.copied(meta.get("event"))
    calls = [b for b in message["content"] if b["type"] == "tool_call"]
    results = [(j, b) for j, b in enumerate(message["content"]) if b["type"] == "tool_result"]
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    batch = meta.get("batch")
    if isinstance(event, dict) and "action" in event and isinstance(batch, list):  # read as a call
        ids = tuple(i for i in batch if isinstance(i, str))
        return [_Action(event, texts, calls[0]["id"] if calls else None, ids)]
    if isinstance(event, dict) and "observation" in event:
        if not results:
            return []
        j, block = results[0]
        event["content"] = common.output_text(block, "OpenHands", i, j)
        return [event]
    if isinstance(event, dict) and _text(event) is not None:
        if len(texts) == 1:
            event["args"]["content"] = texts[0]
            return [event]
        return [_message_event(event, message["role"], "\n".join(texts))]
    if calls or results:
        raise SnapshotError("a tool call or result with no OpenHands event to write it as", message=i)
    return [_message_event({"id": message.get("id")}, message["role"], "\n".join(texts))]


def _message_event(like: dict[str, Any], role: str, text: str) -> dict[str, Any]:
    """A ``message`` action saying ``text`` (from the user or the agent), or for a system message the
    ``system`` action V0 opens a run with, in ``like``'s place."""
    out: dict[str, Any] = {}
    if isinstance(like.get("id"), int):
        out["id"] = like["id"]
    if "timestamp" in like:
        out["timestamp"] = like["timestamp"]
    out["source"] = "user" if role == "user" else "agent"
    out["message"] = text
    if role == "system":
        out["action"] = "system"
        out["args"] = {"content": text, "tools": None, "openhands_version": None, "agent_class": None}
        return out
    out["action"] = "message"
    out["args"] = {"content": text, "file_urls": None, "image_urls": None, "wait_for_response": False}
    return out


def _without(event: dict[str, Any], gone: set[str], said: str) -> dict[str, Any]:
    """A kept action whose response lost the calls ``gone``: its ``model_response`` lists only the
    calls left and says ``said``, as ConversationMemory must send it."""
    message = _response_message(event)
    if message is None:
        return event
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message["tool_calls"] = [
            c for c in calls if not (isinstance(c, dict) and common.tag(c.get("id")) in gone)
        ]
        metadata = event["tool_call_metadata"]
        if isinstance(metadata.get("total_calls_in_response"), int):
            metadata["total_calls_in_response"] = len(message["tool_calls"])
    if said or message.get("content"):
        message["content"] = said
    return event


def _responses(out: list[Any]) -> list[Any]:
    """Each response whose calls went in part written back whole: its kept actions list the calls
    left and say what all of them said (tombstones included); with none kept, what they said is one
    ``message`` from the agent, in the place of the response's first action."""
    kept_calls = {item.call for item in out if isinstance(item, _Action) and item.call is not None}
    groups: dict[Any, list[_Action]] = {}
    for item in out:
        if isinstance(item, _Action):
            groups.setdefault(_response_id(item.event) or id(item), []).append(item)
    replaced: dict[int, list[Any]] = {}
    for members in groups.values():
        gone = {call for m in members for call in m.batch} - kept_calls
        if not gone:
            continue
        said = "\n".join(t for m in members for t in m.texts)
        for m in members:
            replaced[id(m)] = [_without(m.event, gone, said)] if m.call is not None else []
        if all(m.call is None for m in members) and said:
            replaced[id(members[0])] = [_message_event(members[0].event, "assistant", said)]
    written: list[Any] = []
    for item in out:
        if isinstance(item, _Action):
            written.extend(replaced.get(id(item), [item.event]))
        else:
            written.append(item)
    return written


def to_openhands_v0(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to OpenHands V0 events (the inverse of `from_openhands_v0`).

    Unchanged events come back as they were; a shortened result replaces its observation's
    ``content``. A dropped call leaves its action's ``model_response`` wherever a call of the same
    response stays (each kept action then lists only the calls left and says what the response said,
    tombstones included), or, with none staying, a ``message`` action from the agent saying it: V0
    never sends a response whose calls are not all observed.
    """
    out = in_place(common.neutral_input(messages), FORMAT, _convert)
    return _responses(out)
