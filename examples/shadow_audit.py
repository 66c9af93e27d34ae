"""SHADOW mode: judge real histories without changing them, and keep every record as a JSON line.

Run: ``python examples/shadow_audit.py [RECORDS.jsonl] [HISTORY.json ...]`` (core install only; no network,
no keys). Without histories it audits the example histories bundled with tracetrim. Each history is
planned by the embedded default model in SHADOW mode: ``compact`` returns None (the host keeps its own
compaction) and the observer writes one record per plan, with its per-pair decisions.

Every field of a history file is honoured (see ../shared/scenarios/README.md for the format):
``messages``; ``name`` (the session in the record's scope, else the file name); ``goal`` and
``next_action``; ``eligible_tool_names``; ``protected_message_ids`` and ``protected_call_ids`` (never
shortened); ``options`` (any `tracetrim.CompactorConfig` field, e.g. ``preserve_recent_messages``);
``labels`` (the ``critical`` and ``needed`` calls are what the agent used later, so they are reported
as `tracetrim.Followup` "used" lines and the audit measures the loss rate against them; the proposal is
also scored against every label); ``must_contain`` (strings the proposal must still contain).
A bare list of messages is read as ``{"messages": [...]}``.

Summarise the file later with ``tracetrim audit RECORDS.jsonl`` (add ``--html report.html``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

import tracetrim as tt
from tracetrim._quality import Labels, score_labels

FIELDS = frozenset(
    {
        "name",
        "goal",
        "next_action",
        "eligible_tool_names",
        "protected_message_ids",
        "protected_call_ids",
        "options",
        "messages",
        "labels",
        "must_contain",
    }
)
"""Every field a history file may have; anything else is a mistake worth naming."""

CONFIG_FIELDS = frozenset(field.name for field in attrs.fields(tt.CompactorConfig))


class HistoryError(ValueError):
    """A history file that cannot be audited; the message names the file and the field."""


def histories(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The histories to audit: the given files, else the bundled examples."""
    if paths:
        out = []
        for path in paths:
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise HistoryError(f"{path}: cannot read a JSON history ({exc})") from None
            out.append((Path(path).name.removesuffix(".json"), data))
        return out
    bundled = resources.files("tracetrim") / "_examples"
    return [
        (entry.name.removesuffix(".json"), json.loads(entry.read_text(encoding="utf-8")))
        for entry in sorted(bundled.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]


def _strings(info: Mapping[str, Any], field: str, source: str) -> list[str]:
    value = info.get(field, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HistoryError(f"{source}: {field!r} must be a list of strings")
    return value


def setup(source: str, data: Any) -> tuple[str, tt.CompactorConfig, tt.CompactionRequest, Labels]:
    """The session name, config, request and labels one history file asks for."""
    info = data if isinstance(data, dict) else {"messages": data}
    unknown = sorted(set(info) - FIELDS)
    if unknown:
        raise HistoryError(
            f"{source}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(FIELDS))}"
        )
    options = info.get("options", {})
    if not isinstance(options, dict):
        raise HistoryError(f"{source}: 'options' must be an object of CompactorConfig fields")
    bad = sorted(set(options) - CONFIG_FIELDS)
    if bad:
        raise HistoryError(f"{source}: option(s) {', '.join(bad)} are not CompactorConfig fields")
    eligible = _strings(info, "eligible_tool_names", source)
    try:
        settings: dict[str, Any] = {"eligible_tools": eligible, **options}
        config = tt.CompactorConfig(**settings)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{source}: bad options ({exc})") from None
    name = info.get("name", source)
    if not isinstance(name, str) or not name:
        raise HistoryError(f"{source}: 'name' must be a non-empty string")
    for field in ("goal", "next_action"):
        if not isinstance(info.get(field, ""), str):
            raise HistoryError(f"{source}: {field!r} must be a string")
    if "messages" not in info:
        raise HistoryError(f"{source}: no 'messages'")
    _strings(info, "must_contain", source)
    request = tt.CompactionRequest(
        info["messages"],
        info.get("goal", ""),
        info.get("next_action", ""),
        scope=tt.Scope("audit", "shadow", name),
        protected_message_ids=_strings(info, "protected_message_ids", source),
        protected_call_ids=_strings(info, "protected_call_ids", source),
    )
    return name, config, request, Labels.from_scenario(info)


class Tee:
    """An observer that writes through ``sink`` and keeps the last record for printing.

    Its ``record_detail`` is what records carry: an observer asks for per-pair detail that way.
    """

    def __init__(self, sink: tt.JsonLinesObserver) -> None:
        self.sink = sink
        self.record_detail = sink.record_detail
        self.last: tt.Record | None = None

    def __call__(self, record: tt.Record) -> None:
        self.sink(record)
        self.last = record


async def audit_history(
    source: str, data: Any, observer: tt.JsonLinesObserver
) -> tuple[tt.Record, tt.Outcome, Labels]:
    """Plan one history in SHADOW mode (what ``compact`` does there before returning None, leaving
    the host's history as it is) and report its labelled needs as follow-ups."""
    _, config, request, labels = setup(source, data)
    tee = Tee(observer)
    compactor = tt.Compactor(
        config=config, execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW, version="audit-1", observer=tee)
    )
    outcome = await compactor.plan(request)
    assert tee.last is not None
    for call_id in sorted(labels.critical | labels.needed):
        observer.report(tt.Followup.used(call_id, request.scope))
    return tee.last, outcome, labels


async def main(out: Path, paths: list[str]) -> None:
    """Plan each history in SHADOW mode and append its records and follow-ups to ``out``."""
    observer = tt.JsonLinesObserver(out, pairs=True)
    for source, data in histories(paths):
        record, outcome, labels = await audit_history(source, data, observer)
        line = (
            f"{source}: {record.status}/{record.reason}, would save {record.reduction:.1%}, "
            f"actions {record.actions}, adopted={outcome.adopted}"
        )
        if outcome.plan is not None and (labels.must_contain or labels.critical or labels.protected):
            score = score_labels(
                data["messages"] if isinstance(data, dict) else data, outcome.plan.messages, labels
            )
            line += (
                f"; must_contain {score.must_contain.kept}/{score.must_contain.total}, "
                f"critical {score.critical.kept}/{score.critical.total}, "
                f"protected {score.protected.kept}/{score.protected.total}"
            )
        print(line)
    print(f"records appended to {out}; audit them with: tracetrim audit {out} --html report.html")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("shadow_records.jsonl")
    try:
        asyncio.run(main(target, sys.argv[2:]))
    except HistoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
