"""A history file's text: parsing it (one JSON value, or JSONL: one JSON value a line), and writing a
value back the way the file was written (`FileStyle`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

from tracetrim._json import laid_out_json, strict_loads
from tracetrim._validators import FieldValueError
from tracetrim.formats._eval_archive import ZIP_MAGIC, read_eval_archive
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
    and column of what does not parse. Bytes that are a zip archive are an Inspect ``.eval`` log, read
    as the eval log its ``.json`` form holds (`read_eval_archive`).
    """
    if isinstance(text, bytes):
        if text.startswith(ZIP_MAGIC):
            return read_eval_archive(text)
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


_BOM = "\ufeff"
_SCANNED = 65_536
"""Where in a file the search for its separators (the first comma and colon outside a string) stops."""


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|([,:])( ?)', re.DOTALL)
"""A JSON string (skipped whole, in C) or a separator with the space after it, if any."""


def _separators(text: str) -> tuple[str | None, str | None]:
    """The first item and key separators of JSON ``text`` outside its strings (with the one space
    after them, if any); None for one it does not show."""
    found: dict[str, str] = {}
    for token in _TOKENS.finditer(text):  # no end position: a string running past it must not open
        if token.start() >= _SCANNED:
            break
        char = token.group(1)
        if char is not None:
            found.setdefault(char, char + token.group(2))
            if len(found) == 2:
                break
    return found.get(","), found.get(":")


def _indent(text: str) -> str | None:
    """The leading whitespace of the line after the first line break: one level of indentation (None
    for a value written on one line). Only those two lines are read, never a copy of the file."""
    stop = len(text)
    while stop and text[stop - 1] in " \t\r\n":  # the trailing line ends are not the layout's
        stop -= 1
    first = text.find("\n", 0, stop)
    if first < 0:
        return None
    end = text.find("\n", first + 1, stop)
    line = text[first + 1 : end if end >= 0 else stop]
    return line[: len(line) - len(line.lstrip(" \t"))]


@attrs.frozen
class FileStyle:
    """How a JSON or JSONL history file is written, so a rewrite of it reads the same: indentation,
    separators, whether non-ASCII is escaped, line ends, a byte-order mark, a final line end.

    `FileStyle.of` reads it off a file's text. The default is what `json.dump(..., indent=2,
    ensure_ascii=False)` writes (mini-swe-agent's and most Python tools' files); ``jsonl`` files are
    one compact value a line, as Claude Code and Codex write them. Numbers are written as Python
    writes them (``1E+2`` becomes ``100.0``): the value is kept, not its spelling.
    """

    jsonl: bool = False
    indent: str | None = "  "
    """One level of indentation (spaces or a tab); None writes the value on one line."""
    item_separator: str = ","
    key_separator: str = ": "
    ensure_ascii: bool = False
    newline: str = attrs.field(default="\n", validator=attrs.validators.in_(("\n", "\r\n")))
    bom: bool = False
    final_newline: bool = True

    @classmethod
    def of(cls, text: str, value: Any) -> FileStyle:
        """The style of ``text``, a file whose parsed value is ``value`` (a `JsonLines` for JSONL)."""
        bom = text.startswith(_BOM)
        body = text.removeprefix(_BOM)
        jsonl = isinstance(value, JsonLines)
        item, key = _separators(body)  # a JSONL file's lines are written alike: its first ones tell
        indent = None if jsonl else _indent(body)
        return cls(
            jsonl=jsonl,
            indent=indent,
            # With an indent a comma ends its line; json writes no space after it then.
            item_separator="," if indent is not None else item or ("," if jsonl else ", "),
            key_separator=key or (":" if jsonl else ": "),
            # A file all in ASCII stays so: its writer escaped whatever else it met, or met none.
            ensure_ascii=body.isascii(),
            newline="\r\n" if "\r\n" in body else "\n",
            bom=bom,
            final_newline=body.endswith("\n"),
        )

    def dump(self, value: Any) -> bytes:
        """``value`` written in this style as UTF-8 bytes, what goes in the file (a list of values, one a
        line, for JSONL)."""
        try:
            return self._text(value, self.ensure_ascii).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (valid in a JSON string) has no UTF-8: escape it
            return self._text(value, True).encode("utf-8")

    def text(self, value: Any) -> str:
        """`dump` as text."""
        return self.dump(value).decode("utf-8")

    def _text(self, value: Any, ensure_ascii: bool) -> str:
        separators = (self.item_separator, self.key_separator)
        if self.jsonl:
            lines = [
                laid_out_json(v, indent=None, separators=separators, ensure_ascii=ensure_ascii) for v in value
            ]
            body = self.newline.join(lines)
        else:
            body = laid_out_json(value, indent=self.indent, separators=separators, ensure_ascii=ensure_ascii)
            # json escapes every line break inside a string, so each one it writes is the layout's own.
            body = body.replace("\n", self.newline)
        return (_BOM if self.bom else "") + body + (self.newline if self.final_newline and body else "")


JSONL_STYLE = FileStyle(jsonl=True, indent=None, key_separator=":")
"""JSONL as Claude Code and Codex write it: compact JSON, non-ASCII kept, a line end after each value."""


def dump_jsonl(values: Iterable[Any]) -> str:
    """``values`` as JSONL the way Claude Code and Codex write it (`JSONL_STYLE`)."""
    return JSONL_STYLE.text(list(values))
