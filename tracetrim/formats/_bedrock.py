"""Converters between the neutral snapshot and AWS Bedrock Converse API messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

FORMAT = "bedrock"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding what its Converse block has that the neutral form has no place for:
``fields`` (a toolUse's or toolResult's other fields, ``status`` among them) and ``cachePoints`` (the
breakpoints that followed the block): they travel with the block, and go when it goes."""
CONVERSE_BLOCKS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "audio",
        "toolUse",
        "toolResult",
        "guardContent",
        "cachePoint",
        "reasoningContent",
        "citationsContent",
        "searchResult",
        "toolAddition",
        "toolRemoval",
    }
)
"""The keys a Converse ``ContentBlock`` (or ``SystemContentBlock``) union may have, as botocore's model has
them."""
_ERROR_STATES = frozenset({"error", "interrupted", "denied"})
_MAPPED = {"toolUse": ("toolUseId", "name", "input"), "toolResult": ("toolUseId", "content")}


def is_bedrock_block(block: Any) -> bool:
    """Whether ``block`` has a Converse content block's shape: one key, a Converse block kind."""
    return isinstance(block, dict) and len(block) == 1 and next(iter(block)) in CONVERSE_BLOCKS


def _one_key(part: Any, i: int | None, j: int) -> tuple[str, Any]:
    if not isinstance(part, dict) or len(part) != 1:
        got = sorted(part) if isinstance(part, dict) else type(part).__name__
        raise SnapshotError(
            f"a Converse content block must be an object with exactly one key, got {got}",
            message=i,
            block=j,
            field="system" if i is None else None,
        )
    kind, value = next(iter(part.items()))
    return str(kind), value


def _thinking(value: Any) -> Block | None:
    """A ``reasoningContent`` as a thinking block, when it is plain reasoning text (else it stays raw)."""
    if not isinstance(value, dict) or set(value) != {"reasoningText"}:
        return None
    inner = value["reasoningText"]
    if not isinstance(inner, dict) or not isinstance(inner.get("text"), str):
        return None
    if not set(inner) <= {"text", "signature"}:
        return None
    block: Block = {"type": "thinking", "thinking": inner["text"]}
    if "signature" in inner:
        block["signature"] = inner["signature"]
    return block


def _tool_use(value: Any, i: int, j: int, names: dict[str, str]) -> Block:
    value = common.require_dict(value, "a toolUse", message=i, block=j, field="toolUse")
    call_id = common.require_str(value.get("toolUseId"), "a toolUseId", message=i, block=j, field="toolUseId")
    if not call_id:
        raise SnapshotError("a toolUseId must not be empty", message=i, block=j, field="toolUseId")
    name = common.require_str(value.get("name"), "a toolUse name", message=i, block=j, field="name")
    tool_input = common.require_dict(value.get("input"), "a toolUse input", message=i, block=j, field="input")
    names[call_id] = name
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "input": common.dump_input(tool_input),
        "state": "finished",
    }


def _tool_result(value: Any, i: int, j: int, names: dict[str, str]) -> Block:
    value = common.require_dict(value, "a toolResult", message=i, block=j, field="toolResult")
    call_id = common.require_str(value.get("toolUseId"), "a toolUseId", message=i, block=j, field="toolUseId")
    content = value.get("content")
    if not isinstance(content, list):
        raise SnapshotError("a toolResult's content must be a list", message=i, block=j, field="content")
    output: list[Block] = []
    for item in content:
        item = common.require_dict(item, "a toolResult content item", message=i, block=j, field="content")
        if set(item) == {"text"} and isinstance(item["text"], str):
            output.append({"type": "text", "text": item["text"]})
        else:
            output.append(common.raw_block(FORMAT, common.copied(item)))
    return {
        "type": "tool_result",
        "id": call_id,
        "name": names.get(call_id, ""),
        "output": output,
        "state": "error" if value.get("status") == "error" else "success",
    }


def _block_from(kind: str, value: Any, part: Any, i: int | None, j: int, names: dict[str, str]) -> Block:
    if i is None:  # a system block: text, or kept as sent
        if kind == "text" and isinstance(value, str):
            return {"type": "text", "text": value}
        return common.raw_block(FORMAT, common.copied(part))
    if kind == "text":
        return {"type": "text", "text": common.require_str(value, "text", message=i, block=j, field="text")}
    if kind in _MAPPED:
        block = (_tool_use if kind == "toolUse" else _tool_result)(value, i, j, names)
        fields = common.extras(value, _MAPPED[kind])
        if fields:
            block[BLOCK_EXTRAS] = {"fields": common.copied(fields)}
        return block
    thinking = _thinking(value) if kind == "reasoningContent" else None
    return thinking if thinking is not None else common.raw_block(FORMAT, common.copied(part))


def _blocks_from(content: list[Any], i: int | None, names: dict[str, str]) -> list[Block]:
    blocks: list[Block] = []
    for j, part in enumerate(content):
        kind, value = _one_key(part, i, j)
        if kind == "cachePoint" and blocks:
            # on the block it follows, so the breakpoint goes when that block goes and never moves
            blocks[-1].setdefault(BLOCK_EXTRAS, {}).setdefault("cachePoints", []).append(common.copied(value))
            continue
        blocks.append(_block_from(kind, value, part, i, j, names))
    return blocks


def from_bedrock(messages: Sequence[Any], *, system: Sequence[Any] | None = None) -> list[Message]:
    """Convert Bedrock Converse ``messages`` (and the optional ``system`` blocks) to neutral messages.

    A user message holding ``toolResult`` blocks becomes an assistant message (AgentScope keeps tool
    results on the assistant side), its original role kept in ``metadata["tracetrim.bedrock"]`` beside
    where it stood (``common.POSITION``). A ``cachePoint`` rides on the block before it; reasoning text
    becomes a thinking block keeping its ``signature``; a toolResult ``status`` of ``error`` maps to state
    ``error``; images, documents, JSON results and other blocks are kept as raw blocks.
    """
    common.require_sequence(messages, "messages", "message objects")
    seen: dict[str, int] = {}
    out: list[Message] = []
    names: dict[str, str] = {}
    if system is not None:
        common.require_sequence(system, "system", "system content blocks")
        blocks = _blocks_from(list(system), None, names)
        payload = {"system": list(system)}
        out.append(
            common.attach_meta(
                {"id": common.message_id("bk-", payload, seen, 0), "role": "system", "content": blocks},
                FORMAT,
                {"system": True},
            )
        )
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        common.require_choice(message.get("role"), ("user", "assistant"), message=i, field="role")
        content = message.get("content")
        if not isinstance(content, list):
            raise SnapshotError("content must be a list of blocks", message=i, field="content")
        blocks = _blocks_from(content, i, names)
        meta: dict[str, Any] = {common.POSITION: i}
        out.append(common.native_message(FORMAT, "bk-", message, blocks, meta, seen, i))
    return common.mark_pending(out)


def _result_content(output: Any, i: int, j: int) -> list[dict[str, Any]]:
    if isinstance(output, str):
        return [{"text": output}] if output else []  # Bedrock refuses a blank text
    items: list[dict[str, Any]] = []
    for inner in output:
        if not isinstance(inner, dict):
            raise SnapshotError(
                "a tool result's output blocks must be objects", message=i, block=j, field="output"
            )
        if common.is_raw(inner, FORMAT):
            items.append(common.copied(inner["value"]))
        elif inner.get("type") == "text":
            items.append({"text": inner["text"]})
        else:
            raise common.unsupported("Bedrock tool results", inner, i, j)
    return items


def _part(block: Block, i: int, j: int) -> dict[str, Any]:
    kind = block["type"]
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    if kind == "text":
        return {"text": block["text"]}
    if kind == "thinking":
        if "redacted_thinking_data" in block and not block["thinking"]:
            return {"reasoningContent": {"redactedContent": block["redacted_thinking_data"]}}
        text = {"text": block["thinking"]}
        if "signature" in block:
            text["signature"] = block["signature"]
        return {"reasoningContent": {"reasoningText": text}}
    fields = common.copied(common.recorded(block, BLOCK_EXTRAS).get("fields") or {})
    if kind == "tool_call":
        tool_use = {"toolUseId": block["id"], "name": block["name"], "input": common.parse_input(block, i, j)}
        return {"toolUse": {**tool_use, **fields}}
    if kind == "tool_result":
        if block.get("state", "success") in _ERROR_STATES:
            fields["status"] = "error"
        elif fields.get("status") == "error":
            del fields["status"]  # the state was changed since conversion; the neutral state wins
        result = {"toolUseId": block["id"], "content": _result_content(block["output"], i, j)}
        return {"toolResult": {**result, **fields}}
    raise common.unsupported("Bedrock messages", block, i, j)


def _parts(block: Block, i: int, j: int) -> list[dict[str, Any]]:
    """The block's Converse block and, right after it, the cache breakpoints that followed it when read."""
    points = common.recorded(block, BLOCK_EXTRAS).get("cachePoints") or []
    return [_part(block, i, j), *({"cachePoint": common.copied(p)} for p in points)]


def to_bedrock(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages to Converse request fields: ``{"system": [...], "messages": [...]}``.

    Leading system messages become ``system`` (absent when there are none); a system message later on
    raises `SnapshotError`. Tool results go to a user message after the calls' assistant message; states
    ``error``, ``interrupted`` and ``denied`` set status ``error``. A message left with no blocks is not
    written, and turns of one role that a drop made neighbours are joined (`common.join_turns`).
    """
    neutral = common.neutral_input(messages)
    result: dict[str, Any] = {}
    system: list[Block] = []
    start = 0
    while start < len(neutral) and neutral[start]["role"] == "system":
        system.extend(neutral[start]["content"])
        start += 1
    if start:
        result["system"] = [p for j, b in enumerate(system) for p in _parts(b, start - 1, j)]
    entries: list[dict[str, Any]] = []
    positions: list[int | None] = []
    leading: set[int] = set()
    for i in range(start, len(neutral)):
        message = neutral[i]
        if message["role"] == "system":
            raise SnapshotError(
                "Converse carries system text only before the first message", message=i, field="role"
            )
        meta = common.format_meta(message, FORMAT)
        pieces = common.user_and_assistant_turns(message, meta, i, _parts)
        # Bedrock refuses empty content (and a turn of breakpoints alone caches nothing): such a turn goes
        pieces = [(role, parts) for role, parts in pieces if any("cachePoint" not in p for p in parts)]
        for k, (role, parts) in enumerate(pieces):
            entry: dict[str, Any] = {"role": role, "content": parts}
            if k == 0:
                entry.update(common.copied(meta.get("extra", {})))
            if "cachePoint" in parts[0]:
                leading.add(id(parts[0]))
            entries.append(entry)
            positions.append(common.position_of(meta) if k == 0 else None)
    joined = common.join_turns(entries, positions, "content")
    for entry in joined:
        # a breakpoint sent first in its turn followed nothing: joined after another turn it would move
        entry["content"] = [p for n, p in enumerate(entry["content"]) if n == 0 or id(p) not in leading]
    result["messages"] = joined
    return result
