"""Converters between neutral messages and Ollama chat messages (``POST /api/chat``, the ``ollama`` clients).

Shape, from the ``ollama`` Python client's ``Message`` (``ollama/_types.py``) and Ollama's API docs:
``{"role", "content", "thinking", "images", "tool_name", "tool_calls"}``, where a tool call is
``{"function": {"name", "arguments": {...}}}``: the arguments an object, not a JSON string, and no
call id (newer servers may add one, which is kept). A ``tool`` message answers the calls of the
assistant message before it in order, naming the tool in ``tool_name``; so calls without an id are
paired with their results by that order and name, and the ids tracetrim gives them are never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._layout import results_apart
from tracetrim.formats._open_calls import OpenCalls

FORMAT = "ollama"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_INVENTED = "ollama-"
"""How the ids tracetrim gives id-less calls start (recorded per message, so never written back)."""


def _function(call: Any) -> dict[str, Any] | None:
    """A call's ``function`` when it is Ollama's: a name and an arguments object."""
    if not isinstance(call, dict):
        return None
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    return function if isinstance(function.get("arguments"), dict) else None


def is_ollama_message(message: Any) -> bool:
    """Whether ``message`` has a shape only Ollama chat messages have: a tool call whose arguments are
    an object under ``function``, or a text tool message without a ``tool_call_id`` (OpenAI chat
    requires one on every tool message; the AI SDK's tool messages hold parts)."""
    if not isinstance(message, dict):
        return False
    if message.get("role") == "tool":
        return "tool_call_id" not in message and not isinstance(message.get("content"), list)
    calls = message.get("tool_calls")
    return isinstance(calls, list) and any(_arguments_object(call) for call in calls)


def _arguments_object(call: Any) -> bool:
    """Whether ``call`` holds its arguments as an object under ``function``, as only Ollama writes them
    (OpenAI chat a JSON string), with or without the name a call it could run would have: a call kept
    as it was sent tells the format after every other call went."""
    function = call.get("function") if isinstance(call, dict) else None
    return isinstance(function, dict) and isinstance(function.get("arguments"), dict)


def _answered(tool: dict[str, Any], pending: OpenCalls) -> tuple[str, str] | None:
    """The pending call a tool message answers, no longer pending: the one its id names, else the
    first with its ``tool_name``, else the first; None when nothing is pending."""
    found = pending.take_id(tool.get("tool_call_id"))
    if found is None:
        found = pending.take_name(tool.get("tool_name", tool.get("name")))
    return found if found is not None else pending.take_first()


def from_ollama(messages: Sequence[Any]) -> list[Message]:
    """Convert Ollama chat ``messages`` to neutral messages.

    An assistant's calls become tool_call blocks (input: the arguments as JSON; the call's own id, or
    an invented one), and each tool message a tool_result of the call it answers (`_answered`); a
    tool message that answers nothing is carried as a raw part. Every message's own fields
    (``thinking``, ``images``, ...) are kept in ``metadata["tracetrim.ollama"]`` for `to_ollama`.
    """
    common.require_sequence(messages, "messages", "message objects")
    seen: dict[str, int] = {}
    pending = OpenCalls()
    out: list[Message] = []
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise SnapshotError("content must be a string", message=i, field="content")
        meta: dict[str, Any] = {"message": common.copied(message)}
        blocks: list[Block] = []
        if role == "tool":
            answered = _answered(message, pending)
            if answered is None:
                blocks.append(common.raw_block(FORMAT, common.copied(message)))
            else:
                call_id, name = answered
                result = {"type": "tool_result", "id": call_id, "name": name, "output": content or ""}
                blocks.append({**result, "state": "success"})
        else:
            if role == "assistant" or role == "user":
                pending = OpenCalls()  # a new turn: what was not answered stays unanswered
            if content:
                blocks.append({"type": "text", "text": content})
            calls = message.get("tool_calls")
            if calls is not None and not isinstance(calls, list):
                raise SnapshotError("tool_calls must be a list", message=i, field="tool_calls")
            invented: list[str] = []
            for j, call in enumerate(calls or []):
                if isinstance(call, dict) and call.get("id") is not None and not isinstance(call["id"], str):
                    # as OpenAI chat refuses it: nothing could answer such a call by its id
                    kind = type(call["id"]).__name__
                    raise SnapshotError(
                        f"a tool call id must be a string, got {kind}", message=i, field="tool_calls"
                    )
                function = _function(call) if role == "assistant" else None
                if function is None:
                    blocks.append(common.raw_block(FORMAT, common.copied(call)))
                    continue
                own = call.get("id")
                call_id = own if isinstance(own, str) and own else f"{_INVENTED}{i}-{j}"
                if call_id is not own:
                    invented.append(call_id)
                pending.add(call_id, function["name"])
                blocks.append(
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": function["name"],
                        "input": common.dump_input(function["arguments"]),
                        "state": "finished",
                    }
                )
            if invented:
                meta["invented"] = invented
        neutral_role = "assistant" if role == "tool" else role
        neutral = {"id": common.message_id("ol-", message, seen, i), "role": neutral_role, "content": blocks}
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _tool(block: Block, shell: dict[str, Any], i: int, j: int) -> dict[str, Any]:
    text = common.output_text(block, "Ollama", i, j)
    tool: dict[str, Any]
    if shell.get("role") == "tool":
        tool = common.copied(shell)
    else:
        tool = {"role": "tool", "tool_name": block["name"]}
    if tool.get("content") != text and not (tool.get("content") is None and text == ""):
        tool["content"] = text
    return tool


def _read_calls(shell: dict[str, Any], invented: Sequence[str]) -> dict[str | None, dict[str, Any]]:
    """The Ollama calls a message was read with, by the id each got (its own, or the invented one)."""
    calls = [c for c in common.listed(shell.get("tool_calls")) if _function(c) is not None]
    ids = iter(invented)
    return {(c["id"] if isinstance(c.get("id"), str) and c["id"] else next(ids, None)): c for c in calls}


def _call(
    block: Block, read: dict[str | None, dict[str, Any]], invented: Sequence[str], i: int, j: int
) -> dict[str, Any]:
    """The Ollama call of a tool_call block: the one read, its arguments from the block's input."""
    call: dict[str, Any] = common.copied(read.get(block["id"], {"function": {}}))
    arguments = common.parse_input(block, i, j)
    call["function"] = {**call.get("function", {}), "name": block["name"], "arguments": arguments}
    if block["id"] not in invented:
        call["id"] = block["id"]
    return call


def _convert(message: Message, i: int) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    shell: dict[str, Any] = common.copied(meta.get("message") or {})
    invented: list[str] = list(meta.get("invented") or ())
    read = _read_calls(shell, invented)
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[Any] = []
    for j, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "tool_result":
            out.append(_tool(block, shell, i, j))
        elif common.is_raw(block, FORMAT):
            value = common.copied(block["value"])
            (out if isinstance(value, dict) and value.get("role") == "tool" else calls).append(value)
        elif kind == "tool_call":
            calls.append(_call(block, read, invented, i, j))
        elif kind == "text":
            texts.append(block["text"])
        else:
            raise common.unsupported("Ollama", block, i, j)
    if out and not (texts or calls):
        return out
    turn = shell if shell.get("role") != "tool" else {}
    turn = turn or {"role": message["role"] if message["role"] != "tool" else "assistant"}
    joined = "\n\n".join(texts)
    if not (turn.get("content") in (None, "") and not texts) and joined != turn.get("content"):
        turn["content"] = joined
    if calls:
        turn["tool_calls"] = calls
    else:
        turn.pop("tool_calls", None)
    return [*out, turn]


def to_ollama(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages back to Ollama chat messages (the inverse of `from_ollama`): each
    message's own fields come back, calls and results from the blocks that remain, with no invented
    id written; an assistant message whose every call went loses ``tool_calls``."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        for part in results_apart([message]):  # a call's result beside it goes in a message of its own
            out.extend(_convert(part, i))
    return out
