"""Reading histories for the CLI: a file or stdin, in any known format, one history or chosen items."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import attrs

from tracetrim.cli._errors import CliError
from tracetrim.compactor._options import REQUEST_FIELDS
from tracetrim.formats import (
    HISTORY_FORMATS,
    FormatError,
    TrajectoryListError,
    detect_format,
    trajectory_list,
)


@attrs.frozen
class HistoryFile:
    """One history read from disk or stdin: its messages as the file has them, its format, and whatever
    request fields (and other keys, such as Anthropic's ``system``) the file carried."""

    source: str
    messages: list[Any]
    format: str = "neutral"
    fields: dict[str, Any] = attrs.field(factory=dict)
    goal: str = ""
    next_action: str = ""
    eligible_tools: tuple[str, ...] = ()
    protected_message_ids: tuple[str, ...] = ()
    protected_call_ids: tuple[str, ...] = ()
    options: dict[str, Any] = attrs.field(factory=dict)

    @property
    def stem(self) -> str:
        """A name for this history's output file: the file's stem, ``-N`` for an item of a list."""
        base, _, item = self.source.partition("[")
        name = "stdin" if base == "stdin" else Path(base).name.split(".")[0]
        return f"{name}-{item.rstrip(']')}" if item else name


def _strings(data: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CliError(f"{source}: {key!r} must be a list of strings")
    return tuple(value)


def _load(source: str) -> tuple[str, Any]:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{source}: cannot read ({exc})") from None
    name = "stdin" if source == "-" else source
    try:
        return name, json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def _history(name: str, data: Any, fmt: str) -> HistoryFile:
    key = HISTORY_FORMATS[fmt].messages_key
    if isinstance(data, list):
        return HistoryFile(name, data, fmt)
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise CliError(f"{name}: expected a list of {fmt} messages or an object with a {key!r} list")
    for field in ("goal", "next_action"):
        if not isinstance(data.get(field, ""), str):
            raise CliError(f"{name}: {field!r} must be a string")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise CliError(f"{name}: 'options' must be an object")
    return HistoryFile(
        name,
        data[key],
        fmt,
        fields={k: v for k, v in data.items() if k != key and k not in REQUEST_FIELDS},
        goal=data.get("goal", ""),
        next_action=data.get("next_action", ""),
        eligible_tools=_strings(data, "eligible_tool_names", name),
        protected_message_ids=_strings(data, "protected_message_ids", name),
        protected_call_ids=_strings(data, "protected_call_ids", name),
        options=options,
    )


def _chosen(name: str, data: Any, item: int | None, every: bool) -> list[tuple[str, Any]]:
    """The histories to work on: the file itself, or the chosen items of a list of trajectories."""
    kind = trajectory_list(data)
    if kind is None:
        if item is not None or every:
            raise CliError(f"{name}: --item and --all pick from a list of trajectories; this is one history")
        return [(name, data)]
    if every:
        return [(f"{name}[{n}]", entry) for n, entry in enumerate(data)]
    if item is None:
        raise CliError(f"{name}: {TrajectoryListError(len(data), kind)}")
    if not 0 <= item < len(data):
        raise CliError(f"{name}: --item {item} is out of range: the file holds {len(data)} trajectories")
    return [(f"{name}[{item}]", data[item])]


def read_histories(
    source: str, fmt: str = "auto", *, item: int | None = None, every: bool = False, announce: bool = True
) -> list[HistoryFile]:
    """The histories in ``source`` ("-" for stdin): a message list, an object holding one (a request, a
    SWE-agent ``.traj``, a mini-swe-agent or tau-bench trajectory), or ``--item``/``--all`` of a list.

    With ``fmt`` ``auto`` each one's format is told by shape and, with ``announce``, said on stderr.
    """
    name, data = _load(source)
    out: list[HistoryFile] = []
    for label, entry in _chosen(name, data, item, every):
        chosen = fmt
        if fmt == "auto":
            try:
                chosen = detect_format(entry)
            except FormatError as exc:
                raise CliError(f"{label}: cannot tell the format ({exc}); pass --format") from None
        out.append(_history(label, entry, chosen))
    if announce and fmt == "auto" and out:
        found = sorted({h.format for h in out})
        print(f"tracetrim: {name}: read as {', '.join(found)} (--format auto)", file=sys.stderr)
    return out


def read_history(source: str, fmt: str = "neutral") -> HistoryFile:
    """The one history in ``source`` in ``fmt`` (``auto`` allowed); a list of trajectories is an error."""
    (history,) = read_histories(source, fmt)
    return history
