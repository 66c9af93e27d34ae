"""Plan records as JSON lines: the observer that writes them (and follow-ups), and the tolerant reader."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from cattrs import transform_error
from cattrs.v import format_exception

from tracetrim._convert import converter, to_json_object
from tracetrim._errors import TracetrimError
from tracetrim._followup import Followup
from tracetrim._json import canonical_json, strict_loads
from tracetrim._record import Record, RecordDetail, record_from_json, record_json
from tracetrim._validators import FieldTypeError, FieldValueError


class JsonLinesObserver:
    """An observer that appends every `Record` to a file as one JSON line (for SHADOW audits).

    ``pairs=True`` asks records for their per-pair decisions (key, call id, tool, action, reason,
    probabilities, sizes, age); ``content=True`` adds each pair's call input and result text, which
    records otherwise never carry. `report` appends a `Followup` (recall tool, adapter hook) to the
    same file, where ``tracetrim audit`` turns them into loss rates. Each line is written and flushed
    at once, so a crash loses at most the plan in flight.
    """

    def __init__(self, path: str | Path, *, pairs: bool = False, content: bool = False) -> None:
        self.path = Path(path)
        self.record_detail = RecordDetail(pairs=pairs, content=content)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        detail = self.record_detail
        return f"JsonLinesObserver({str(self.path)!r}, pairs={detail.pairs}, content={detail.content})"

    def __call__(self, record: Record) -> None:
        """Append ``record``."""
        self._append(record_json(record))

    def report(self, followup: Followup) -> None:
        """Append ``followup``: the agent recalled or later used an earlier call's result."""
        if not isinstance(followup, Followup):
            raise FieldTypeError(f"report() takes a tracetrim.Followup, got {type(followup).__name__}")
        self._append(to_json_object(followup))

    def _append(self, data: dict[str, Any]) -> None:
        line = canonical_json(data)
        with self._lock, self.path.open("a", encoding="utf-8") as sink:
            sink.write(line + "\n")


class RecordError(TracetrimError, ValueError):
    """A line that is not a plan record; the message names the source and line number."""


@attrs.frozen
class Junk:
    """A line that is neither a plan record nor a follow-up: where it is and what is wrong with it."""

    source: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.source}, line {self.line}: {self.problem}"


@attrs.frozen
class AuditInput:
    """What record files hold: plan records, follow-ups, and the junk lines that were skipped."""

    records: tuple[Record, ...] = ()
    followups: tuple[Followup, ...] = ()
    junk: tuple[Junk, ...] = ()

    def __add__(self, other: AuditInput) -> AuditInput:
        return AuditInput(
            self.records + other.records, self.followups + other.followups, self.junk + other.junk
        )


def _leaf(exc: BaseException, type_: type | None) -> str:
    # A validator's own message names the field and the value; cattrs would say only "invalid value".
    if (type(exc) is ValueError or isinstance(exc, FieldValueError)) and str(exc):
        return str(exc)
    return format_exception(exc, type_)


def _problem(exc: Exception) -> str:
    """One readable line for why a decoded line is not a record: the fields at fault, by JSON path."""
    try:
        messages = transform_error(exc, path="$", format_exception=_leaf)
    except Exception:  # not a cattrs error: its own first line will do
        messages = []
    if not messages:
        text = str(exc).strip().splitlines()
        messages = [text[0] if text else type(exc).__name__]
    shown = "; ".join(messages[:3])
    return shown + (f"; and {len(messages) - 3} more" if len(messages) > 3 else "")


def parse_line(text: str) -> Record | Followup:
    """One JSON line as a `Record` (any version) or a `Followup`; `RecordError` says what is wrong."""
    try:
        data = strict_loads(text)
    except ValueError as exc:
        raise RecordError(f"not JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise RecordError(f"not a JSON object (a {type(data).__name__})")
    try:
        if "event" in data:
            return converter.structure(data, Followup)
        return record_from_json(data)
    except Exception as exc:  # cattrs and validator errors alike: the line is not a record
        kind = "follow-up" if "event" in data else "plan record"
        raise RecordError(f"not a {kind} ({_problem(exc)})") from None


def read_audit(lines: Iterable[str], source: str = "records") -> AuditInput:
    """Every record and follow-up in ``lines``; blank lines are ignored, junk lines listed and skipped."""
    records: list[Record] = []
    followups: list[Followup] = []
    junk: list[Junk] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = parse_line(line)
        except RecordError as exc:
            junk.append(Junk(source, number, str(exc)))
            continue
        if isinstance(item, Followup):
            followups.append(item)
        else:
            records.append(item)
    return AuditInput(tuple(records), tuple(followups), tuple(junk))


def read_records(lines: Iterable[str], source: str = "records") -> list[Record]:
    """Strictly parse JSON-lines plan records: `RecordError` names the first line that is not one.

    Follow-up lines are skipped; `read_audit` is the tolerant reader the audit itself uses.
    """
    found = read_audit(lines, source)
    if found.junk:
        first = found.junk[0]
        raise RecordError(str(first))
    return list(found.records)


def read_files(paths: Iterable[str | Path]) -> AuditInput:
    """`read_audit` over files; `RecordError` for a file that is missing or unreadable."""
    total = AuditInput()
    for path in paths:
        try:
            with Path(path).open(encoding="utf-8") as handle:
                total += read_audit(handle, str(path))
        except FileNotFoundError:
            raise RecordError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RecordError(f"{path}: cannot read ({exc})") from None
    return total
