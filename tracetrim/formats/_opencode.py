"""Converters between neutral messages and OpenCode sessions (``opencode export`` / ``opencode import``).

Shape, from OpenCode's ``MessageV2`` (``packages/opencode/src/session/message-v2.ts``) as ``opencode
export SESSION`` writes it: ``{"info": session, "messages": [{"info": message, "parts": [part, ...]}]}``.
A message's ``info`` has its ``id`` (``msg_...``), ``sessionID`` and ``role`` (``user`` or
``assistant``). Its parts, in id order: ``text`` and ``reasoning`` (``text``), ``tool`` (``callID``,
``tool`` and a ``state``: ``status`` ``completed`` with ``input`` and ``output``, ``error`` with
``error``, or ``pending`` / ``running``), and parts the model is not sent as such (``step-start``,
``step-finish``, ``snapshot``, ``patch``, ``file``, ``agent``, ``compaction``, ...). A tool part is a
call and its result at once, so a pair goes as one part.

OpenCode's own compaction: a user message holding a ``compaction`` part, answered by an assistant
``summary`` message, hides everything before it from the model; a tool part whose
``state.time.compacted`` is set was pruned (its output no longer sent). Both are kept in place, never
judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._json import digest
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried

FORMAT = "opencode"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding the part it was read from (its text or state held out)."""
_ROLES = frozenset({"user", "assistant"})
_HELD = "\x00tracetrim.held"
"""Where a part's text or tool output stood in the part kept on its block (the block holds it)."""
_RESULT_STATES = {"completed": "success", "error": "error"}


def is_opencode_message(item: Any) -> bool:
    """Whether ``item`` is a message of an OpenCode export: ``{"info": {..., "role"}, "parts": [...]}``."""
    return (
        isinstance(item, dict)
        and item.keys() == {"info", "parts"}
        and isinstance(item["info"], dict)
        and common.tag(item["info"].get("role")) in _ROLES
        and isinstance(item["parts"], list)
    )


def _live_from(messages: Sequence[Any]) -> int:
    """Where what the model sees begins: the last user message holding a ``compaction`` part that a
    finished assistant ``summary`` message answers (OpenCode's own compaction), else the start."""
    answered = {
        m["info"].get("parentID")
        for m in messages
        if m["info"].get("role") == "assistant"
        and m["info"].get("summary") is True
        and m["info"].get("finish")  # a summary still streaming, or one that failed, hides nothing yet
        and not m["info"].get("error")
    }
    start = 0
    for i, message in enumerate(messages):
        info = message["info"]
        compacted = any(isinstance(p, dict) and p.get("type") == "compaction" for p in message["parts"])
        if info.get("role") == "user" and common.tag(info.get("id")) in answered and compacted:
            start = i
    return start


def _pruned(part: dict[str, Any]) -> bool:
    state = part.get("state")
    time = state.get("time") if isinstance(state, dict) else None
    return isinstance(time, dict) and time.get("compacted") is not None


def _held(part: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: (_HELD if k == key else common.copied(v)) for k, v in part.items()}


def _tool_blocks(part: dict[str, Any], i: int, j: int) -> list[Block]:
    call_id = common.require_str(
        part.get("callID"), "a tool part's callID", message=i, block=j, field="callID"
    )
    name = common.require_str(part.get("tool"), "a tool part's tool", message=i, block=j, field="tool")
    state = common.require_dict(part.get("state"), "a tool part's state", message=i, block=j, field="state")
    tool_input = common.require_dict(
        state.get("input", {}), "a tool's input", message=i, block=j, field="state"
    )
    status = common.tag(state.get("status"))
    field = "output" if status == "completed" else "error" if status == "error" else None
    held = _held(state, field) if field else common.copied(state)
    shell = {k: (held if k == "state" else common.copied(v)) for k, v in part.items()}
    call: Block = {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "input": common.dump_input(tool_input),
        "state": "finished",
        BLOCK_EXTRAS: {"part": shell},
    }
    if field is None:
        return [call]  # pending or running: a call with no result yet
    output = common.require_str(state.get(field), f"a tool's {field}", message=i, block=j, field="state")
    result: Block = {
        "type": "tool_result",
        "id": call_id,
        "name": name,
        "output": output,
        "state": _RESULT_STATES[str(status)],
    }
    return [call, result]


def _blocks(parts: list[Any], i: int) -> list[Block]:
    blocks: list[Block] = []
    for j, part in enumerate(parts):
        part = common.require_dict(part, "a part", message=i, block=j)
        kind = common.tag(part.get("type"))
        if kind in ("text", "reasoning") and isinstance(part.get("text"), str) and not part.get("ignored"):
            key = "thinking" if kind == "reasoning" else "text"
            blocks.append({"type": key, key: part["text"], BLOCK_EXTRAS: {"part": _held(part, "text")}})
        elif kind == "tool" and not _pruned(part):
            blocks.extend(_tool_blocks(part, i, j))
        else:
            blocks.append(common.raw_block(FORMAT, common.copied(part)))
    return blocks


def from_opencode(messages: Sequence[Any]) -> list[Message]:
    """Convert the messages of an OpenCode export to neutral messages.

    Each message becomes one neutral message (id: its own): text and reasoning parts its text and
    thinking, each tool part a call followed by its result, every other part kept as it is. Messages
    before OpenCode's own last compaction ride in carriers in place (never judged). A reasoning part goes
    with the call it was sent before, and that call, where the reasoning led to more, only with all of it
    (`tracetrim.formats._common.mark_reasoning`).
    """
    common.require_sequence(messages, "an OpenCode session's messages", "messages")
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        info = common.require_dict(message.get("info"), "a message's info", message=i, field="info")
        common.require_choice(info.get("role"), _ROLES, message=i, field="info.role")
        common.require_str(info.get("id"), "a message's id", message=i, field="info.id")
        if not isinstance(message.get("parts"), list):
            raise SnapshotError("parts must be a list", message=i, field="parts")
    start = _live_from(messages)
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    for i, message in enumerate(messages):
        if i < start:
            run.hold(common.copied(message))
            continue
        info = message["info"]
        blocks = _blocks(message["parts"], i)
        # OpenCode sends its parts through the AI SDK, to Responses models too; its step parts are its own
        common.mark_reasoning(blocks, output=lambda b: b["type"] in ("tool_call", "text"))
        neutral: Message = {"id": info["id"], "role": info["role"], "content": blocks}
        run.add(common.attach_meta(neutral, FORMAT, {"info": common.copied(info)}))
    return common.mark_pending(run.messages())


def _part_id(after: str | None, text: str, taken: set[str]) -> str:
    """An id for a new text part that sorts right after ``after`` (OpenCode orders parts by id)."""
    base = f"{after}~tt" if after else "prt_0~tt"
    ident = base + digest(text)[:8]
    while ident in taken:
        ident += "0"
    taken.add(ident)
    return ident


def _tool_part(call: Block, result: Block | None, i: int, j: int) -> dict[str, Any]:
    part = common.copied(common.recorded(call, BLOCK_EXTRAS).get("part"))
    if not isinstance(part, dict):
        raise SnapshotError("a tool call with no OpenCode tool part to write it as", message=i, block=j)
    state = part["state"]
    if common.dump_input(state.get("input", {})) != call["input"]:
        state["input"] = common.parse_input(call, i, j)
    if result is not None:
        field = "output" if state.get("status") == "completed" else "error"
        state[field] = common.output_text(result, "OpenCode", i, j)
    return part


def _parts(message: Message, info: dict[str, Any], i: int) -> list[Any]:
    blocks = common.reasoning_with_its_call(message["content"])
    results = {b["id"]: b for b in blocks if b["type"] == "tool_result"}
    taken = {
        str(b["value"].get("id")) for b in blocks if common.is_raw(b, FORMAT) and isinstance(b["value"], dict)
    }
    parts: list[Any] = []
    last_id: str | None = None
    for j, block in enumerate(blocks):
        kind = block["type"]
        part: Any
        if common.is_raw(block, FORMAT):
            part = common.copied(block["value"])
        elif kind in ("text", "thinking"):
            shell = common.recorded(block, BLOCK_EXTRAS).get("part")
            if isinstance(shell, dict):
                part = {k: (block[kind] if v == _HELD else common.copied(v)) for k, v in shell.items()}
            else:  # text tracetrim added (a tombstone): a part of its own, placed by its id
                part = {
                    "type": "text" if kind == "text" else "reasoning",
                    "text": block[kind],
                    "id": _part_id(last_id, block[kind], taken),
                }
                if "sessionID" in info:
                    part["sessionID"] = info["sessionID"]
                part["messageID"] = info.get("id", message["id"])
        elif kind == "tool_call":
            part = _tool_part(block, results.get(block["id"]), i, j)
        elif kind == "tool_result":
            continue  # written with its call, in the one part both came from
        else:
            raise common.unsupported("OpenCode", block, i, j)
        if isinstance(part, dict) and isinstance(part.get("id"), str):
            last_id = part["id"]
        parts.append(part)
    return parts


def to_opencode(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to OpenCode export messages (the inverse of `from_opencode`).

    Carried messages come back as they were; each other message is its ``info`` and its parts again:
    a kept tool part with its output as the plan left it, a dropped pair's part gone, text tracetrim
    added (a tombstone) a text part whose id sorts right after the part before it.
    """
    messages = common.neutral_input(messages)
    out: list[Any] = []
    for i, message in enumerate(messages):
        value = carried(message, FORMAT)
        if value is not None:
            out.extend(value)
            continue
        role = message.get("role")
        if role not in _ROLES:
            raise SnapshotError(
                "an OpenCode session holds only user and assistant messages", message=i, field="role"
            )
        meta = common.format_meta(message, FORMAT)
        info = common.copied(meta.get("info")) or {"id": message["id"], "role": role}
        out.append({"info": info, "parts": _parts(message, info, i)})
    return out
