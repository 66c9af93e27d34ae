"""The message formats the CLI reads and writes, each a pair of converters to and from neutral."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracetrim._snapshot import SnapshotError
from tracetrim.cli._errors import CliError
from tracetrim.formats import from_openai_chat, from_openai_responses, to_openai_chat, to_openai_responses

_Convert = Callable[[Sequence[Any]], list[Any]]


def _same(messages: Sequence[Any]) -> list[Any]:
    return list(messages)


FORMATS: dict[str, tuple[_Convert, _Convert]] = {
    "neutral": (_same, _same),
    "openai": (from_openai_chat, to_openai_chat),
    "responses": (from_openai_responses, to_openai_responses),
}
"""Format name to (to neutral, from neutral): neutral snapshot, OpenAI chat-completions, OpenAI Responses."""


def to_neutral(messages: Sequence[Any], fmt: str, source: str) -> list[Any]:
    """``messages`` in ``fmt`` as neutral messages; a conversion error is one CLI line naming the place."""
    try:
        return FORMATS[fmt][0](messages)
    except SnapshotError as exc:
        raise CliError(f"{source}: not valid {fmt} messages: {exc}") from None


def from_neutral(messages: Sequence[Any], fmt: str) -> list[Any]:
    """Neutral ``messages`` back in ``fmt``."""
    return FORMATS[fmt][1](messages)
