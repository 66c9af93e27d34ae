"""Histories an agent's session file never held, for the tests that write one as that agent's session
and have the agent load it: `tracetrim restore --format NAME` gets such a history from an archive of
another format's run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests._histories import tool_history
from tracetrim.formats import HISTORY_FORMATS

_AGENTS = Path(__file__).parent / "data" / "agents"


def foreign_histories() -> dict[str, list[dict[str, Any]]]:
    """An OpenAI chat request's history (each result in a message of its own, its system prompt left
    out: session files keep none) and an AgentScope agent's (each result beside its call), by name."""
    body = json.loads((_AGENTS / "request_openai.json").read_text(encoding="utf-8"))
    chat = HISTORY_FORMATS["openai"].read(body["messages"], {})
    return {
        "openai": [m for m in chat if m["role"] != "system"],
        "agentscope": tool_history(3, tail=2, size=300),
    }


def said(history: list[dict[str, Any]], kind: str, key: str = "id") -> list[Any]:
    """Every ``key`` of the history's blocks of ``kind``, in order."""
    return [b[key] for m in history for b in m["content"] if b["type"] == kind]
