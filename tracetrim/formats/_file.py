"""Parsing a history file's bytes (one JSON value, or JSONL: one JSON value a line) and writing JSONL."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tracetrim._json import compact_json, strict_loads
from tracetrim._validators import FieldValueError
from tracetrim.formats._shape import JsonLines
from tracetrim.formats._table import FormatError


def _jsonl(lines: list[str]) -> JsonLines:
    values = JsonLines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append(strict_loads(line))
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"JSONL line {number} is not valid JSON (column {exc.colno}: {exc.msg})"
            ) from None
        except FieldValueError as exc:
            raise FormatError(f"JSONL line {number}: {exc}") from None
    return values


def _starts_as_jsonl(lines: list[str]) -> bool:
    filled = [line for line in lines if line.strip()]
    if len(filled) < 2:
        return False
    try:
        strict_loads(filled[0])
    except ValueError:
        return False
    return True


def parse_history_text(text: str | bytes) -> Any:
    """The JSON value in ``text`` (a file's contents), or a `JsonLines` of its values when it is JSONL.

    A file whose first line is a whole JSON value and which has more lines is read as JSONL (Claude
    Code sessions, Codex rollouts); anything else must be one JSON value. `FormatError` names the line
    and column of what does not parse.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not UTF-8 text (byte {exc.start})") from None
    text = text.removeprefix("\ufeff")
    try:
        return strict_loads(text)
    except FieldValueError as exc:
        raise FormatError(str(exc)) from None
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        if exc.msg == "Extra data" or _starts_as_jsonl(lines):
            return _jsonl(lines)
        raise FormatError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def dump_jsonl(values: Iterable[Any]) -> str:
    """``values`` as JSONL the way Claude Code and Codex write it: compact JSON, non-ASCII kept, each
    value on its own line ending in a newline."""
    return "".join(compact_json(value) + "\n" for value in values)
