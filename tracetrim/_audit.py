"""Plan records as JSON lines: an observer that writes them and a summary of what they say."""

from __future__ import annotations

import json
import statistics
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

import attrs

from tracetrim._convert import converter, to_json_object
from tracetrim._errors import TracetrimError
from tracetrim._json import canonical_json
from tracetrim.compactor import Record


class JsonLinesObserver:
    """An observer that appends every `Record` to a file as one JSON line (for SHADOW audits).

    Each record is written and flushed at once, so a crash loses at most the plan in flight.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        """Append ``record``."""
        line = canonical_json(to_json_object(record))
        with self._lock, self.path.open("a", encoding="utf-8") as sink:
            sink.write(line + "\n")


class RecordError(TracetrimError, ValueError):
    """A line that is not a plan record; the message names the source and line number."""


def read_records(lines: Iterable[str], source: str = "records") -> list[Record]:
    """Parse JSON-lines records, skipping blank lines; `RecordError` names the first bad line."""
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(converter.structure(json.loads(line), Record))
        except Exception as exc:  # json and cattrs errors alike: the line is not a record
            raise RecordError(f"{source}, line {number}: not a plan record ({_first_line(exc)})") from None
    return records


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@attrs.frozen
class AuditSummary:
    """What a set of records says: how plans ended, what they would save, and what they cost."""

    plans: int
    modes: dict[str, int]
    outcomes: dict[str, int]
    decided: int
    chars_before: int
    chars_after: int
    median_reduction: float
    actions: dict[str, int]
    requests: int
    retries: int
    input_tokens: int
    output_tokens: int
    median_elapsed_ms: float
    max_elapsed_ms: float
    fitting_stages: dict[str, int]
    failures: dict[str, str]

    @property
    def reduction(self) -> float:
        """Characters saved over all decided plans, as a fraction of their size before."""
        return 1 - self.chars_after / self.chars_before if self.chars_before else 0.0


def summarise(records: Iterable[Record]) -> AuditSummary:
    """Aggregate records: decided plans give the savings, every plan gives outcomes and costs."""
    records = list(records)
    decided = [r for r in records if r.status == "DECIDED"]
    actions: Counter[str] = Counter()
    for record in decided:
        actions.update(record.actions)
    failures = {f"{r.status}/{r.reason}": r.detail for r in records if r.status in ("ERROR", "CANCELLED")}
    elapsed = [r.elapsed_ms for r in records]
    return AuditSummary(
        plans=len(records),
        modes=dict(Counter(r.mode for r in records)),
        outcomes=dict(Counter(f"{r.status}/{r.reason}" for r in records)),
        decided=len(decided),
        chars_before=sum(r.chars_before for r in decided),
        chars_after=sum(r.chars_after for r in decided),
        median_reduction=statistics.median(r.reduction for r in decided) if decided else 0.0,
        actions=dict(actions),
        requests=sum(r.requests for r in records),
        retries=sum(r.retries for r in records),
        input_tokens=sum(r.input_tokens for r in records),
        output_tokens=sum(r.output_tokens for r in records),
        median_elapsed_ms=statistics.median(elapsed) if elapsed else 0.0,
        max_elapsed_ms=max(elapsed, default=0.0),
        fitting_stages=dict(Counter(r.fitting_stage for r in records if r.fitting_stage)),
        failures=failures,
    )


def _counts(counts: dict[str, int]) -> str:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {count}" for name, count in ordered) or "-"


def write_summary(summary: AuditSummary, out: TextIO) -> None:
    """The summary as a few lines of plain text."""
    lines = [
        f"plans: {summary.plans} ({_counts(summary.modes)})",
        f"outcomes: {_counts(summary.outcomes)}",
        f"decided: {summary.decided}; characters {summary.chars_before:,} -> {summary.chars_after:,} "
        f"({summary.reduction:.1%} less overall, median {summary.median_reduction:.1%} per plan)",
        f"actions: {_counts(summary.actions)}",
        f"cost: {summary.requests} decision requests ({summary.retries} retries), "
        f"{summary.input_tokens:,} input and {summary.output_tokens:,} output tokens",
        f"time: median {summary.median_elapsed_ms:.1f} ms, max {summary.max_elapsed_ms:.1f} ms per plan",
        f"fitting stages: {_counts(summary.fitting_stages)}",
    ]
    lines += [f"failure {outcome}: {detail}" for outcome, detail in sorted(summary.failures.items())]
    out.write("\n".join(lines) + "\n")


def summary_json(summary: AuditSummary) -> dict[str, Any]:
    """The summary as JSON data, with the overall reduction included."""
    data: dict[str, Any] = to_json_object(summary)
    data["reduction"] = summary.reduction
    return data
