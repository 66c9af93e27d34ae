"""Converters between the neutral snapshot and Vercel AI SDK messages (``ModelMessage``, v4 ``CoreMessage``).

Shape, from the ``ai`` package's ``ModelMessage`` types: ``{"role": "system" | "user" | "assistant" |
"tool", "content": text or parts}``. An assistant turn's ``tool-call`` parts (``toolCallId``,
``toolName``, ``input``; v4: ``args``) are answered by ``tool-result`` parts in a following ``tool``
message (v5: ``output`` as ``{"type": "text" | "json" | "error-text" | "error-json" | "content",
"value"}``; v4: ``result`` and ``isError``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._json import spaced_json
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._layout import results_apart

FORMAT = "ai_sdk"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding the fields of its AI SDK part the neutral form has no place for
(``providerOptions``, a v4 ``args`` spelling, a result's output as sent): they travel with the block."""
CALL_PARTS = frozenset({"tool-call", "tool-result"})
"""The part types only the AI SDK has (hyphenated, with ``toolCallId``)."""
_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "assistant"}
_ERROR_STATES = frozenset({"error", "interrupted", "denied"})


def is_ai_sdk_part(part: Any) -> bool:
    """Whether ``part`` is an AI SDK tool-call or tool-result part."""
    return isinstance(part, dict) and common.tag(part.get("type")) in CALL_PARTS and "toolCallId" in part


def _output(part: Mapping[str, Any], i: int, j: int) -> tuple[str | list[Block], str, dict[str, Any]]:
    """A tool-result part's output as neutral output, its state, and what writing it back takes."""
    if "output" in part:
        output = common.require_dict(
            part["output"], "a tool result's output", message=i, block=j, field="output"
        )
        kind, value = output.get("type"), output.get("value")
        if kind in ("text", "error-text") and isinstance(value, str):
            return value, "error" if kind == "error-text" else "success", {}
        if kind == "json":
            return spaced_json(value), "success", {"sent": common.copied(output)}
        return [common.raw_block(FORMAT, common.copied(output))], "error", {}
    result = part.get("result")
    state = "error" if part.get("isError") else "success"
    if isinstance(result, str):
        return result, state, {}
    return spaced_json(result), state, {"sent": common.copied(result)}


def _part(part: Any, i: int, j: int, names: dict[str, str]) -> Block:
    part = common.require_dict(part, "a content part", message=i, block=j)
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        extra = common.extras(part, ("type", "text"))
        block: Block = {"type": "text", "text": part["text"]}
    elif kind == "reasoning" and isinstance(part.get("text"), str):
        extra = common.extras(part, ("type", "text"))
        block = {"type": "thinking", "thinking": part["text"]}
    elif kind == "tool-call" and isinstance(part.get("input", part.get("args")), dict):
        key = "input" if "input" in part else "args"
        call_id = common.require_str(
            part.get("toolCallId"), "a toolCallId", message=i, block=j, field="toolCallId"
        )
        name = common.require_str(part.get("toolName"), "a toolName", message=i, block=j, field="toolName")
        names[call_id] = name
        extra = {
            "key": key,
            "fields": common.copied(common.extras(part, ("type", "toolCallId", "toolName", key))),
        }
        block = {"type": "tool_call", "id": call_id, "name": name, "input": common.dump_input(part[key])}
        block["state"] = "finished"
    elif kind == "tool-result":
        call_id = common.require_str(
            part.get("toolCallId"), "a toolCallId", message=i, block=j, field="toolCallId"
        )
        name = part.get("toolName", names.get(call_id, ""))
        name = common.require_str(name, "a toolName", message=i, block=j, field="toolName")
        output, state, rebuild = _output(part, i, j)
        mapped = ("type", "toolCallId", "toolName", "output", "result", "isError")
        extra = {"fields": common.copied(common.extras(part, mapped)), "v4": "output" not in part, **rebuild}
        if "isError" in part:
            extra["isError"] = part["isError"]
        block = {"type": "tool_result", "id": call_id, "name": name, "output": output, "state": state}
    else:
        return common.raw_block(FORMAT, common.copied(part))
    if extra:
        block[BLOCK_EXTRAS] = common.copied(extra)
    return block


def from_ai_sdk(messages: Sequence[Any]) -> list[Message]:
    """Convert AI SDK messages to neutral messages, one each (ids derived from content).

    Tool calls (``input``, or v4 ``args``) and their results are paired by ``toolCallId``; a result's
    text output is its text and a JSON output its JSON text; a ``tool`` message becomes an assistant
    message (AgentScope keeps results on the assistant side). Other parts ride along unchanged.
    """
    common.require_sequence(messages, "messages", "message objects")
    names: dict[str, str] = {}
    seen: dict[str, int] = {}
    out: list[Message] = []
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.tag(message.get("role"))
        if role not in _ROLES:
            raise SnapshotError(
                f"role must be one of {sorted(_ROLES)}, got {message.get('role')!r}", message=i
            )
        content = message.get("content")
        meta: dict[str, Any] = {common.POSITION: i, "role": role}
        if isinstance(content, str):
            blocks: list[Block] = [{"type": "text", "text": content}] if content else []
            meta["content"] = "str"
        elif isinstance(content, list):
            blocks = [_part(part, i, j, names) for j, part in enumerate(content)]
            common.mark_reasoning(blocks)
        else:
            raise SnapshotError("content must be text or a list of parts", message=i, field="content")
        extra = common.extras(message, ("role", "content"))
        if extra:
            meta["extra"] = common.copied(extra)
        neutral = {"id": common.message_id("ai-", message, seen, i), "role": _ROLES[role], "content": blocks}
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _result_part(block: Block, extra: Mapping[str, Any], i: int, j: int) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool-result", "toolCallId": block["id"], "toolName": block["name"]}
    output = block["output"]
    error = block.get("state", "success") in _ERROR_STATES
    sent = extra.get("sent")
    if not isinstance(output, str):
        if len(output) != 1 or not common.is_raw(output[0], FORMAT):
            raise common.unsupported("AI SDK tool results", block, i, j)
        part["output"] = common.copied(output[0]["value"])
    elif extra.get("v4"):
        unchanged = sent is not None and spaced_json(sent) == output
        part["result"] = common.copied(sent) if unchanged else output
        if "isError" in extra:  # as sent, unless the state changed since
            part["isError"] = extra["isError"] if bool(extra["isError"]) == error else error
        elif error:
            part["isError"] = True
    elif isinstance(sent, dict) and spaced_json(sent.get("value")) == output:
        part["output"] = common.copied(sent)
    else:
        part["output"] = {"type": "error-text" if error else "text", "value": output}
    part.update(common.copied(extra.get("fields", {})))
    return part


def _write_part(block: Block, i: int, j: int) -> dict[str, Any]:
    extra = common.recorded(block, BLOCK_EXTRAS)
    kind = block["type"]
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    if kind in ("text", "thinking"):
        text = block["text" if kind == "text" else "thinking"]
        return {"type": "text" if kind == "text" else "reasoning", "text": text, **common.copied(extra)}
    if kind == "tool_call":
        part = {"type": "tool-call", "toolCallId": block["id"], "toolName": block["name"]}
        part[str(extra.get("key", "input"))] = common.parse_input(block, i, j)
        part.update(common.copied(extra.get("fields", {})))
        return part
    if kind == "tool_result":
        return _result_part(block, extra, i, j)
    raise common.unsupported("AI SDK messages", block, i, j)


def _as_parts(content: Any) -> list[Any]:
    return ([{"type": "text", "text": content}] if content else []) if isinstance(content, str) else content


def to_ai_sdk(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages to AI SDK messages: ``{"messages": [...]}``.

    Results go to a ``tool`` message (the role a message was read with is kept); text-only content sent
    as a string is written as one. Turns of one role that a removal brought together are joined, as the
    providers behind the SDK want alternating turns.
    """
    # a tool message holds tool results alone: a result beside its call, or text after results, moves out
    neutral = results_apart(common.neutral_input(messages), only_results=True)
    entries: list[dict[str, Any]] = []
    positions: list[int | None] = []
    for i, message in enumerate(neutral):
        meta = common.format_meta(message, FORMAT)
        kept = common.reasoning_with_its_call(message["content"])
        if message["content"] and not kept:  # its calls went, and the reasoning that led to them
            continue
        parts = [_write_part(block, i, j) for j, block in enumerate(kept)]
        results = any(b["type"] == "tool_result" for b in message["content"])
        role = meta.get("role") or ("tool" if results else message["role"])
        content: Any = parts
        if meta.get("content") == "str" and all(
            p["type"] == "text" and set(p) == {"type", "text"} for p in parts
        ):
            content = "\n\n".join(p["text"] for p in parts)
        entry = {"role": role, "content": content, **common.copied(meta.get("extra", {}))}
        entries.append(entry)
        positions.append(common.position_of(meta))
    return {"messages": common.join_turns(entries, positions, "content", as_parts=_as_parts)}
