"""The formats histories arrive in, by name: each one's converter to neutral and where its file keeps them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracetrim._snapshot import Message
from tracetrim.formats._mini_swe_agent import from_mini_swe_agent
from tracetrim.formats._openai_chat import from_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses
from tracetrim.formats._swe_agent import from_swe_agent_history


def _same(messages: Sequence[Any]) -> list[Any]:
    return list(messages)


READERS: dict[str, Callable[[Sequence[Any]], list[Message]]] = {
    "neutral": _same,
    "openai": from_openai_chat,
    "responses": from_openai_responses,
    "mini-swe-agent": from_mini_swe_agent,
    "swe-agent": from_swe_agent_history,
}
"""Format name to its converter into neutral messages (``neutral`` is taken as it is, checked later)."""

MESSAGES_KEY: dict[str, str] = {"swe-agent": "history"}
"""Where a format's file object keeps its message list, when not under ``messages``."""
