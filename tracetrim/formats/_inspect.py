"""Converters between neutral messages and Inspect AI chat messages (an eval sample's ``messages``).

Shape, from ``inspect_ai.model._chat_message`` (UK AISI's Inspect): every message has an ``id`` and a
``role`` (``system`` / ``user`` / ``assistant`` / ``tool``); ``content`` is a string or a list of
content parts (``text``, ``reasoning``, ``image``, ``tool_use``, ...); an assistant's ``tool_calls``
are ``{"id", "function", "arguments": {...}, "type", "parse_error", "view"}``; a ``tool`` message
answers one by ``tool_call_id`` (``function``, ``error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._json import digest
from tracetrim._marker import mark_reasoned_call
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._layout import results_apart

FORMAT = "inspect"
CALL = "inspect.tool_call"
"""The tag of a raw block that is a call tracetrim does not judge (a parse error, odd arguments)."""
_ROLES = frozenset({"system", "user", "assistant", "tool"})
INSPECT_BEFORE_MESSAGES = (
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "description",
    "sandbox",
    "files",
    "setup",
)
"""The fields ``EvalSample`` declares before ``messages``: where the list goes back in a sample."""


def is_inspect_message(message: Any) -> bool:
    """Whether ``message`` has a shape only Inspect messages have: calls naming their tool in a string
    ``function`` (OpenAI's is an object), a ``tool`` message naming its ``function``, or a
    ``reasoning`` content part."""
    if not isinstance(message, dict):
        return False
    if message.get("role") == "tool" and isinstance(message.get("function"), str):
        return True
    calls = message.get("tool_calls")
    if isinstance(calls, list) and any(
        isinstance(c, dict) and isinstance(c.get("function"), str) for c in calls
    ):
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "reasoning" and "reasoning" in p for p in content
    )


def is_inspect_sample(data: Any) -> bool:
    """Whether ``data`` is one Inspect eval sample (``EvalSample``): ``messages`` beside ``epoch``."""
    return isinstance(data, dict) and isinstance(data.get("messages"), list) and "epoch" in data


def is_inspect_log(data: Any) -> bool:
    """Whether ``data`` is an Inspect eval log (``EvalLog``, as ``log_format="json"`` writes it, or an
    ``.eval`` archive read by `tracetrim.formats.parse_history_text`): ``eval`` beside ``samples``."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("samples"), list)
        and isinstance(data.get("eval"), dict)
    )


def _call(call: Any, i: int) -> Block:
    """A call the agent can have judged as a tool_call block; any other (a parse error, arguments that
    are not an object) as a raw block, carried and never judged."""
    if (
        isinstance(call, dict)
        and isinstance(call.get("id"), str)
        and call["id"]
        and isinstance(call.get("function"), str)
        and isinstance(call.get("arguments"), dict)
        and call.get("parse_error") is None
    ):
        return {
            "type": "tool_call",
            "id": call["id"],
            "name": call["function"],
            "input": common.dump_input(call["arguments"]),
            "state": "finished",
        }
    if not isinstance(call, dict):
        raise SnapshotError("a tool call must be an object", message=i, field="tool_calls")
    return common.raw_block(CALL, common.copied(call))


def _content(content: Any, i: int) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return common.text_parts(content, FORMAT)
    raise SnapshotError("content must be a string or a list of content parts", message=i, field="content")


def from_inspect(messages: Sequence[Any]) -> list[Message]:
    """Convert Inspect chat messages to neutral messages.

    A ``tool`` message becomes an assistant message holding one ``tool_result`` (state ``error`` when
    Inspect recorded an ``error``); an assistant's calls become tool_call blocks (input: ``arguments``
    as JSON). Text parts with fields of their own, reasoning, images and server-side tool uses ride as
    raw parts, never edited. The whole message is kept in ``metadata["tracetrim.inspect"]`` so
    `to_inspect` writes back every field as it was.
    """
    common.require_sequence(messages, "messages", "message objects")
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    out: list[Message] = []
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        if role == "tool":
            call_id = common.require_str(
                message.get("tool_call_id"), "tool_call_id", message=i, field="tool_call_id"
            )
            output = common.result_output(message.get("content", ""), FORMAT, "a tool message", message=i)
            name = message.get("function")
            blocks: list[Block] = [
                {
                    "type": "tool_result",
                    "id": call_id,
                    "name": name if isinstance(name, str) else names.get(call_id, ""),
                    "output": output,
                    "state": "error" if message.get("error") else "success",
                }
            ]
        else:
            blocks = _content(message.get("content", ""), i)
            calls = message.get("tool_calls") if role == "assistant" else None
            if calls is not None and not isinstance(calls, list):
                raise SnapshotError("tool_calls must be a list", message=i, field="tool_calls")
            called = [_call(call, i) for call in calls or ()]
            for block in called:
                if block["type"] == "tool_call":
                    names[block["id"]] = block["name"]
            if len(called) > 1 and called[0]["type"] == "tool_call" and _trailing_reasoning(message):
                mark_reasoned_call(called[0], called)  # the reasoning before it led to the others too
            blocks.extend(called)
        given = message.get("id")
        neutral: Message = {
            "id": given if isinstance(given, str) and given else common.message_id("in-", message, seen, i),
            "role": "assistant" if role == "tool" else role,
            "content": blocks,
        }
        out.append(common.attach_meta(neutral, FORMAT, {"message": common.copied(message)}))
    return common.mark_pending(out)


def _part(block: Block, i: int, j: int) -> Any:
    return common.written_part(block, FORMAT, "Inspect", i, j)


def _tool_message(block: Block, shell: dict[str, Any], i: int, j: int) -> dict[str, Any]:
    out: dict[str, Any] = common.copied(shell) if shell.get("role") == "tool" else {"role": "tool"}
    out.update({"tool_call_id": block["id"], "function": block["name"]})
    output = block["output"]
    out["content"] = output if isinstance(output, str) else [_part(part, i, j) for part in output]
    return out


def _written_content(blocks: list[Block], original: Any, i: int) -> Any:
    """The content field for ``blocks``: a string where it was one (or absent) and the blocks are one
    text, else a list of parts."""
    texts = [b for b in blocks if b["type"] == "text"]
    if not isinstance(original, list) and len(texts) == len(blocks) <= 1:
        return texts[0]["text"] if texts else ""
    return [_part(b, i, j) for j, b in enumerate(blocks)]


def _trailing_reasoning(shell: dict[str, Any]) -> list[Any]:
    """The reasoning parts ending the shell's content when it has calls: Inspect sends content before
    calls, so these are sent right before the first call."""
    content = shell.get("content")
    if not isinstance(content, list) or not shell.get("tool_calls"):
        return []
    trailing: list[Any] = []
    for part in reversed(content):
        if not (isinstance(part, dict) and part.get("type") == "reasoning"):
            break
        trailing.append(part)
    return trailing


def _placed_reasoning(parts: list[Block], shell: dict[str, Any], calls: list[Any]) -> list[Block]:
    """``parts`` with the reasoning sent right before the first call still right before it, text
    tracetrim added going ahead of it; or without that reasoning once the call is gone. OpenAI refuses
    a reasoning item not followed by the item it was sent before."""
    trailing = _trailing_reasoning(shell)
    if not trailing:
        return parts
    tail = [b for b in parts if common.is_raw(b, FORMAT) and b["value"] in trailing]
    rest = [b for b in parts if b not in tail]
    first = shell["tool_calls"][0]
    kept = isinstance(first, dict) and any(
        isinstance(c, dict) and c.get("id") == first.get("id") for c in calls
    )
    return rest + tail if kept else rest


def _assistant_like(message: Message, shell: dict[str, Any], i: int) -> dict[str, Any]:
    out = common.copied(shell) if shell else {"role": message["role"]}
    original_calls = {
        common.tag(c.get("id")): c for c in common.listed(shell.get("tool_calls")) if isinstance(c, dict)
    }
    parts: list[Block] = []
    calls: list[Any] = []
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_call":
            call = common.copied(original_calls.get(block["id"], {"id": block["id"], "type": "function"}))
            if common.dump_input(call.get("arguments")) != block["input"]:
                call["arguments"] = common.parse_input(block, i, j)
            call.update({"id": block["id"], "function": block["name"]})
            calls.append(call)
        elif common.is_raw(block, CALL):
            calls.append(common.copied(block["value"]))
        elif block["type"] == "text" or common.is_raw(block, FORMAT):
            parts.append(block)
        elif block["type"] == "thinking":  # from elsewhere (Inspect's own reasoning is read as it was)
            parts.append(common.raw_block(FORMAT, {"type": "reasoning", "reasoning": block["thinking"]}))
        else:
            raise common.unsupported("Inspect", block, i, j)
    out["content"] = _written_content(_placed_reasoning(parts, shell, calls), shell.get("content"), i)
    if calls:
        out["tool_calls"] = calls
    else:
        out.pop("tool_calls", None)
    return out


def _changed_id(written: dict[str, Any], shell: dict[str, Any]) -> None:
    """A message tracetrim changed gets an id of its own, derived from its old one and its new content:
    Inspect caches by message id (token counts, compaction baselines), as its own ``CompactionEdit``
    knows when it gives an edited message a new id."""
    old = shell.get("id")
    if isinstance(old, str) and written != shell:
        written["id"] = f"{old.split('~tt', 1)[0]}~tt{digest(written)[:8]}"


def _convert(message: Message, i: int) -> list[dict[str, Any]]:
    shell = common.format_meta(message, FORMAT).get("message")
    shell = shell if isinstance(shell, dict) else {}
    results = [(j, b) for j, b in enumerate(message["content"]) if b["type"] == "tool_result"]
    if results:
        if len(results) != len(message["content"]):
            raise SnapshotError(
                "a tool result must be the only block of its Inspect message", message=i, field="content"
            )
        written = [_tool_message(b, shell, i, j) for j, b in results]
    else:
        written = [_assistant_like(message, shell, i)]
        if written[0] != shell and not written[0]["content"] and not written[0].get("tool_calls"):
            return []  # every call went and nothing was said: an empty turn providers refuse
    for n, out in enumerate(written):
        if shell:
            _changed_id(out, shell)
        elif isinstance(message.get("id"), str):  # one Inspect message a result: each its own id
            out.setdefault("id", message["id"] if n == 0 else f"{message['id']}~{out['tool_call_id']}")
    return written


def to_inspect(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages back to Inspect chat messages (the inverse of `from_inspect`): each
    message's kept fields come back, with its content and calls from the blocks that remain (an
    assistant whose every call went loses ``tool_calls``); a changed message gets a new id."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        # a tool message holds one result alone: a result beside its call, or text after results, moves out
        for part in results_apart([message], only_results=True):
            out.extend(_convert(part, i))
    return out
