"""Converters between the neutral snapshot and pydantic-ai messages (pydantic-ai, imported lazily)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracetrim._json import strict_loads
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

FORMAT = "pydantic_ai"
_PART_ROLE = {
    "system-prompt": "system",
    "user-prompt": "user",
    "tool-return": "assistant",
    "retry-prompt": "assistant",
}
_OUTCOME = {"success": "success", "failed": "error", "denied": "denied", "interrupted": "interrupted"}
_STATE = {"success": "success", "error": "failed", "denied": "denied", "interrupted": "interrupted"}


def _output_of(content: Any, extra: dict[str, Any]) -> str:
    if isinstance(content, str):
        return content
    extra["json_content"] = True
    return common.dump_input(content)


def _part_to_block(part: dict[str, Any]) -> tuple[Block, dict[str, Any]]:
    kind = part.get("part_kind")
    if kind in ("system-prompt", "text", "thinking") or (
        kind == "user-prompt" and isinstance(part["content"], str)
    ):
        block_type = "thinking" if kind == "thinking" else "text"
        return {"type": block_type, block_type: part["content"]}, {
            k: v for k, v in part.items() if k != "content"
        }
    if kind == "tool-call":
        extra = {k: v for k, v in part.items() if k not in ("tool_name", "args", "tool_call_id")}
        args = part["args"]
        if isinstance(args, str):
            tool_input = args
        else:
            extra["args_form"] = "none" if args is None else "dict"
            tool_input = common.dump_input({} if args is None else args)
        return {
            "type": "tool_call",
            "id": part["tool_call_id"],
            "name": part["tool_name"],
            "input": tool_input,
            "state": "finished",
        }, extra
    if kind == "tool-return" or (kind == "retry-prompt" and part.get("tool_name")):
        extra = {k: v for k, v in part.items() if k not in ("tool_name", "content", "tool_call_id")}
        output = _output_of(part["content"], extra)
        state = _OUTCOME.get(part.get("outcome", "success"), "error") if kind == "tool-return" else "error"
        result: Block = {
            "type": "tool_result",
            "id": part["tool_call_id"],
            "name": part["tool_name"],
            "output": output,
            "state": state,
        }
        if isinstance(extra.get("metadata"), dict):  # other values stay with the part's own fields
            result["metadata"] = extra.pop("metadata")
        return result, extra
    return common.raw_block(FORMAT, part), {}


def from_pydantic_ai(messages: Sequence[Any]) -> list[Message]:
    """Convert pydantic-ai ``ModelRequest`` / ``ModelResponse`` messages to neutral messages.

    A response becomes one assistant message. A request is split by role: system prompts, user prompts,
    and tool returns (an assistant message, as AgentScope keeps results there); the pieces share a
    ``group`` in ``metadata["tracetrim.pydantic_ai"]`` so they are joined again on the way back. A
    ``RetryPromptPart`` for a tool is a result in state ``error``; ``outcome`` maps to the state. A
    ``ToolReturnPart``'s ``metadata`` (never sent to the model) is the result block's ``metadata`` when it
    is an object, so tracetrim's shortened-result marker survives the round trip.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    common.require_sequence(messages, "messages", "messages")
    try:
        dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    except Exception as exc:  # pydantic raises several types for objects that are not pydantic-ai messages
        raise SnapshotError(f"not a list of pydantic-ai messages ({exc})") from None
    seen: dict[str, int] = {}
    out: list[Message] = []
    for i, message in enumerate(dumped):
        skeleton = {k: v for k, v in message.items() if k != "parts"}
        group = common.message_id("pa-", message, seen, i)
        pieces: list[tuple[str, list[Block], dict[str, Any]]] = []
        for part in message["parts"]:
            role = (
                "assistant"
                if message["kind"] == "response"
                else _PART_ROLE.get(part.get("part_kind", ""), "assistant")
            )
            block, extra = _part_to_block(part)
            if not pieces or pieces[-1][0] != role:
                pieces.append((role, [], {}))
            if extra:
                pieces[-1][2][str(len(pieces[-1][1]))] = extra
            pieces[-1][1].append(block)
        if not pieces:
            pieces.append(("assistant" if message["kind"] == "response" else "user", [], {}))
        for k, (role, blocks, extras) in enumerate(pieces):
            meta: dict[str, Any] = {"group": group}
            if k == 0:
                meta["message"] = skeleton
            if extras:
                meta["parts"] = extras
            out.append(
                common.attach_meta(
                    {"id": group if k == 0 else f"{group}.{k}", "role": role, "content": blocks}, FORMAT, meta
                )
            )
    return common.mark_pending(out)


def last_message_ids(neutral: Sequence[Message]) -> list[str]:
    """The ids of the neutral messages the last pydantic-ai message became (`from_pydantic_ai` splits a
    request by role; its pieces share a group, which no other message has)."""
    if not neutral:
        return []
    group = common.format_meta(neutral[-1], FORMAT).get("group")
    ids: list[str] = []
    for message in reversed(neutral):
        if common.format_meta(message, FORMAT).get("group") != group:
            break
        ids.append(message["id"])
    return ids[::-1]


def _block_to_part(
    block: Block, recorded: dict[str, Any] | None, kind: str, i: int, j: int
) -> dict[str, Any]:
    btype = block["type"]
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    extra = copy.deepcopy(recorded or {})
    if btype in ("text", "thinking"):
        if btype == "thinking":
            default = "thinking"
        elif kind == "response":
            default = "text"
        else:
            default = "user-prompt" if extra.get("part_kind") != "system-prompt" else "system-prompt"
        if extra.get("part_kind", default) != default:
            extra = {}
        return {**extra, "part_kind": default, "content": block[btype]}
    if btype == "tool_call":
        if extra.get("part_kind", "tool-call") != "tool-call":
            extra = {}
        form = extra.pop("args_form", None)
        args: Any = block["input"]
        if form is not None:
            try:
                args = strict_loads(block["input"])
            except ValueError:
                form = None
            if form == "none" and args == {}:
                args = None
        return {
            **extra,
            "part_kind": "tool-call",
            "tool_name": block["name"],
            "args": args,
            "tool_call_id": block["id"],
        }
    if btype == "tool_result":
        if extra.get("part_kind") not in (None, "tool-return", "retry-prompt"):
            extra = {}
        output = block["output"]
        if not isinstance(output, str):
            texts = []
            for inner in output:
                if not (isinstance(inner, dict) and inner.get("type") == "text"):
                    raise common.unsupported(
                        "pydantic-ai tool returns", inner if isinstance(inner, dict) else {}, i, j
                    )
                texts.append(inner["text"])
            output = "\n".join(texts)
        content: Any = output
        if extra.pop("json_content", False):
            try:
                content = strict_loads(output)
            except ValueError:
                content = output
        state = block.get("state", "success")
        if extra.get("part_kind") == "retry-prompt" and state == "error":
            return {**extra, "tool_name": block["name"], "content": content, "tool_call_id": block["id"]}
        extra.pop("part_kind", None)
        if _OUTCOME.get(extra.get("outcome", "success"), "error") != state:
            extra["outcome"] = _STATE.get(state, "failed")
        if isinstance(block.get("metadata"), dict):
            extra["metadata"] = copy.deepcopy(block["metadata"])
        return {
            **extra,
            "part_kind": "tool-return",
            "tool_name": block["name"],
            "content": content,
            "tool_call_id": block["id"],
        }
    raise common.unsupported("pydantic-ai messages", block, i, j)


def to_pydantic_ai(messages: Sequence[Any]) -> list[ModelMessage]:
    """Convert neutral messages to pydantic-ai messages (requires ``pydantic-ai-slim``).

    Pieces of one original request are joined again; otherwise system, user and tool-result content goes in
    ``ModelRequest`` parts (consecutive ones share a request) and assistant text, thinking and calls in
    ``ModelResponse`` parts. States other than ``success`` set the return's ``outcome``; a result's
    ``metadata`` becomes the ``ToolReturnPart``'s ``metadata``. A ``RetryPromptPart`` has no metadata field,
    so a result that came from one loses its ``metadata`` (the adapters re-derive tracetrim's marker from
    the result text with `tracetrim.harness_adapter.restore_markers`).
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    neutral = common.neutral_input(messages)
    out: list[dict[str, Any]] = []
    last_group: str | None = None
    for i, message in enumerate(neutral):
        meta = common.format_meta(message, FORMAT)
        group = meta.get("group")
        recorded = meta.get("parts", {})
        joined = group is not None and group == last_group and bool(out)
        if "message" in meta and not joined:
            out.append({**copy.deepcopy(meta["message"]), "parts": []})
            joined = True
        for j, block in enumerate(message["content"]):
            if block["type"] == "tool_call" and message["role"] != "assistant":
                raise SnapshotError(
                    "only assistant messages can hold tool calls", message=i, block=j, field="type"
                )
            if joined:
                kind = out[-1]["kind"]
            elif (
                block["type"] == "tool_result"
                or message["role"] != "assistant"
                or (
                    common.is_raw(block, FORMAT)
                    and "part_kind" in block["value"]
                    and block["value"]["part_kind"] in _PART_ROLE
                )
            ):
                kind = "request"
            else:
                kind = "response"
            if not out or out[-1]["kind"] != kind:
                out.append({"kind": kind, "parts": []})
                joined = False
            record = recorded.get(str(j))
            if message["role"] == "system" and record is None and kind == "request":
                record = {"part_kind": "system-prompt"}
            out[-1]["parts"].append(_block_to_part(block, record, kind, i, j))
        last_group = group
    try:
        result: list[ModelMessage] = ModelMessagesTypeAdapter.validate_python(out)
    except Exception as exc:  # a validation error here means a raw part no longer fits its message
        raise SnapshotError(f"cannot build pydantic-ai messages ({exc})") from None
    return result
