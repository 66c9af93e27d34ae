"""The message formats the CLI reads and writes, each a pair of converters to and from neutral."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracetrim._snapshot import SnapshotError
from tracetrim.cli._errors import CliError
from tracetrim.formats import READERS, to_openai_chat, to_openai_responses

_Convert = Callable[[Sequence[Any]], list[Any]]


def _same(messages: Sequence[Any]) -> list[Any]:
    return list(messages)


_WRITERS: dict[str, _Convert] = {"openai": to_openai_chat, "responses": to_openai_responses}

FORMATS: dict[str, tuple[_Convert, _Convert]] = {
    name: (read, _WRITERS.get(name, _same)) for name, read in READERS.items()
}
"""Format name to (to neutral, from neutral): neutral snapshot, OpenAI chat-completions, OpenAI Responses,
and the trajectory formats the CLI only reads (mini-swe-agent ``.traj.json``, SWE-agent ``.traj``), whose
output is the neutral snapshot."""

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
