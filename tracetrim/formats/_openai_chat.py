"""Converters between the neutral snapshot and OpenAI chat-completions messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

FORMAT = "openai_chat"
_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "assistant",
}
_NO_TEXT = {"null": None, "empty": ""}


def _content_blocks(message: dict[str, Any], i: int, meta: dict[str, Any], *, has_calls: bool) -> list[Block]:
    if "content" not in message:
        meta["content"] = "absent"
        return []
    content = message["content"]
    if isinstance(content, str):
        if content:
            return [{"type": "text", "text": content}]
        if has_calls:
            meta["content"] = "empty"
        return []
    if content is None:
        if not has_calls:
            meta["content"] = "null"
        return []
    if isinstance(content, list):
        blocks = common.text_parts(content, FORMAT)
        if (len(blocks) == 1 and blocks[0]["type"] == "text") or not blocks:
            meta["content"] = "parts"
        return blocks
    raise SnapshotError("content must be a string, null or a list of parts", message=i, field="content")


def _tool_call_block(call: Any, i: int, meta: dict[str, Any]) -> Block:
    call = common.require_dict(call, "a tool call", message=i, field="tool_calls")
    function = common.require_dict(
        call.get("function"), "a tool call's function", message=i, field="tool_calls"
    )
    call_id = common.require_str(call.get("id"), "a tool call id", message=i, field="tool_calls")
    if not call_id:
        raise SnapshotError("a tool call id must not be empty", message=i, field="tool_calls")
    if call.get("type") != "function":
        raise SnapshotError("only tool calls of type 'function' are supported", message=i, field="tool_calls")
    name = common.require_str(
        function.get("name"), "a tool call's function name", message=i, field="tool_calls"
    )
    arguments = common.require_str(
        function.get("arguments"), "a tool call's arguments", message=i, field="tool_calls"
    )
    extra = common.extras(call, ("id", "type", "function"))
    extra_fn = common.extras(function, ("name", "arguments"))
    if extra or extra_fn:
        meta.setdefault("call_extras", {})[call_id] = {"call": extra, "function": extra_fn}
    return {"type": "tool_call", "id": call_id, "name": name, "input": arguments, "state": "finished"}


def from_openai_chat(messages: Sequence[Any]) -> list[Message]:
    """Convert OpenAI chat-completions messages to neutral messages (ids derived from content).

    Each chat message becomes one neutral message; a ``tool`` message becomes an assistant message holding
    one ``tool_result`` (AgentScope keeps tool results on the assistant side). Whatever the neutral form
    cannot say (the original role, content shape, extra keys) goes in ``metadata["tracetrim.openai_chat"]``.
    """
    common.require_sequence(messages, "messages", "message objects")
    names: dict[str, str] = {}
    seen: dict[str, int] = {}
    out: list[Message] = []
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.tag(message.get("role"))
        if role not in _ROLES:
            raise SnapshotError(f"unsupported role {message.get('role')!r}", message=i, field="role")
        meta: dict[str, Any] = {}
        if role != _ROLES[role]:
            meta["role"] = role
        neutral: Message = {"id": common.message_id("oc-", message, seen, i), "role": _ROLES[role]}
        if role == "tool":
            call_id = common.require_str(
                message.get("tool_call_id"), "tool_call_id", message=i, field="tool_call_id"
            )
            content = message.get("content")
            output = common.result_output(content, FORMAT, "a tool message", message=i)
            if "name" in message:
                name = common.require_str(message["name"], "a tool message's name", message=i, field="name")
                meta["tool_name"] = True
            else:
                name = names.get(call_id, "")
            neutral["content"] = [
                {"type": "tool_result", "id": call_id, "name": name, "output": output, "state": "success"}
            ]
            extra = common.extras(message, ("role", "tool_call_id", "content", "name"))
        else:
            if "name" in message:
                neutral["name"] = common.require_str(message["name"], "name", message=i, field="name")
            calls = message.get("tool_calls") if role == "assistant" else None
            if calls is not None and not isinstance(calls, list):
                raise SnapshotError("tool_calls must be a list", message=i, field="tool_calls")
            blocks = _content_blocks(message, i, meta, has_calls=bool(calls))
            if calls is not None:
                if not calls:
                    meta["empty_tool_calls"] = True
                for call in calls:
                    block = _tool_call_block(call, i, meta)
                    names[block["id"]] = block["name"]
                    blocks.append(block)
            neutral["content"] = blocks
            extra = common.extras(
                message,
                ("role", "content", "name", "tool_calls")
                if role == "assistant"
                else ("role", "content", "name"),
            )
        if extra:
            meta["extra"] = common.copied(extra)
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _chat_part(block: Block, i: int, j: int) -> Any:
    return common.written_part(block, FORMAT, "OpenAI chat", i, j)


def _tool_output(block: Block, i: int, j: int) -> str | list[Any]:
    output = block["output"]
    if isinstance(output, str):
        return output
    parts = []
    for part in output:
        if not isinstance(part, dict):
            raise SnapshotError(
                "a tool result's output blocks must be objects", message=i, block=j, field="output"
            )
        parts.append(_chat_part(part, i, j))
    return parts


class _Segment:
    """One chat message being assembled from a run of neutral blocks (thinking is not carried)."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, Block]] = []
        self.calls: list[Block] = []
        self.only_thinking = True


def _content_of(segment: _Segment, meta: dict[str, Any], first: bool, i: int) -> tuple[bool, Any]:
    """Whether the chat message has a ``content`` key, and its value."""
    mode = meta.get("content") if first else None
    texts = segment.parts
    if mode == "parts" or len(texts) > 1 or any(b["type"] != "text" for _, b in texts):
        return True, [_chat_part(b, i, j) for j, b in texts]
    if texts:
        return True, texts[0][1]["text"]
    if mode == "absent":
        return False, None
    if mode in _NO_TEXT:
        return True, _NO_TEXT[mode]
    return True, None if segment.calls else ""


def _assistant_like(
    segment: _Segment, message: Message, meta: dict[str, Any], role: str, first: bool, i: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role}
    has_content, content = _content_of(segment, meta, first, i)
    if has_content:
        out["content"] = content
    if "name" in message:
        out["name"] = message["name"]
    call_extras = meta.get("call_extras", {}) if first else {}
    if segment.calls:
        calls = []
        for block in segment.calls:
            extra = call_extras.get(block["id"], {})
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {
                        "name": block["name"],
                        "arguments": block["input"],
                        **extra.get("function", {}),
                    },
                    **extra.get("call", {}),
                }
            )
        out["tool_calls"] = calls
    elif first and meta.get("empty_tool_calls"):
        out["tool_calls"] = []
    return out


def _convert(message: Message, i: int) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    role = str(meta.get("role", message["role"]))
    if role == "tool":
        role = "assistant"
    out: list[dict[str, Any]] = []
    segment: _Segment | None = None

    def close() -> None:
        nonlocal segment
        if segment is not None and not segment.only_thinking:
            out.append(_assistant_like(segment, message, meta, role, not out, i))
        segment = None

    for j, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "tool_result":
            close()
            tool: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": block["id"],
                "content": _tool_output(block, i, j),
            }
            if meta.get("tool_name"):
                tool["name"] = block["name"]
            out.append(tool)
            continue
        if segment is None:
            segment = _Segment()
        if kind == "thinking":
            continue
        segment.only_thinking = False
        if kind == "tool_call":
            if message["role"] != "assistant":
                raise SnapshotError(
                    "only assistant messages can hold tool calls", message=i, block=j, field="type"
                )
            segment.calls.append(block)
        elif kind == "text" or common.is_raw(block, FORMAT):
            segment.parts.append((j, block))
        else:
            raise common.unsupported("OpenAI chat", block, i, j)
    close()
    if not out and not message["content"]:
        # An empty neutral message still stands for one chat turn; one holding only thinking has no turn.
        out.append(_assistant_like(_Segment(), message, meta, role, True, i))
    if meta.get("extra"):
        out[0].update(common.copied(meta["extra"]))
    return out


def to_openai_chat(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to OpenAI chat-completions messages.

    A neutral message holding calls and results becomes an assistant message with ``tool_calls`` followed by
    one ``tool`` message per result, in block order; text or calls after a result start a new assistant
    message. OpenAI chat has no message ids, no thinking and no error flag on results: those are dropped.

    An assistant turn a drop left with only its text and tombstone joins the assistant message after it
    (tombstone first): OpenAI takes two assistant messages in a row, but the chat templates of many
    OpenAI-compatible servers ("Conversation roles must alternate user/assistant/...") and Gemini's
    mapping refuse them.
    """
    out: list[dict[str, Any]] = []
    bared: set[int] = set()
    for i, message in enumerate(common.neutral_input(messages)):
        converted = _convert(message, i)
        if common.is_bared(message) and len(converted) == 1:
            bared.add(id(converted[0]))
        out.extend(converted)
    return _join_bared(out, bared) if bared else out


def _parts(content: Any) -> list[Any]:
    if content is None or content == "":
        return []
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


class _Run:
    """Assistant turns joined into one: a tombstoned turn and the assistant turns after it, up to the
    first that is not one. Texts stay strings while every turn's content is one (joined by a blank
    line), else become parts; gathered, then built once, so a long run is not rebuilt at every turn."""

    def __init__(self, first: dict[str, Any]) -> None:
        self.turns = [first]
        self.texts: list[str] = []
        self.parts: list[Any] | None = None
        self._take(first.get("content"))

    def _take(self, content: Any) -> None:
        if self.parts is None and (isinstance(content, str) or content is None):
            if content:
                self.texts.append(content)
            return
        if self.parts is None:
            self.parts = _parts("\n\n".join(self.texts))
        self.parts += _parts(content)

    def add(self, message: dict[str, Any]) -> None:
        """``message`` joined at the end: its fields are the joined turn's."""
        self.turns.append(message)
        self._take(message.get("content"))

    def message(self) -> dict[str, Any]:
        """The joined turn (the first turn itself when nothing joined it)."""
        if len(self.turns) == 1:
            return self.turns[0]
        content = self.parts if self.parts is not None else "\n\n".join(self.texts)
        return {**self.turns[-1], "content": content}


def _join_bared(out: list[dict[str, Any]], bared: set[int]) -> list[dict[str, Any]]:
    joined: list[dict[str, Any]] = []
    run: _Run | None = None
    for message in out:
        if run is not None and message["role"] == "assistant":
            run.add(message)
            if id(message) not in bared:  # a run of bared turns joins into the first turn after it
                joined.append(run.message())
                run = None
            continue
        if run is not None:
            joined.append(run.message())
            run = None
        if id(message) in bared:
            run = _Run(message)
        else:
            joined.append(message)
    if run is not None:
        joined.append(run.message())
    return joined
