"""The message formats the CLI reads and writes, each a pair of converters to and from neutral."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracetrim._snapshot import SnapshotError
from tracetrim.cli._errors import CliError
from tracetrim.formats import (
    from_mini_swe_agent,
    from_openai_chat,
    from_openai_responses,
    from_swe_agent_history,
    to_openai_chat,
    to_openai_responses,
)

_Convert = Callable[[Sequence[Any]], list[Any]]


def _same(messages: Sequence[Any]) -> list[Any]:
    return list(messages)


FORMATS: dict[str, tuple[_Convert, _Convert]] = {
    "neutral": (_same, _same),
    "openai": (from_openai_chat, to_openai_chat),
    "responses": (from_openai_responses, to_openai_responses),
    "mini-swe-agent": (from_mini_swe_agent, _same),
    "swe-agent": (from_swe_agent_history, _same),
}
"""Format name to (to neutral, from neutral): neutral snapshot, OpenAI chat-completions, OpenAI Responses,
and the trajectory formats the CLI only reads (mini-swe-agent ``.traj.json``, SWE-agent ``.traj``), whose
output is the neutral snapshot."""

MESSAGES_KEY: dict[str, str] = {"swe-agent": "history"}
"""Where a format's file keeps its message list, when not under ``messages``."""

DEFAULT_TOOLS: dict[str, tuple[str, ...]] = {"mini-swe-agent": ("bash",)}
"""Eligible tools when neither the file nor ``--eligible-tools`` names any: mini-swe-agent has only bash."""


def to_neutral(messages: Sequence[Any], fmt: str, source: str) -> list[Any]:
    """``messages`` in ``fmt`` as neutral messages; a conversion error is one CLI line naming the place."""
    try:
        return FORMATS[fmt][0](messages)
    except SnapshotError as exc:
        raise CliError(f"{source}: not valid {fmt} messages: {exc}") from None


def from_neutral(messages: Sequence[Any], fmt: str) -> list[Any]:
    """Neutral ``messages`` back in ``fmt``."""
    return FORMATS[fmt][1](messages)
