"""Converters between the neutral snapshot and LangChain messages (langchain-core, imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracetrim._json import round_trip
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

FORMAT = "langchain"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a text or reasoning block holding its part's other fields (on a raw block, whether it
repeats a call)."""
_REPEATS_CALL = "repeats_call"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "assistant"}
_TEXT_FIELD = {"text": "text", "thinking": "thinking", "reasoning": "reasoning"}
_MAPPED = frozenset({"content", "type", "id", "name", "tool_calls", "tool_call_id", "status"})


def _part_to_block(part: Any) -> Block:
    if isinstance(part, dict) and common.tag(part.get("type")) in _TEXT_FIELD:
        field = _TEXT_FIELD[part["type"]]
        text = part.get(field)
        if isinstance(text, str):
            rest = {k: v for k, v in part.items() if k != field}
            kind = "text" if part["type"] == "text" else "thinking"
            block: Block = {"type": kind, kind: text}
            if rest != {"type": "text" if kind == "text" else "reasoning"}:
                # On the block, not the message: a block moved into another message (a joined turn)
                # takes its own fields (an "extras" cache_control) with it.
                block[BLOCK_EXTRAS] = common.copied(rest)
            return block
    return common.raw_block(FORMAT, common.copied(part))


def _blocks_of(content: Any, i: int, meta: dict[str, Any]) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise SnapshotError("content must be a string or a list", message=i, field="content")
    meta["content"] = "list"
    return [_part_to_block(part) for part in content]


def _extras(message: BaseMessage, i: int) -> dict[str, Any]:
    """The fields with non-default values that the neutral form has no place for."""
    out: dict[str, Any] = {}
    fields = type(message).model_fields
    for name, info in fields.items():
        if name in _MAPPED:
            continue
        value = getattr(message, name)
        if value != info.get_default(call_default_factory=True):
            out[name] = value
    return _json_copy(out, "a field", i)


def _json_copy(value: dict[str, Any], what: str, i: int) -> dict[str, Any]:
    """A plain-JSON copy of ``value``; `SnapshotError` naming ``what`` when it is not JSON."""
    try:
        copied: dict[str, Any] = round_trip(value, _model_dump)
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"{what} is not JSON-serialisable ({exc})", message=i) from None
    return copied


def _model_dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


_CALL_PARTS = frozenset({"tool_use", "tool_call", "function_call"})


def _repeats_a_call(block: Block) -> bool:
    """Whether a raw content part is a tool call repeated in the content (ChatAnthropic's ``tool_use``)."""
    value = block.get("value")
    return (
        common.is_raw(block, FORMAT)
        and isinstance(value, dict)
        and common.tag(value.get("type")) in _CALL_PARTS
        and isinstance(value.get("id"), str)
    )


def from_langchain(messages: Sequence[Any]) -> list[Message]:
    """Convert LangChain messages (``HumanMessage``, ``AIMessage``, ``SystemMessage``, ``ToolMessage``).

    Message ids are kept (invented from content where ``id`` is None, and mapped back to None). An
    ``AIMessage``'s ``tool_calls`` become tool_call blocks; a ``ToolMessage`` becomes an assistant message
    holding one tool_result whose state is the message's ``status`` and whose ``metadata`` is
    ``response_metadata["tracetrim.block_metadata"]`` (where `to_langchain` puts it: LangChain never sends
    a ``ToolMessage``'s ``response_metadata`` to a model, and it survives LangGraph state and
    checkpoints). Other non-default fields
    (``additional_kwargs``, ``response_metadata``, ``usage_metadata``, ...) go in
    ``metadata["tracetrim.langchain"]``.
    """
    from langchain_core.messages import BaseMessage

    common.require_sequence(messages, "messages", "messages")
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise SnapshotError(f"expected a LangChain message, got {type(message).__name__}", message=i)
        kind = message.type
        if kind not in _ROLES:
            raise SnapshotError(f"unsupported message type {kind!r}", message=i, field="type")
        meta: dict[str, Any] = {}
        if kind == "tool":
            meta["type"] = "tool"
        fingerprint = [
            kind,
            message.content,
            getattr(message, "tool_calls", None),
            getattr(message, "tool_call_id", None),
        ]
        if message.id is None:
            neutral_id = common.message_id("lc-", fingerprint, seen, i)
            meta["invented_id"] = True
        else:
            neutral_id = message.id
        neutral: Message = {"id": neutral_id, "role": _ROLES[kind]}
        if kind == "tool":
            call_id = getattr(message, "tool_call_id", "")
            output: str | list[Block]
            if isinstance(message.content, str):
                output = message.content
            else:
                sub: dict[str, Any] = {}
                output = _blocks_of(message.content, i, sub)
            if message.name is not None:
                meta["tool_name"] = True
            status = getattr(message, "status", "success")
            result: Block = {
                "type": "tool_result",
                "id": call_id,
                "name": message.name if message.name is not None else names.get(call_id, ""),
                "output": output,
                "state": "error" if status == "error" else "success",
            }
            block_meta = message.response_metadata.get(common.BLOCK_METADATA)
            if isinstance(block_meta, dict):
                result["metadata"] = _json_copy(block_meta, "tool result metadata", i)
            neutral["content"] = [result]
        else:
            if message.name is not None:
                neutral["name"] = message.name
            blocks = _blocks_of(message.content, i, meta)
            invented: list[str] = []
            for call in getattr(message, "tool_calls", None) or []:
                call_id = call.get("id")
                if not call_id:
                    call_id = common.content_id("lc-call-", [neutral_id, call["name"], call["args"]], seen)
                    invented.append(call_id)
                names[call_id] = call["name"]
                try:
                    arguments = common.dump_input(call["args"])
                except (TypeError, ValueError) as exc:
                    raise SnapshotError(
                        f"tool call args are not JSON ({exc})", message=i, field="tool_calls"
                    ) from None
                blocks.append(
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": call["name"],
                        "input": arguments,
                        "state": "finished",
                    }
                )
            if invented:
                meta["invented_call_ids"] = invented
            if kind == "ai":
                meta[common.POSITION] = i
            for block in blocks:
                if _repeats_a_call(block) and block["value"]["id"] in names:
                    # Marked on the block: a joined turn moves it into a message whose own record
                    # would not name it, and it must still go when its call goes.
                    block[BLOCK_EXTRAS] = {_REPEATS_CALL: True}
            neutral["content"] = blocks
        extra = _extras(message, i)
        response_metadata = extra.get("response_metadata")
        # The block metadata went on the result above; anything else under the key stays where it was.
        if (
            kind == "tool"
            and isinstance(response_metadata, dict)
            and isinstance(response_metadata.get(common.BLOCK_METADATA), dict)
        ):
            del response_metadata[common.BLOCK_METADATA]
            if not response_metadata:
                del extra["response_metadata"]
        if extra:
            meta["extra"] = extra
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _content(
    texts: list[Block], meta: dict[str, Any], role: str, first: bool, i: int, parts_key: str = "parts"
) -> str | list[Any]:
    part_extras = meta.get(parts_key, {}) if first else {}
    as_list = (
        (first and meta.get("content") == "list") or len(texts) > 1 or any(b["type"] != "text" for b in texts)
    )
    if not as_list:
        return texts[0]["text"] if texts else ""
    parts: list[Any] = []
    for k, block in enumerate(texts):
        if common.is_raw(block, FORMAT):
            parts.append(common.copied(block["value"]))
            continue
        if block["type"] == "text":
            part: dict[str, Any] = {"type": "text"}
        elif block["type"] == "thinking":
            part = {"type": "reasoning"}
        else:
            raise common.unsupported("LangChain content", block, i, k)
        # Snapshots archived before block extras kept a message's part fields by index.
        extras = block.get(BLOCK_EXTRAS, part_extras.get(str(k)))
        part.update(common.copied(extras) if isinstance(extras, dict) else {})
        part[_TEXT_FIELD[part["type"]] if part["type"] in _TEXT_FIELD else block["type"]] = block[
            "text" if block["type"] == "text" else "thinking"
        ]
        parts.append(part)
    return parts


def _convert(message: Message, i: int) -> list[BaseMessage]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    meta = common.format_meta(message, FORMAT)
    extra = meta.get("extra", {})
    role = message["role"]
    out: list[BaseMessage] = []
    texts: list[Block] = []
    calls: list[dict[str, Any]] = []
    invented = set(meta.get("invented_call_ids", []))
    # A content part that repeats a call goes with the call: a tool_use block whose call was dropped would
    # reach the provider with no tool_result (langchain-anthropic sends the content blocks as they are).
    present = {b["id"] for b in message["content"] if b["type"] == "tool_call"}
    recorded = set(meta.get("call_parts", []))  # how snapshots archived before the mark named them
    started = False

    def next_id() -> str | None:
        if not out:
            return None if meta.get("invented_id") else message.get("id")
        base = message.get("id")
        return f"{base}.{len(out)}" if base else None

    def close(force: bool = False) -> None:
        nonlocal started
        if not (started or force):
            return
        first = not out
        kwargs: dict[str, Any] = dict(common.copied(extra)) if first else {}
        kwargs["content"] = _content(texts, meta, role, first, i)
        kwargs["id"] = next_id()
        if message.get("name") is not None:
            kwargs["name"] = message["name"]
        if role == "assistant":
            out.append(AIMessage(tool_calls=list(calls), **kwargs))
        elif calls:
            raise SnapshotError("only assistant messages can hold tool calls", message=i, field="content")
        elif role == "user":
            out.append(HumanMessage(**kwargs))
        else:
            out.append(SystemMessage(**kwargs))
        texts.clear()
        calls.clear()
        started = False

    for j, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "tool_result":
            close()
            output = block["output"]
            content: Any = (
                output
                if isinstance(output, str)
                else _content(
                    [b if isinstance(b, dict) else {} for b in output],
                    {"content": "list", **meta},
                    role,
                    True,
                    i,
                    "output_parts",
                )
            )
            kwargs = dict(common.copied(extra)) if not out else {}
            if isinstance(block.get("metadata"), dict):
                kwargs["response_metadata"] = {
                    **kwargs.get("response_metadata", {}),
                    common.BLOCK_METADATA: common.copied(block["metadata"]),
                }
            tool = ToolMessage(
                content=content,
                tool_call_id=block["id"],
                id=next_id(),
                name=block["name"] if meta.get("tool_name") else None,
                status="error" if block.get("state") == "error" else "success",
                **kwargs,
            )
            out.append(tool)
            continue
        if kind == "tool_call":
            if role != "assistant":
                raise SnapshotError(
                    "only assistant messages can hold tool calls", message=i, block=j, field="type"
                )
            calls.append(
                {
                    "name": block["name"],
                    "args": common.parse_input(block, i, j),
                    "id": None if block["id"] in invented else block["id"],
                    "type": "tool_call",
                }
            )
        elif (
            _repeats_a_call(block)
            and (common.recorded(block, BLOCK_EXTRAS).get(_REPEATS_CALL) or block["value"]["id"] in recorded)
            and block["value"]["id"] not in present
        ):
            continue
        elif kind in ("text", "thinking") or common.is_raw(block, FORMAT):
            # Text after calls stays in their AIMessage: a message of its own would stand between the
            # calls and their ToolMessages (a tombstone where a dropped call stood, most often).
            texts.append(block)
        else:
            raise common.unsupported("LangChain messages", block, i, j)
        started = True
    close(force=not out)
    return out


def to_langchain(messages: Sequence[Any]) -> list[BaseMessage]:
    """Convert neutral messages to LangChain messages (requires ``langchain-core``).

    A neutral message with calls and results becomes an ``AIMessage`` with ``tool_calls`` followed by one
    ``ToolMessage`` per result; pieces after the first get the id ``"<id>.<n>"``. Thinking becomes a
    ``reasoning`` content block; state ``error`` becomes ``status="error"``; a tool_result's ``metadata``
    (tracetrim's shortened-result marker among it) goes in the ``ToolMessage``'s
    ``response_metadata["tracetrim.block_metadata"]``.
    """
    out: list[BaseMessage] = []
    for i, message in enumerate(common.neutral_input(messages)):
        out.extend(_convert(message, i))
    return out
