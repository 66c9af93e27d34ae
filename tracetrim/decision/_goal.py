"""Where the agent is going when the host does not say: the goal and next action a judge assumes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def message_text(message: Mapping[str, Any]) -> str:
    """The user/assistant text of a message (text blocks only; thinking never leaves)."""
    return "\n".join(block["text"] for block in message["content"] if block["type"] == "text")


def default_goal(messages: Sequence[Mapping[str, Any]]) -> str:
    """The first user text: what the agent was asked to do, when the host gives no goal."""
    return next((t for m in messages if m["role"] == "user" and (t := message_text(m))), "")


def default_next_action(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last user text: what the agent is answering now, when the host gives no next action."""
    return next((t for m in reversed(messages) if m["role"] == "user" and (t := message_text(m))), "")
