"""Reading a history for the CLI: a file or stdin, a bare message list or a request object."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import attrs

from tracetrim.cli._errors import CliError


@attrs.frozen
class HistoryFile:
    """A history read from disk or stdin, with whatever request fields the file carried."""

    source: str
    messages: list[Any]
    goal: str = ""
    next_action: str = ""
    eligible_tools: tuple[str, ...] = ()
    protected_message_ids: tuple[str, ...] = ()
    protected_call_ids: tuple[str, ...] = ()
    options: dict[str, Any] = attrs.field(factory=dict)


def _strings(data: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CliError(f"{source}: {key!r} must be a list of strings")
    return tuple(value)


def read_history(source: str, messages_key: str = "messages") -> HistoryFile:
    """Parse ``source`` ("-" for stdin): a JSON list of messages, or an object with ``messages``.

    ``messages_key`` names the list in a format whose files keep it elsewhere (SWE-agent: ``history``).
    """
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{source}: cannot read ({exc})") from None
    name = "stdin" if source == "-" else source
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(data, list):
        return HistoryFile(name, data)
    if not isinstance(data, dict) or not isinstance(data.get(messages_key), list):
        raise CliError(f"{name}: expected a list of messages or an object with a {messages_key!r} list")
    for key in ("goal", "next_action"):
        if not isinstance(data.get(key, ""), str):
            raise CliError(f"{name}: {key!r} must be a string")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise CliError(f"{name}: 'options' must be an object")
    return HistoryFile(
        name,
        data[messages_key],
        goal=data.get("goal", ""),
        next_action=data.get("next_action", ""),
        eligible_tools=_strings(data, "eligible_tool_names", name),
        protected_message_ids=_strings(data, "protected_message_ids", name),
        protected_call_ids=_strings(data, "protected_call_ids", name),
        options=options,
    )
