"""Converters between the neutral snapshot and Anthropic Messages API messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

FORMAT = "anthropic"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding the fields of its Anthropic block the neutral form has no place for
(``cache_control``, ``citations``, ``is_error``): they travel with the block, and go when it goes."""
_ERROR_STATES = frozenset({"error", "interrupted", "denied"})
_MAPPED = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
}


def _block_from(part: Any, i: int, j: int, names: dict[str, str]) -> tuple[Block, dict[str, Any]]:
    part = common.require_dict(part, "a content block", message=i, block=j)
    kind = common.tag(part.get("type"))
    if kind not in _MAPPED:
        return common.raw_block(FORMAT, common.copied(part)), {}
    extra = common.copied(common.extras(part, _MAPPED[kind]))
    if kind == "text":
        return {
            "type": "text",
            "text": common.require_str(part.get("text"), "text", message=i, block=j, field="text"),
        }, extra
    if kind == "thinking":
        block: Block = {
            "type": "thinking",
            "thinking": common.require_str(
                part.get("thinking"), "thinking", message=i, block=j, field="thinking"
            ),
        }
        if "signature" in part:
            block["signature"] = part["signature"]
        return block, extra
    if kind == "redacted_thinking":
        # AgentScope keeps redacted thinking as an empty thinking block carrying the encrypted payload.
        return {"type": "thinking", "thinking": "", "redacted_thinking_data": part.get("data")}, extra
    if kind == "tool_use":
        call_id = common.require_str(part.get("id"), "a tool_use id", message=i, block=j, field="id")
        name = common.require_str(part.get("name"), "a tool_use name", message=i, block=j, field="name")
        if not call_id:
            raise SnapshotError("a tool_use id must not be empty", message=i, block=j, field="id")
        names[call_id] = name
        tool_input = common.require_dict(
            part.get("input"), "a tool_use input", message=i, block=j, field="input"
        )
        return {
            "type": "tool_call",
            "id": call_id,
            "name": name,
            "input": common.dump_input(tool_input),
            "state": "finished",
        }, extra
    call_id = common.require_str(
        part.get("tool_use_id"), "tool_use_id", message=i, block=j, field="tool_use_id"
    )
    content = part.get("content", "")
    if "content" not in part:
        extra["no_content"] = True
    output = common.result_output(content, FORMAT, "a tool_result", message=i, block=j)
    if "is_error" in part:
        extra["is_error"] = part["is_error"]
    return {
        "type": "tool_result",
        "id": call_id,
        "name": names.get(call_id, ""),
        "output": output,
        "state": "error" if part.get("is_error") else "success",
    }, extra


def from_anthropic(messages: Sequence[Any], *, system: str | Sequence[Any] | None = None) -> list[Message]:
    """Convert Anthropic messages (and the optional top-level ``system``) to neutral messages.

    A user message holding ``tool_result`` blocks becomes an assistant message (AgentScope keeps tool
    results on the assistant side), its original role kept in ``metadata["tracetrim.anthropic"]``.
    ``thinking`` keeps its ``signature``; ``redacted_thinking`` becomes an empty thinking block with
    ``redacted_thinking_data``; a tool result's ``is_error`` maps to state ``error``.
    """
    common.require_sequence(messages, "messages", "message objects")
    seen: dict[str, int] = {}
    out: list[Message] = []
    if system is not None:
        meta: dict[str, Any] = {"system": True}
        if isinstance(system, str):
            blocks: list[Block] = [{"type": "text", "text": system}]
        else:
            blocks = common.text_parts(list(system), FORMAT)
            meta["content"] = "list"
        out.append(
            common.attach_meta(
                {
                    "id": common.message_id("an-", {"system": system}, seen, 0),
                    "role": "system",
                    "content": blocks,
                },
                FORMAT,
                meta,
            )
        )
    names: dict[str, str] = {}
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise SnapshotError(f"role must be 'user' or 'assistant', got {role!r}", message=i, field="role")
        meta = {}
        content = message.get("content")
        if isinstance(content, str):
            meta["content"] = "str"
            blocks = [{"type": "text", "text": content}] if content else []
        elif isinstance(content, list):
            blocks = []
            for j, part in enumerate(content):
                block, extra = _block_from(part, i, j, names)
                if extra:
                    # on the block itself, so a cache_control breakpoint stays on its block after a drop
                    block[BLOCK_EXTRAS] = extra
                blocks.append(block)
        else:
            raise SnapshotError("content must be a string or a list of blocks", message=i, field="content")
        out.append(common.native_message(FORMAT, "an-", message, blocks, meta, seen, i))
    return common.mark_pending(out)


def _part(block: Block, i: int, j: int) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    if kind == "thinking":
        if "redacted_thinking_data" in block and not block["thinking"]:
            return {"type": "redacted_thinking", "data": block["redacted_thinking_data"]}
        part = {"type": "thinking", "thinking": block["thinking"]}
        if "signature" in block:
            part["signature"] = block["signature"]
        return part
    if kind == "tool_call":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": common.parse_input(block, i, j),
        }
    if kind == "tool_result":
        output = block["output"]
        content: Any
        if isinstance(output, str):
            content = output
        else:
            content = []
            for inner in output:
                if not isinstance(inner, dict):
                    raise SnapshotError(
                        "a tool result's output blocks must be objects", message=i, block=j, field="output"
                    )
                if inner.get("type") != "text" and not common.is_raw(inner, FORMAT):
                    raise common.unsupported("Anthropic tool results", inner, i, j)
                content.append(_part(inner, i, j))
        part = {"type": "tool_result", "tool_use_id": block["id"], "content": content}
        if block.get("state", "success") in _ERROR_STATES:
            part["is_error"] = True
        return part
    raise common.unsupported("Anthropic messages", block, i, j)


def _apply_extras(part: dict[str, Any], block: Block) -> dict[str, Any]:
    recorded = block.get(BLOCK_EXTRAS)
    if not isinstance(recorded, dict) or not recorded:
        return part
    extra = {k: common.copied(v) for k, v in recorded.items() if k != "no_content"}
    if part["type"] == "tool_result":
        if recorded.get("no_content") and part["content"] == "":
            del part["content"]
        if "is_error" in extra and bool(extra["is_error"]) != bool(part.get("is_error")):
            # The state was changed since conversion; the neutral state wins.
            del extra["is_error"]
    part.update(extra)
    return part


def to_anthropic(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages to Anthropic request fields: ``{"system": ..., "messages": [...]}``.

    Leading system messages become ``system`` (absent when there are none); a system message later on
    raises `SnapshotError`. Tool results go to a user message after the calls' assistant message; states
    ``error``, ``interrupted`` and ``denied`` set ``is_error``.
    """
    neutral = common.neutral_input(messages)
    result: dict[str, Any] = {}
    system: list[Block] = []
    system_meta: dict[str, Any] = {}
    start = 0
    while start < len(neutral) and neutral[start]["role"] == "system":
        system.extend(neutral[start]["content"])
        system_meta = common.format_meta(neutral[start], FORMAT)
        start += 1
    if start:
        parts = [_part(b, start - 1, j) for j, b in enumerate(system)]
        if (
            start == 1
            and system_meta.get("content") != "list"
            and len(parts) == 1
            and parts[0]["type"] == "text"
        ):
            result["system"] = parts[0]["text"]
        else:
            result["system"] = parts
    out: list[dict[str, Any]] = []
    for i in range(start, len(neutral)):
        message = neutral[i]
        if message["role"] == "system":
            raise SnapshotError(
                "Anthropic messages carry system text only before the first message", message=i, field="role"
            )
        meta = common.format_meta(message, FORMAT)
        pieces = common.user_and_assistant_turns(
            message, meta, i, lambda block, i, j: [_apply_extras(_part(block, i, j), block)]
        )
        if not pieces:
            pieces.append((str(meta.get("role", message["role"])), []))
        for k, (role, parts) in enumerate(pieces):
            entry: dict[str, Any] = {"role": role, "content": parts}
            if (
                k == 0
                and meta.get("content") == "str"
                and len(pieces) == 1
                and all(p["type"] == "text" for p in parts)
                and len(parts) <= 1
            ):
                entry["content"] = parts[0]["text"] if parts else ""
            if k == 0:
                entry.update(common.copied(meta.get("extra", {})))
            out.append(entry)
    result["messages"] = out
    return result
