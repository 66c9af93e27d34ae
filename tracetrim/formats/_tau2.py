"""Converters between neutral messages and tau2-bench simulations (``Results.simulations[*].messages``).

Shape, from tau2-bench ``src/tau2/data_model/message.py`` and ``simulation.py`` (sierra-research/tau2-bench;
the PyPI name ``tau2`` is an unrelated package): messages with role ``system`` / ``user`` /
``assistant`` / ``tool``; ``tool_calls`` are ``{"id", "name", "arguments": {...}, "requestor"}``; a
``tool`` message answers by ``id`` (``content``, ``requestor``, ``error``); a ``MultiToolMessage`` is
``{"role": "tool", "tool_messages": [...]}``. Calls the user simulator makes (``requestor: "user"``)
are not the agent's context: they ride as raw parts, never judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._layout import results_apart

FORMAT = "tau2"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
TAU2_BEFORE_MESSAGES = (
    "id",
    "task_id",
    "timestamp",
    "start_time",
    "end_time",
    "duration",
    "termination_reason",
    "agent_cost",
    "user_cost",
    "agent_usage",
    "reward_info",
)
"""The fields `SimulationRun` declares before ``messages``: where the list goes back in a simulation."""


def is_tau2_message(message: Any) -> bool:
    """Whether ``message`` has a shape only tau2 messages have: top-level ``name``/``arguments`` tool
    calls, a tool message answering by ``id`` with a ``requestor``, or ``tool_messages``."""
    if not isinstance(message, dict):
        return False
    if "tool_messages" in message or (message.get("role") == "tool" and "requestor" in message):
        return True
    calls = message.get("tool_calls")
    return isinstance(calls, list) and any(
        isinstance(c, dict) and "arguments" in c and "function" not in c and "requestor" in c for c in calls
    )


def _agent_call(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and call.get("requestor", "assistant") == "assistant"
        and isinstance(call.get("id"), str)
        and bool(call["id"])
        and isinstance(call.get("name"), str)
        and isinstance(call.get("arguments"), dict)
    )


def _result(tool: dict[str, Any], i: int, names: dict[str, str]) -> Block:
    call_id = common.require_str(tool.get("id"), "a tool message id", message=i, field="id")
    content = tool.get("content")
    return {
        "type": "tool_result",
        "id": call_id,
        "name": names.get(call_id, ""),
        "output": content if isinstance(content, str) else "",
        "state": "error" if tool.get("error") else "success",
    }


def _answers_agent(tool: Any, agent_calls: set[str]) -> bool:
    return (
        isinstance(tool, dict)
        and tool.get("requestor", "assistant") == "assistant"
        and common.tag(tool.get("id")) in agent_calls
    )


def from_tau2(messages: Sequence[Any]) -> list[Message]:
    """Convert a tau2 simulation's ``messages`` to neutral messages.

    An assistant's own calls become tool_call blocks (input: its ``arguments`` as JSON) and the tool
    messages answering them tool_result blocks (``error`` -> state ``error``); everything else of a
    message (``turn_idx``, ``timestamp``, ``cost``, ``usage``, ``raw_data``, ...) is kept in
    ``metadata["tracetrim.tau2"]`` so `to_tau2` writes the message back as it was.
    """
    common.require_sequence(messages, "messages", "message objects")
    seen: dict[str, int] = {}
    names: dict[str, str] = {}
    agent_calls: set[str] = set()
    out: list[Message] = []
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        shell = common.copied(message)
        blocks: list[Block] = []
        neutral_role = role
        meta: dict[str, Any] = {}
        if role == "tool":
            multi = "tool_messages" in message
            tools = message.get("tool_messages") if multi else [message]
            if not isinstance(tools, list):
                raise SnapshotError("tool_messages must be a list", message=i, field="tool_messages")
            for tool in tools:
                if _answers_agent(tool, agent_calls):
                    blocks.append(_result(tool, i, names))
                else:
                    blocks.append(common.raw_block(FORMAT, common.copied(tool)))
            neutral_role = "assistant"
            if multi:
                del shell["tool_messages"]
                meta["tools"] = {
                    t["id"]: common.copied(t) for t in tools if isinstance(t, dict) and "id" in t
                }
        else:
            content = message.get("content")
            if isinstance(content, str) and content:
                blocks.append({"type": "text", "text": content})
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if role == "assistant" and _agent_call(call):
                    names[call["id"]] = call["name"]
                    agent_calls.add(call["id"])
                    blocks.append(
                        {
                            "type": "tool_call",
                            "id": call["id"],
                            "name": call["name"],
                            "input": common.dump_input(call["arguments"]),
                            "state": "finished",
                        }
                    )
                else:
                    blocks.append(common.raw_block(FORMAT, common.copied(call)))
        meta["message"] = shell
        neutral = {"id": common.message_id("t2-", message, seen, i), "role": neutral_role, "content": blocks}
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _tool(block: Block, base: dict[str, Any], i: int, j: int) -> dict[str, Any]:
    text = common.output_text(block, "tau2", i, j)
    tool = common.copied(base) if base else {"id": block["id"], "role": "tool"}
    if tool.get("content") != text and not (tool.get("content") is None and text == ""):
        tool["content"] = text
    error = block.get("state") == "error"
    if error or "error" in tool:
        tool["error"] = error
    return tool


def _tools(message: Message, meta: dict[str, Any], i: int) -> list[dict[str, Any]]:
    found, kept = meta.get("message"), meta.get("tools")
    shell: dict[str, Any] = found if isinstance(found, dict) else {}
    stored: dict[str, Any] | None = kept if isinstance(kept, dict) else None
    tools: list[Any] = []
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_result":
            base = stored.get(block["id"], {}) if stored is not None else shell
            tools.append(_tool(block, base, i, j))
        elif common.is_raw(block, FORMAT):
            tools.append(common.copied(block["value"]))
        elif block["type"] == "text":  # a tombstone, or (a user's results turn from elsewhere) what they said
            said_by = "user" if message["role"] == "user" and not shell else "assistant"
            tools.append({"role": said_by, "content": block["text"]})
    if stored is not None:
        return [{**common.copied(shell), "tool_messages": tools}]
    return tools


def _convert(message: Message, i: int) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    shell = common.copied(meta.get("message") or {})
    if shell.get("role") == "tool" or (
        not shell and any(b["type"] == "tool_result" for b in message["content"])
    ):
        return _tools(message, meta, i)
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    calls: list[Any] = []
    previous = {
        common.tag(c.get("id")): c for c in common.listed(shell.get("tool_calls")) if isinstance(c, dict)
    }
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_call":
            call = common.copied(previous.get(block["id"], {"id": block["id"], "name": block["name"]}))
            call.update(
                {"id": block["id"], "name": block["name"], "arguments": common.parse_input(block, i, j)}
            )
            calls.append(call)
        elif common.is_raw(block, FORMAT):
            calls.append(common.copied(block["value"]))
    out = shell or {"role": message["role"]}
    original = out.get("content")
    joined = "\n\n".join(texts)
    if not (original in (None, "") and not texts) and joined != original:
        out["content"] = joined
    if calls:
        out["tool_calls"] = calls
    elif out.get("tool_calls"):
        out["tool_calls"] = None
    return [out]


def to_tau2(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages back to tau2 messages (the inverse of `from_tau2`): each message's
    kept fields come back; calls and results from the blocks that remain (an assistant whose every
    call was dropped gets ``tool_calls: null``, as tau2 writes a message without calls)."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        for part in results_apart([message]):  # a call's result beside it goes in a message of its own
            out.extend(_convert(part, i))
    return out
