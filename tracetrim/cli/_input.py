"""Reading histories for the CLI: a file or stdin, in any known format, one history or chosen items."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from tracetrim._input_convert import structure_input
from tracetrim.cli._errors import CliError
from tracetrim.compactor import CompactorConfig
from tracetrim.compactor._options import RequestFields, request_keys
from tracetrim.formats import (
    HISTORY_FORMATS,
    FileStyle,
    FormatError,
    TrajectoryListError,
    detect_format,
    parse_history_text,
    trajectory_items,
    trajectory_list,
)
from tracetrim.formats._eval_archive import ZIP_MAGIC

_ITEM = re.compile(r"(.*)\[(\d+)\]", re.DOTALL)
"""How `_chosen` names item N of a list of trajectories: ``FILE[N]``."""


def _split_item(source: str) -> tuple[str, str]:
    """``FILE[N]`` as ``(FILE, N)``; any other source as ``(source, "")``."""
    found = _ITEM.fullmatch(source)
    return (found.group(1), found.group(2)) if found else (source, "")


@attrs.frozen
class HistoryFile:
    """One history read from disk or stdin: its messages as the file has them, its format, and whatever
    request fields (and other keys, such as Anthropic's ``system``) the file carried; ``options`` is
    the file's ``options`` as a `CompactorConfig` (None when it has none)."""

    source: str
    messages: list[Any]
    format: str = "neutral"
    fields: dict[str, Any] = attrs.field(factory=dict)
    document: Any = None
    """The JSON value this history was read from (the file, or its item of a list), for writing it back
    whole; None when the history was not read from a file."""
    raw: bytes | None = attrs.field(default=None, repr=False)
    """The file's exact bytes when this history is the whole file (None for an item of a list)."""
    style: FileStyle = attrs.field(factory=FileStyle, repr=False)
    """How the file was written (indent, separators, line ends, ...): how ``--emit history`` writes it."""
    goal: str = ""
    next_action: str = ""
    eligible_tools: tuple[str, ...] = ()
    protected_message_ids: tuple[str, ...] = ()
    protected_call_ids: tuple[str, ...] = ()
    options: CompactorConfig | None = None

    @property
    def file_name(self) -> str:
        """The input's whole file name (``run.v1.traj.json``, not ``run``), with ``-N`` before its last
        suffix for item N of a list (``tau.json[3]``: ``tau-3.json``); ``stdin`` for stdin."""
        base, item = _split_item(self.source)
        name = Path(base).name or base
        if not item:
            return name
        stem, dot, suffix = name.rpartition(".")
        if suffix == "eval":  # a sample of an Inspect .eval archive is written as the JSON it holds
            suffix = "json"
        return f"{stem}-{item}.{suffix}" if dot and stem else f"{name}-{item}"


def _read_text(source: str) -> str | bytes:
    """The text of a file, or of stdin for "-", read as bytes: newline translation would change what
    was sent (CRLF files). A stdin a host replaced by a text stream (no buffer) is read as text. A zip
    archive (an Inspect ``.eval`` log) stays bytes."""
    if source != "-":
        data = Path(source).read_bytes()
    else:
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            return str(sys.stdin.read())
        data = stdin.read()
    return data if data.startswith(ZIP_MAGIC) else data.decode("utf-8")


def _load(source: str) -> tuple[str, Any, str]:
    """The name, parsed value and text of ``source`` (the text is "" for a zip archive)."""
    try:
        text = _read_text(source)
    except FileNotFoundError:
        raise CliError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{source}: cannot read ({exc})") from None
    name = "stdin" if source == "-" else source
    try:
        return name, parse_history_text(text), text if isinstance(text, str) else ""
    except FormatError as exc:
        raise CliError(f"{name}: {exc}") from None


def _history(name: str, data: Any, fmt: str) -> HistoryFile:
    if isinstance(data, list):
        return HistoryFile(name, data, fmt, document=data)
    keys = request_keys(HISTORY_FORMATS[fmt].provider_fields)
    try:
        messages, fields = HISTORY_FORMATS[fmt].split(data)
        request = structure_input({k: v for k, v in fields.items() if k in keys}, RequestFields)
    except ValueError as exc:  # SnapshotError, InputError
        raise CliError(f"{name}: {exc}") from None
    return HistoryFile(
        name,
        messages,
        fmt,
        fields={k: v for k, v in fields.items() if k not in keys},
        document=data,
        goal=request.goal or "",
        next_action=request.next_action or "",
        eligible_tools=request.eligible_tool_names or (),
        protected_message_ids=request.protected_message_ids or (),
        protected_call_ids=request.protected_call_ids or (),
        options=request.options,
    )


def _chosen(name: str, data: Any, item: int | None, every: bool) -> list[tuple[str, Any]]:
    """The histories to work on: the file itself, or the chosen items of a list of trajectories."""
    kind = trajectory_list(data)
    if kind is None:
        if item is not None or every:
            raise CliError(f"{name}: --item and --all pick from a list of trajectories; this is one history")
        return [(name, data)]
    items = trajectory_items(data)  # a tau2 results file holds its trajectories under 'simulations'
    if every:
        return [(f"{name}[{n}]", entry) for n, entry in enumerate(items)]
    if item is None:
        raise CliError(f"{name}: {TrajectoryListError(len(items), kind)}")
    if not 0 <= item < len(items):
        raise CliError(f"{name}: --item {item} is out of range: the file holds {len(items)} trajectories")
    return [(f"{name}[{item}]", items[item])]


def read_histories(
    source: str, fmt: str = "auto", *, item: int | None = None, every: bool = False, announce: bool = True
) -> list[HistoryFile]:
    """The histories in ``source`` ("-" for stdin): a message list, an object holding one (a request, a
    SWE-agent ``.traj``, a mini-swe-agent or tau-bench trajectory), or ``--item``/``--all`` of a list.

    With ``fmt`` ``auto`` each one's format is told by shape and, with ``announce``, said on stderr.
    """
    name, data, text = _load(source)
    style = FileStyle.of(text, data)
    out: list[HistoryFile] = []
    chosen_items = _chosen(name, data, item, every)
    for label, entry in chosen_items:
        chosen = fmt
        if fmt == "auto":
            try:
                chosen = detect_format(entry)
            except FormatError as exc:
                raise CliError(f"{label}: cannot tell the format ({exc}); pass --format") from None
        history = attrs.evolve(_history(label, entry, chosen), style=style)
        if entry is data:  # the whole file: its exact bytes are what the user sent
            history = attrs.evolve(history, raw=text.encode("utf-8"))
        out.append(history)
    if announce and fmt == "auto":
        announce_formats(out)
    return out


def announce_formats(histories: Sequence[HistoryFile]) -> None:
    """`announce` the formats of ``histories``."""
    announce([(h.source, h.format) for h in histories])


def announce(read: Sequence[tuple[str, str]]) -> None:
    """Say on stderr, in one line for the whole run, which formats auto-detection read (``read``: each
    history's source and format): ``x.json: read as openai``, or ``12 histories from 3 files read as
    openai (9), swe-agent (3)``."""
    if not read:
        return
    counts: dict[str, int] = {}
    for _, fmt in read:
        counts[fmt] = counts.get(fmt, 0) + 1
    files = {_split_item(source)[0] for source, _ in read}
    if len(read) == 1:
        where = f"{read[0][0]}: read as"
    else:
        where = f"{len(read)} histories from {len(files)} file{'s' * (len(files) > 1)} read as"
    if len(counts) == 1:
        found = next(iter(counts))
    else:
        found = ", ".join(f"{fmt} ({n})" for fmt, n in sorted(counts.items()))
    print(f"tracetrim: {where} {found} (--format auto)", file=sys.stderr)


def read_history(source: str, fmt: str = "neutral") -> HistoryFile:
    """The one history in ``source`` in ``fmt`` (``auto`` allowed); a list of trajectories is an error."""
    (history,) = read_histories(source, fmt)
    return history
