"""Converters between neutral messages and GitHub Copilot CLI sessions (``events.jsonl``).

A session is ``~/.copilot/session-state/<id>/events.jsonl``.

Shape, from the CLI's own schema (``schemas/session-events.schema.json`` in ``@github/copilot``) and the
files it writes: one event a line, ``{"type", "data", "id", "timestamp", "parentId"}``, each event's
``parentId`` naming the event before it. ``copilot --resume`` rebuilds what it sends from them: a
``user.message``'s ``transformedContent`` is a user turn, an ``assistant.message`` an assistant turn
(its ``content`` and its ``toolRequests``, each ``{"toolCallId", "name", "arguments"}``), and each
``tool.execution_complete`` answers its call (``result.content`` the text the model reads; a failed
call's ``error.message``). Copilot's own compaction (``session.compaction_complete``), ``/clear``
(``session.context_cleared``) and truncation (``session.truncation``) replace or cut what came
before them; a sub-agent's events carry an ``agentId``; every other event is bookkeeping the CLI shows
or counts (turn starts and ends, usage, tool progress, permissions, hooks, the shutdown summary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from tracetrim._marker import is_shortened
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._shape import JsonLines

FORMAT = "copilot_cli"
RESETS = frozenset({"session.compaction_complete", "session.context_cleared", "session.truncation"})
"""Events after which Copilot sends something other than the events before them (a summary, nothing,
fewer messages): only what follows the last of them is judged."""
EVENT_TYPES = frozenset({"session.start", "user.message", "assistant.message", "tool.execution_complete"})
"""Event types that mark a Copilot CLI session file."""
OBSERVING_TOOLS = (
    "bash",
    "read_bash",
    "write_bash",
    "view",
    "create",
    "edit",
    "str_replace_editor",
    "apply_patch",
    "grep",
    "glob",
    "web_fetch",
)
"""Copilot CLI's built-in tools whose results are observations: what tracetrim judges by default. Its
sub-agent, skill, SQL, documentation and to-do tools are left alone."""
_EVENT = "event"
"""Format metadata of a live message: its event as read (a result's text left out)."""
_CALLS = "calls"
"""Format metadata of an assistant message (the ids of the calls it was read with) and of a carrier (the
live calls whose own events it holds)."""
_TEXT_RESULT_KEYS = frozenset({"content", "contents", "detailedContent", "binaryResultsForLlm"})
"""The keys of a result that is text for the model (`_text_only`): any other (an MCP tool's structured
content, citable sources) keeps the result as it was sent."""


def is_copilot_cli_event(line: Any) -> bool:
    """Whether ``line`` has a Copilot CLI session event's shape: a string ``type`` and ``id``, a
    ``data`` object and a ``parentId``."""
    return (
        isinstance(line, dict)
        and isinstance(line.get("type"), str)
        and isinstance(line.get("id"), str)
        and isinstance(line.get("data"), dict)
        and "parentId" in line
    )


def is_copilot_cli_session(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a Copilot CLI session: every line an event, one of a kind only its sessions
    hold among them."""
    return (
        bool(lines) and all(map(is_copilot_cli_event, lines)) and any(e["type"] in EVENT_TYPES for e in lines)
    )


def _main(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is the main agent's (a sub-agent's carry an ``agentId`` or, in older
    sessions, a ``parentToolCallId``)."""
    return "agentId" not in event and "parentToolCallId" not in event["data"]


def _call_of(event: Mapping[str, Any]) -> str | None:
    """The call an event is about (its ``data.toolCallId``), when it names one."""
    call_id = event["data"].get("toolCallId")
    return call_id if isinstance(call_id, str) else None


def _live_from(events: Sequence[dict[str, Any]]) -> int:
    """The index of the first event after the last reset (0 when there is none)."""
    for n in range(len(events) - 1, -1, -1):
        event = events[n]
        if event["type"] in RESETS and (
            event["type"] != "session.compaction_complete" or event["data"].get("success")
        ):
            return n + 1
    return 0


def _user(event: dict[str, Any], i: int, seen: dict[str, int]) -> Message:
    data = event["data"]
    text = data.get("transformedContent", data.get("content"))
    text = common.require_str(text, "a user message's content", message=i, field="content")
    neutral: Message = {"id": common.message_id("cp-", event, seen, i), "role": "user", "content": []}
    if text:
        neutral["content"].append({"type": "text", "text": text})
    return common.attach_meta(neutral, FORMAT, {_EVENT: common.copied(event)})


def _call(request: Any, i: int) -> Block:
    request = common.require_dict(request, "a tool request", message=i, field="toolRequests")
    call_id = common.require_str(request.get("toolCallId"), "a tool call id", message=i, field="toolRequests")
    if not call_id:
        raise SnapshotError("a tool call id must not be empty", message=i, field="toolRequests")
    name = common.require_str(request.get("name"), "a tool request's name", message=i, field="toolRequests")
    arguments = request.get("arguments", {})
    # Copilot sends the arguments as JSON text; anything but an object makes the pair no candidate.
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "input": common.dump_input(arguments),
        "state": "finished",
    }


def _assistant(event: dict[str, Any], i: int, seen: dict[str, int], names: dict[str, str]) -> Message:
    data = event["data"]
    content = data.get("content", "")
    content = common.require_str(content, "an assistant message's content", message=i, field="content")
    requests = data.get("toolRequests")
    requests = [] if requests is None else requests
    if not isinstance(requests, list):
        raise SnapshotError("toolRequests must be a list", message=i, field="toolRequests")
    blocks: list[Block] = [{"type": "text", "text": content}] if content else []
    calls = [_call(request, i) for request in requests]
    for call in calls:
        names[call["id"]] = call["name"]
    blocks += calls
    meta = {_EVENT: common.copied(event), _CALLS: [c["id"] for c in calls]}
    neutral: Message = {
        "id": common.message_id("cp-", event, seen, i),
        "role": "assistant",
        "content": blocks,
    }
    return common.attach_meta(neutral, FORMAT, meta)


def _text_only(result: Any) -> bool:
    """Whether a completion's ``result`` is text alone for the model: its ``content``, with at most a
    structured copy of text items and a timeline copy beside it (no image for the model, no MCP
    structured content or citable sources)."""
    if not isinstance(result, dict) or not isinstance(result.get("content"), str):
        return False
    contents = result.get("contents")
    structured_text = contents is None or (
        isinstance(contents, list) and all(isinstance(c, dict) and c.get("type") == "text" for c in contents)
    )
    return structured_text and not result.keys() - _TEXT_RESULT_KEYS and not result.get("binaryResultsForLlm")


def _result(event: dict[str, Any], i: int, seen: dict[str, int], name: str) -> Message:
    data = event["data"]
    block: Block = {"type": "tool_result", "id": data["toolCallId"], "name": name, "state": "success"}
    result = data.get("result")
    kept = common.copied(event)
    if data.get("success") is not True:
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        block["state"] = "error"
        block["output"] = message if isinstance(message, str) else ""
    elif _text_only(result):
        block["output"] = result["content"]
        kept["data"]["result"] = common.shape_of(result, "content")
    else:  # an image for the model, structured content: sent as it is, never shortened
        block["output"] = [common.raw_block(FORMAT, common.copied(result))]
    neutral: Message = {
        "id": common.message_id("cp-", event, seen, i),
        "role": "assistant",
        "content": [block],
    }
    return common.attach_meta(neutral, FORMAT, {_EVENT: kept})


def from_copilot_cli(lines: Sequence[Any]) -> list[Message]:
    """Convert the events of a Copilot CLI session to neutral messages.

    The main agent's user messages, assistant messages and tool completions after the last reset
    (`RESETS`) are the live conversation: a user message as its ``transformedContent``, an assistant
    message as its text and calls, a completion as the result of its call (a failed call's error
    message, state ``error``; a result with more than text for the model kept as sent). Every other
    event, and everything up to the last reset, rides in carriers in place, never judged.
    """
    common.require_sequence(lines, "a Copilot CLI session", "events")
    events = [common.require_dict(line, "a session event", message=i) for i, line in enumerate(lines)]
    for i, event in enumerate(events):
        if not is_copilot_cli_event(event):
            raise SnapshotError(
                "a session event needs a string type and id, a data object and a parentId", message=i
            )
    start = _live_from(events)
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    names: dict[str, str] = {}
    answered: set[str] = set()
    for i, event in enumerate(events):
        kind = event["type"]
        if i < start or not _main(event):
            run.hold(common.copied(event))
        elif kind == "user.message":
            run.add(_user(event, i, seen))
        elif kind == "assistant.message":
            run.add(_assistant(event, i, seen, names))
        elif (
            kind == "tool.execution_complete"
            and (call_id := _call_of(event)) in names
            and call_id not in answered
        ):
            answered.add(call_id)
            run.add(_result(event, i, seen, names[call_id]))
        else:
            run.hold(common.copied(event))
    live = names.keys()
    return common.mark_pending([_with_calls(m, live) for m in run.messages()])


def _with_calls(message: Message, live: Set[str]) -> Message:
    """A carrier noting the live calls whose own events (start, progress, permissions) it holds, so a
    writer can take them out with a call a plan dropped; any other message as it is."""
    values = carried(message, FORMAT, copied=False)
    if values is None:
        return message
    calls = {call for e in values if _main(e) and (call := _call_of(e)) in live}
    if calls:
        common.format_meta(message, FORMAT)[_CALLS] = sorted(calls)
    return message


def _assistant_event(message: Message, meta: Mapping[str, Any], i: int) -> dict[str, Any] | None:
    """An assistant message's event as the plan left it, or None when it held calls and was left with
    neither a call nor text (the event goes, its reasoning with it)."""
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    calls = [b for b in message["content"] if b["type"] == "tool_call"]
    for j, block in enumerate(message["content"]):
        if block["type"] not in ("text", "tool_call"):
            raise common.unsupported("a Copilot CLI session", block, i, j)
    if meta.get(_CALLS) and not calls and not any(t.strip() for t in texts):
        return None
    event: dict[str, Any] = common.copied(meta[_EVENT])
    data = event["data"]
    content = "\n\n".join(texts)
    if [c["id"] for c in calls] == list(meta.get(_CALLS, ())) and content == data.get("content", ""):
        return event
    data["content"] = content
    read = {r.get("toolCallId"): r for r in data.get("toolRequests") or () if isinstance(r, dict)}
    requests = []
    for call in calls:
        if call["id"] not in read:
            raise SnapshotError(f"call {call['id']!r} is not one this message was read with", message=i)
        requests.append(read[call["id"]])
    if "toolRequests" in data or requests:
        data["toolRequests"] = requests
    return event


def _result_event(message: Message, meta: Mapping[str, Any], i: int) -> dict[str, Any]:
    """A completion's event as the plan left it: a shortened result holds the shortened text, in its
    structured copy and its timeline copy too (the archive keeps the original)."""
    blocks = message["content"]
    if len(blocks) != 1 or blocks[0]["type"] != "tool_result":
        raise SnapshotError("a tool completion holds its one result and nothing else", message=i)
    event: dict[str, Any] = common.copied(meta[_EVENT])
    result = event["data"].get("result")
    if isinstance(result, dict) and result.get("content", "") is None:  # read as the result's text
        text = common.output_text(blocks[0], "a Copilot CLI session", i, 0)
        result["content"] = text
        if is_shortened(blocks[0]):
            if result.get("contents") is not None:
                result["contents"] = [{"type": "text", "text": text}]
            if result.get("detailedContent") is not None:
                result["detailedContent"] = text
    return event


def _new_events(message: Message, i: int, before: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The events Copilot would have written for a message the session did not hold (a summary an
    offload wrote, a note a host added): a user message, an assistant message with its calls, each
    result a completion; each names the event before it."""
    role = message["role"]
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    out: list[dict[str, Any]] = []

    def add(kind: str, data: dict[str, Any]) -> None:
        previous = out[-1] if out else before
        stamp = previous.get("timestamp") if previous is not None else None
        event: dict[str, Any] = {
            "type": kind,
            "data": data,
            "id": common.derived_uuid(FORMAT, message["id"], i, len(out)),
            "timestamp": stamp if isinstance(stamp, str) else "1970-01-01T00:00:00.000Z",
            "parentId": previous["id"] if previous is not None else None,
        }
        out.append(event)

    if role in ("user", "system"):
        if any(b["type"] != "text" for b in message["content"]):
            raise SnapshotError(f"a {role} message added to a Copilot CLI session holds text only", message=i)
        text = "\n\n".join(texts)
        if role == "user":
            add("user.message", {"content": text, "transformedContent": text})
        else:
            add("system.message", {"role": "system", "content": text})
        return out
    calls = [b for b in message["content"] if b["type"] == "tool_call"]
    if texts or calls:
        requests = [
            {
                "toolCallId": c["id"],
                "name": c["name"],
                "arguments": common.parse_input(c, i, j),
                "type": "function",
            }
            for j, c in enumerate(message["content"])
            if c["type"] == "tool_call"
        ]
        add("assistant.message", {"content": "\n\n".join(texts), "toolRequests": requests})
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_result":
            text = common.output_text(block, "a Copilot CLI session", i, j)
            done: dict[str, Any] = {"toolCallId": block["id"], "success": block.get("state") != "error"}
            if done["success"]:
                done["result"] = {"content": text}
            else:
                done["error"] = {"message": text}
            add("tool.execution_complete", done)
        elif block["type"] not in ("text", "tool_call"):
            raise common.unsupported("a Copilot CLI session", block, i, j)
    return out


def _relink(events: list[dict[str, Any]], fresh: set[str]) -> None:
    """Point each event whose ``parentId`` names an event that went, and each event after one written
    for an added message (``fresh``), at the event written before it (the chain is chronological: each
    event names the one before it), in place."""
    present = {e["id"] for e in events}
    previous: str | None = None
    for n, event in enumerate(events):
        parent = event.get("parentId")
        if (isinstance(parent, str) and parent not in present) or (previous in fresh and parent != previous):
            events[n] = {**event, "parentId": previous}
        previous = event["id"]


def _renumber_chunks(events: list[dict[str, Any]]) -> None:
    """Number again the chunks of each response (``apiCallId``) that lost one (fewer chunks than their
    ``chunkCount`` say), in place."""
    groups: dict[str, list[int]] = {}
    for n, event in enumerate(events):
        data = event["data"]
        if event["type"] == "assistant.message" and _main(event) and isinstance(data.get("chunkCount"), int):
            groups.setdefault(str(data.get("apiCallId")), []).append(n)
    for at in groups.values():
        if all(events[n]["data"]["chunkCount"] == len(at) for n in at):
            continue
        for k, n in enumerate(at):
            event = common.copied(events[n])
            event["data"]["chunkIndex"], event["data"]["chunkCount"] = k, len(at)
            events[n] = event


def to_copilot_cli(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages read from a Copilot CLI session back to its events (the inverse of
    `from_copilot_cli`).

    Each live message is written back as its event, changed as the plan changed it: a shortened result
    is its completion with the shortened text, a dropped call leaves its assistant message's
    ``toolRequests`` and takes its tool events (start, progress, completion) with it, and an assistant
    message that held calls and was left with neither a call nor text goes. Carried events come back
    where they were, less those of dropped calls; a message the session did not hold (a summary, a note)
    becomes the events Copilot writes for one (`_new_events`); every event whose parent went, or that
    follows an added one, names the event written before it. A history not read from a Copilot CLI
    session is refused: a session's events (its start, ids and turns) are Copilot's own.
    """
    history = common.neutral_input(messages)
    if not common.read_from(history, FORMAT):
        raise SnapshotError(
            "only a history read from a Copilot CLI session can be written as one "
            "(its events are Copilot's own)"
        )
    present = {b["id"] for m in history for b in m["content"] if b["type"] == "tool_call"}
    out: list[dict[str, Any]] = []
    fresh: set[str] = set()
    for i, message in enumerate(history):
        values = carried(message, FORMAT)
        if values is not None:
            gone = set(common.format_meta(message, FORMAT).get(_CALLS, ())) - present
            out.extend(e for e in values if not (gone and _call_of(e) in gone and _main(e)))
            continue
        meta = common.format_meta(message, FORMAT)
        if _EVENT not in meta:
            added = _new_events(message, i, out[-1] if out else None)
            fresh.update(e["id"] for e in added)
            out.extend(added)
            continue
        event = meta[_EVENT]
        if event["type"] == "assistant.message":
            written = _assistant_event(message, meta, i)
            if written is None:
                continue
        elif event["type"] == "tool.execution_complete":
            written = _result_event(message, meta, i)
        else:
            written = common.copied(event)
        out.append(written)
    _relink(out, fresh)
    _renumber_chunks(out)
    return JsonLines(out)
