"""Builders for small neutral histories used across the planner tests."""

from __future__ import annotations

import json
from typing import Any


def text(value: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    """A thinking block."""
    return {"type": "thinking", "thinking": value}


def call(
    call_id: str,
    name: str = "read_file",
    args: Any = None,
    *,
    state: str = "finished",
    raw: str | None = None,
) -> dict[str, Any]:
    """A tool_call block; ``args`` is JSON-encoded unless ``raw`` gives the input text itself."""
    payload = raw if raw is not None else json.dumps(args if args is not None else {"path": f"{call_id}.py"})
    return {"type": "tool_call", "id": call_id, "name": name, "input": payload, "state": state}


def result(
    call_id: str, name: str = "read_file", output: Any = None, *, state: str = "success", size: int = 2000
) -> dict[str, Any]:
    """A tool_result block with a long text output by default."""
    if output is None:
        output = "".join(f"line {n} of {call_id}: some file content here\n" for n in range(size // 40 + 1))
    return {"type": "tool_result", "id": call_id, "name": name, "output": output, "state": state}


def user(message_id: str, value: str, **extra: Any) -> dict[str, Any]:
    """A user message with one text block."""
    return {"id": message_id, "role": "user", "name": "user", "content": [text(value)], **extra}


def assistant(message_id: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An assistant message with the given blocks."""
    return {"id": message_id, "role": "assistant", "name": "agent", "content": list(blocks), **extra}


def tool_history(
    pairs: int, *, tail: int = 6, name: str = "read_file", size: int = 2000
) -> list[dict[str, Any]]:
    """A task message, ``pairs`` assistant turns each with text, a call and its result, then ``tail``
    short recent messages, so every pair is a candidate under the default recent window."""
    messages = [user("m0", "Please fix the bug in the parser module.")]
    for n in range(1, pairs + 1):
        messages.append(
            assistant(
                f"a{n}", text(f"Reading file {n}."), call(f"c{n}", name), result(f"c{n}", name, size=size)
            )
        )
    for n in range(tail):
        messages.append(
            user(f"r{n}", f"recent message {n}") if n % 2 == 0 else assistant(f"r{n}", text("ok"))
        )
    return messages


def blocks_by_id(messages: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The blocks of one type by id (last wins)."""
    return {b["id"]: b for m in messages for b in m["content"] if b["type"] == kind}
