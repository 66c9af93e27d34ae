"""Converters between the neutral snapshot and OpenAI Responses API input items."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from tracetrim._marker import mark_reasoned_call
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

FORMAT = "openai_responses"
ITEM = "openai_responses.item"
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _reasoning_text(item: dict[str, Any]) -> str:
    """The thinking text of a reasoning item: its summary, else its raw reasoning content."""
    texts = [p.get("text", "") for p in common.listed(item.get("summary")) if isinstance(p, dict)]
    if not texts:
        texts = [p.get("text", "") for p in common.listed(item.get("content")) if isinstance(p, dict)]
    return "\n\n".join(t for t in texts if isinstance(t, str))


def text_part_type(role: str) -> str:
    """The type of a text part a message of ``role`` holds in the Responses API."""
    return "output_text" if role == "assistant" else "input_text"


def _message_blocks(item: dict[str, Any], i: int, meta: dict[str, Any]) -> list[Block]:
    role = item["role"]
    content = item.get("content")
    if isinstance(content, str):
        if not content:
            meta["content"] = "str"
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise SnapshotError(
            "a message item's content must be a string or a list of parts", message=i, field="content"
        )
    blocks: list[Block] = []
    part_extras: dict[str, Any] = {}
    for j, part in enumerate(content):
        if (
            isinstance(part, dict)
            and common.tag(part.get("type")) in _TEXT_PARTS
            and isinstance(part.get("text"), str)
        ):
            extra = common.extras(part, ("text",))
            if extra != {"type": text_part_type(role)}:
                part_extras[str(j)] = common.copied(extra)
            blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(common.raw_block(FORMAT, common.copied(part)))
    if part_extras:
        meta["parts"] = part_extras
    if len(blocks) <= 1 and all(b["type"] == "text" for b in blocks):
        meta["content"] = "parts"
    return blocks


def from_openai_responses(items: Sequence[Any]) -> list[Message]:
    """Convert OpenAI Responses input items to neutral messages.

    Each item becomes one neutral message, except ``reasoning`` items: they become thinking blocks at the
    front of the message of the call or assistant message they precede, so the two stay together. Item ids
    become message ids (invented from content where an item has none); the full reasoning items and every
    field the neutral form lacks are kept in ``metadata["tracetrim.openai_responses"]``.
    """
    common.require_sequence(items, "items", "item objects")
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    out: list[Message] = []
    reasoning: list[dict[str, Any]] = []

    def flush_reasoning() -> None:
        if reasoning:
            out.append(
                common.attach_meta(
                    {
                        "id": common.message_id("rs-", reasoning, seen, len(out)),
                        "role": "assistant",
                        "content": [{"type": "thinking", "thinking": _reasoning_text(r)} for r in reasoning],
                    },
                    FORMAT,
                    {"reasoning": common.copied(reasoning)},
                )
            )
            reasoning.clear()

    for i, item in enumerate(items):
        item = common.require_dict(item, "an item", message=i)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "reasoning":
            reasoning.append(item)
            continue
        meta: dict[str, Any] = {}
        blocks: list[Block]
        role = "assistant"
        if kind == "message":
            if common.tag(item.get("role")) not in _ROLES:
                raise SnapshotError(f"unsupported role {item.get('role')!r}", message=i, field="role")
            role = _ROLES[item["role"]]
            if role != item["role"]:
                meta["role"] = item["role"]
            blocks = _message_blocks(item, i, meta)
            extra = common.extras(item, ("role", "content", "type"))
            if "type" not in item:
                meta["untyped"] = True
            key = "message"
        elif kind == "function_call":
            call_id = common.require_str(item.get("call_id"), "call_id", message=i, field="call_id")
            if not call_id:
                raise SnapshotError("call_id must not be empty", message=i, field="call_id")
            name = common.require_str(item.get("name"), "name", message=i, field="name")
            arguments = common.require_str(item.get("arguments"), "arguments", message=i, field="arguments")
            names[call_id] = name
            blocks = [
                {"type": "tool_call", "id": call_id, "name": name, "input": arguments, "state": "finished"}
            ]
            extra = common.extras(item, ("type", "call_id", "name", "arguments"))
            key = f"call:{call_id}"
        elif kind == "function_call_output":
            call_id = common.require_str(item.get("call_id"), "call_id", message=i, field="call_id")
            output = item.get("output")
            result: str | list[Block]
            if isinstance(output, str):
                result = output
            elif isinstance(output, list):
                result = [
                    {"type": "text", "text": p["text"]}
                    if isinstance(p, dict)
                    and set(p) == {"type", "text"}
                    and p["type"] == "input_text"
                    and isinstance(p["text"], str)
                    else common.raw_block(FORMAT, common.copied(p))
                    for p in output
                ]
            else:
                raise SnapshotError("output must be a string or a list of parts", message=i, field="output")
            blocks = [
                {
                    "type": "tool_result",
                    "id": call_id,
                    "name": names.get(call_id, ""),
                    "output": result,
                    "state": "success",
                }
            ]
            extra = common.extras(item, ("type", "call_id", "output"))
            key = f"output:{call_id}"
        else:
            flush_reasoning()
            out.append(
                {
                    "id": common.message_id("ri-", item, seen, i),
                    "role": "assistant",
                    "content": [common.raw_block(ITEM, common.copied(item))],
                }
            )
            continue
        if reasoning and not (kind == "function_call" or (kind == "message" and role == "assistant")):
            flush_reasoning()
        if reasoning:
            meta["reasoning"] = common.copied(reasoning)
            meta["precedes"] = key
            blocks = [{"type": "thinking", "thinking": _reasoning_text(r)} for r in reasoning] + blocks
            reasoning.clear()
        if extra:
            meta.setdefault("items", {})[key] = common.copied(extra)
        item_id = item.get("id")
        neutral_id = (
            item_id if isinstance(item_id, str) and item_id else common.message_id("ri-", item, seen, i)
        )
        out.append(common.attach_meta({"id": neutral_id, "role": role, "content": blocks}, FORMAT, meta))
    flush_reasoning()
    return common.mark_pending(_reasoned_calls(out))


def _output_item(message: Message) -> bool:
    """Whether ``message`` stands for an item the model outputs after reasoning without reasoning of its
    own: a call, an assistant message, a hosted tool's item."""
    meta = common.format_meta(message, FORMAT)
    if "reasoning" in meta or message["role"] != "assistant" or meta.get("role") not in (None, "assistant"):
        return False
    return not any(block["type"] == "tool_result" for block in message["content"])


def _call_of(message: Message) -> Block | None:
    """The tool_call a function_call item's message holds (None for any other item)."""
    blocks = message["content"]
    return blocks[-1] if blocks and blocks[-1]["type"] == "tool_call" else None


def _reasoned_calls(messages: list[Message]) -> list[Message]:
    """``messages`` with each call that reasoning was sent right before marked (`mark_reasoned_call`)
    where more output of that turn follows it: that call can go only with all of it."""
    for k, message in enumerate(messages):
        meta = common.format_meta(message, FORMAT)
        call = _call_of(message)
        if call is None or "reasoning" not in meta or not str(meta.get("precedes", "")).startswith("call:"):
            continue
        led = list(itertools.takewhile(_output_item, messages[k + 1 :]))
        if led:  # an item other than a call (a message, a hosted tool's item) stands as itself
            mark_reasoned_call(call, [call, *(_call_of(m) or {"type": "item"} for m in led)])
    return messages


def _output(block: Block, i: int, j: int) -> str | list[Any]:
    output = block["output"]
    if isinstance(output, str):
        return output
    parts: list[Any] = []
    for part in output:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "input_text", "text": part["text"]})
        elif isinstance(part, dict) and common.is_raw(part, FORMAT):
            parts.append(common.copied(part["value"]))
        else:
            raise SnapshotError(
                "a tool result's output blocks must be text", message=i, block=j, field="output"
            )
    return parts


def _message_item(
    texts: list[tuple[int, Block]], role: str, meta: dict[str, Any], first: bool
) -> dict[str, Any]:
    mode = meta.get("content") if first else None
    part_extras = meta.get("parts", {}) if first else {}
    content: Any
    plain = bool(texts) and all(b["type"] == "text" for _, b in texts) and not part_extras
    if plain and mode != "parts" and (len(texts) == 1 or mode == "str" or not meta):
        # one string, as it was sent (or, from elsewhere, the form every role takes: an assistant's
        # output_text parts are an output item, which needs the id and status only OpenAI gives)
        content = "\n\n".join(b["text"] for _, b in texts)
    elif mode == "str" and not texts:
        content = ""
    else:
        content = []
        for k, (_, block) in enumerate(texts):
            if block["type"] == "text":
                part = {"type": text_part_type(role), "text": block["text"]}
                part.update(common.copied(part_extras.get(str(k), {})))
                content.append(part)
            else:
                content.append(common.copied(block["value"]))
    item: dict[str, Any] = {"type": "message", "role": role, "content": content}
    if first:
        if meta.get("untyped"):
            del item["type"]
        item.update(common.copied(meta.get("items", {}).get("message", {})))
    return item


def _still_follows(message: Message, meta: dict[str, Any]) -> bool:
    """Whether the item that stored reasoning was sent before is still in ``message``.

    OpenAI refuses a reasoning item without its required following item, so reasoning goes with the
    call or reply it preceded (a drop or a tombstone leaves only the thinking behind).
    """
    precedes = meta.get("precedes")
    if not isinstance(precedes, str):
        return True
    kind, _, call_id = precedes.partition(":")
    if kind == "call":
        return any(b["type"] == "tool_call" and b["id"] == call_id for b in message["content"])
    return any(b["type"] != "thinking" for b in message["content"])


def _convert(message: Message, i: int, seen: dict[str, int]) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    role = str(meta.get("role", message["role"]))
    stored = list(meta.get("reasoning", []))
    item_extras = meta.get("items", {})
    out: list[dict[str, Any]] = []
    texts: list[tuple[int, Block]] = []
    first_message = True

    def close() -> None:
        nonlocal first_message
        if texts:
            out.append(_message_item(texts, role, meta, first_message))
            first_message = False
            texts.clear()

    thinking_index = 0
    orphaned = not _still_follows(message, meta)
    for j, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text" or common.is_raw(block, FORMAT):
            texts.append((j, block))
            continue
        close()
        if kind == "thinking" and orphaned:
            continue
        if kind == "thinking":
            if thinking_index < len(stored) and _reasoning_text(stored[thinking_index]) == block["thinking"]:
                out.append(common.copied(stored[thinking_index]))
            else:
                out.append(
                    {
                        "type": "reasoning",
                        "id": common.content_id("rs_", block["thinking"], seen),
                        "summary": [{"type": "summary_text", "text": block["thinking"]}],
                    }
                )
            thinking_index += 1
        elif kind == "tool_call":
            if message["role"] != "assistant":
                raise SnapshotError(
                    "only assistant messages can hold tool calls", message=i, block=j, field="type"
                )
            out.append(
                {
                    "type": "function_call",
                    "call_id": block["id"],
                    "name": block["name"],
                    "arguments": block["input"],
                    **common.copied(item_extras.get(f"call:{block['id']}", {})),
                }
            )
        elif kind == "tool_result":
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": block["id"],
                    "output": _output(block, i, j),
                    **common.copied(item_extras.get(f"output:{block['id']}", {})),
                }
            )
        elif common.is_raw(block, ITEM):
            out.append(common.copied(block["value"]))
        else:
            raise common.unsupported("OpenAI Responses items", block, i, j)
    close()
    if not message["content"]:
        out.append(_message_item([], role, meta, True))
    return out


def to_openai_responses(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to OpenAI Responses input items.

    Thinking becomes a ``reasoning`` item placed before what follows it (the original item when the text is
    unchanged, else a summary-only one with an id derived from its text); calls and results become
    ``function_call`` / ``function_call_output`` items paired by ``call_id``. Results carry no error flag.
    """
    seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        out.extend(_convert(message, i, seen))
    return out
