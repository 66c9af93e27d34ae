"""Converters between the neutral snapshot and pydantic-ai messages (pydantic-ai, imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracetrim._json import strict_loads
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

FORMAT = "pydantic_ai"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a block holding its part's fields that the neutral block has no place for."""
_PART_ROLE = {
    "system-prompt": "system",
    "user-prompt": "user",
    "tool-return": "assistant",
    "retry-prompt": "assistant",
}
_KINDS = frozenset({"request", "response"})
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
        args = part.get("args")  # optional in pydantic-ai: a call without arguments may leave it out
        if isinstance(args, str):
            tool_input = args
        else:
            extra["args_form"] = "absent" if "args" not in part else "none" if args is None else "dict"
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
    return _from_dumped(dumped)


def is_pydantic_ai_message(message: Any) -> bool:
    """Whether ``message`` is a pydantic-ai message in its JSON form (``kind`` and ``parts``), by shape."""
    return (
        isinstance(message, dict)
        and common.tag(message.get("kind")) in _KINDS
        and isinstance(message.get("parts"), list)
        and "role" not in message
        and all(isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in message["parts"])
    )


def from_pydantic_ai_json(messages: Sequence[Any]) -> list[Message]:
    """Convert pydantic-ai messages in their JSON form to neutral messages, without pydantic-ai.

    The JSON form is what pydantic-ai's documented way to store a history writes
    (``ModelMessagesTypeAdapter.dump_json(result.all_messages())``); it reads as `from_pydantic_ai`
    reads the messages themselves. A message or part of the wrong shape raises `SnapshotError`
    naming its place; the caller's messages are not changed.
    """
    common.require_sequence(messages, "messages", "pydantic-ai message objects")
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a pydantic-ai message", message=i)
        if common.tag(message.get("kind")) not in _KINDS:
            raise SnapshotError(
                f"kind must be 'request' or 'response', got {message.get('kind')!r}", message=i, field="kind"
            )
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise SnapshotError("parts must be a list", message=i, field="parts")
        for j, part in enumerate(parts):
            _check_part(part, i, j)
    return _from_dumped(common.copied(list(messages)))


def _check_part(part: Any, i: int, j: int) -> None:
    """A part of the JSON form holds what the reader reads, of the types it reads."""
    if not isinstance(part, dict):
        raise SnapshotError("a part must be an object", message=i, block=j)
    kind = part.get("part_kind")
    if not isinstance(kind, str):
        raise SnapshotError("part_kind must be a string", message=i, block=j, field="part_kind")
    needed: tuple[str, ...] = ()
    if kind in ("tool-call", "tool-return") or (kind == "retry-prompt" and part.get("tool_name")):
        needed = ("tool_call_id", "tool_name")
    elif kind in ("system-prompt", "text", "thinking"):
        needed = ("content",)
    for key in needed:
        common.require_str(part.get(key), key, message=i, block=j, field=key)
    if kind == "tool-call" and not (part.get("args") is None or isinstance(part["args"], (str, dict))):
        raise SnapshotError("args must be a string, an object or null", message=i, block=j, field="args")
    if kind in ("tool-return", "retry-prompt", "user-prompt") and "content" not in part:
        raise SnapshotError("a part of this kind needs content", message=i, block=j, field="content")


def _from_dumped(dumped: list[dict[str, Any]]) -> list[Message]:
    """Neutral messages for pydantic-ai messages in their JSON form (owned: their values are reused)."""
    seen: dict[str, int] = {}
    out: list[Message] = []
    for i, message in enumerate(dumped):
        skeleton = {k: v for k, v in message.items() if k != "parts"}
        group = common.message_id("pa-", message, seen, i)
        pieces: list[tuple[str, list[Block]]] = []
        for part in message["parts"]:
            role = (
                "assistant"
                if message["kind"] == "response"
                else _PART_ROLE.get(part.get("part_kind", ""), "assistant")
            )
            block, extra = _part_to_block(part)
            if extra:
                # On the block, not by its place in the message: a drop before it, or a joined turn,
                # moves it, and its fields (a call's own id) must not become another part's.
                block[BLOCK_EXTRAS] = extra
            if not pieces or pieces[-1][0] != role:
                pieces.append((role, []))
            pieces[-1][1].append(block)
        if not pieces:
            pieces.append(("assistant" if message["kind"] == "response" else "user", []))
        for k, (role, blocks) in enumerate(pieces):
            # Every piece carries the message's own fields: a drop may empty the first piece (a request's
            # tool returns) and take it away, and the pieces left still write the request whole.
            own = skeleton if k == 0 else common.copied(skeleton)
            meta: dict[str, Any] = {"group": group, "message": own, common.POSITION: i}
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
    extra = common.copied(recorded or {})
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
            if form in ("none", "absent") and args == {}:
                args = None
        written = {**extra, "part_kind": "tool-call", "tool_name": block["name"], "args": args}
        if form == "absent" and args is None:
            del written["args"]
        return {**written, "tool_call_id": block["id"]}
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
            extra["metadata"] = common.copied(block["metadata"])
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
    the result text with `tracetrim.harness_adapter.restore_markers`). Two responses (or requests) that a
    drop made neighbours are joined into one, each part keeping its own fields: Gemini refuses two model
    turns in a row, and pydantic-ai's mappings pass them on as they are.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    out = to_pydantic_ai_json(messages)
    try:
        result: list[ModelMessage] = ModelMessagesTypeAdapter.validate_python(out)
    except Exception as exc:  # a validation error here means a raw part no longer fits its message
        raise SnapshotError(f"cannot build pydantic-ai messages ({exc})") from None
    return result


def to_pydantic_ai_json(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Neutral messages as pydantic-ai messages in their JSON form (what ``ModelMessagesTypeAdapter``
    dumps and loads), without pydantic-ai; `to_pydantic_ai` builds the messages themselves from it."""
    neutral = common.neutral_input(messages)
    out: list[dict[str, Any]] = []
    positions: list[int | None] = []
    last_group: str | None = None
    for i, message in enumerate(neutral):
        meta = common.format_meta(message, FORMAT)
        group = meta.get("group")
        recorded = meta.get("parts", {})
        joined = group is not None and group == last_group and bool(out)
        if "message" in meta and not joined:
            out.append({**common.copied(meta["message"]), "parts": []})
            positions.append(common.position_of(meta))
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
                positions.append(None)
                joined = False
            # Snapshots archived before block extras kept a message's part fields by place.
            record = block.get(BLOCK_EXTRAS, recorded.get(str(j)))
            if message["role"] == "system" and record is None and kind == "request":
                record = {"part_kind": "system-prompt"}
            out[-1]["parts"].append(_block_to_part(block, record, kind, i, j))
        last_group = group
    return common.join_turns(out, positions, "parts", role_of=_kind_of)


def _kind_of(message: Mapping[str, Any]) -> Any:
    return message.get("kind")
