"""SHADOW mode: judge real histories without changing them, and keep every record as a JSON line.

Run: ``python examples/shadow_audit.py [RECORDS.jsonl] [HISTORY ...]`` (core install only; no network,
no keys; ``--help`` for the flags). HISTORY is any file ``tracetrim compact`` reads, in any format it
reads (a SWE-agent ``.traj``, a mini-swe-agent ``.traj.json``, a tau-bench results file with ``--all``,
OpenAI, Anthropic, LangChain, Claude Code, Codex, ...), read by the same reader and told apart by shape
(``--format`` to say it). Without histories it audits the example histories bundled with tracetrim.
Each history is planned by the embedded default model in SHADOW mode: ``compact`` returns None (the
host keeps its own compaction) and the observer writes one record per plan, with its per-pair decisions.
The eligible tools are ``--eligible-tools``, else the file's ``eligible_tool_names``, else the format's
own (mini-swe-agent: bash), else every tool the history calls: an audit wants to see them all.

Every field of a neutral history file is honoured (see ../shared/scenarios/README.md for the format):
``messages``; ``name`` (the session in the record's scope, else the file name); ``goal`` and
``next_action``; ``eligible_tool_names``; ``protected_message_ids`` and ``protected_call_ids`` (never
shortened); ``options`` (any `tracetrim.CompactorConfig` field, e.g. ``preserve_recent_messages``);
``labels`` (the ``critical`` and ``needed`` calls are what the agent used later, so they are reported
as `tracetrim.Followup` "used" lines and the audit measures the loss rate against them; the proposal is
also scored against every label); ``must_contain`` (strings the proposal must still contain).
A bare list of messages is read as ``{"messages": [...]}``. Other formats carry no labels: their
records still show what would go, and the audit reports the loss rate once follow-ups are reported.

Summarise the file later with ``tracetrim audit RECORDS.jsonl`` (add ``--html report.html``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

import tracetrim as tt
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import add_format_arguments, default_tools, to_neutral
from tracetrim.cli._input import HistoryFile, announce_formats, read_histories
from tracetrim.learn._quality import Labels, score_labels

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


def histories(
    paths: Sequence[str], fmt: str = "auto", *, item: int | None = None, every: bool = False
) -> list[HistoryFile]:
    """The histories to audit, read as ``tracetrim compact`` reads them: the given files (``--item`` /
    ``--all`` for a list of trajectories), else the bundled examples."""
    if not paths:
        bundled = resources.files("tracetrim") / "_examples"
        paths = [
            str(entry)
            for entry in sorted(bundled.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".json")
        ]
    out: list[HistoryFile] = []
    for path in paths:
        try:
            out.extend(read_histories(path, fmt, item=item, every=every, announce=False))
        except CliError as exc:
            raise HistoryError(str(exc)) from None
    if fmt == "auto":
        announce_formats(out)
    return out


def session_name(history: HistoryFile) -> str:
    """The session a history's records are scoped to: its file name without ``.json``."""
    return history.file_name.removesuffix(".json")


def _strings(info: Mapping[str, Any], field: str, source: str) -> list[str]:
    value = info.get(field, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HistoryError(f"{source}: {field!r} must be a list of strings")
    return value


Setup = tuple[str, tt.CompactorConfig, tt.CompactionRequest, Labels]


def setup(source: str, data: Any, eligible: Sequence[str] | None = None) -> Setup:
    """The session name, config, request and labels one neutral history file asks for (``eligible``,
    when given, instead of its ``eligible_tool_names``)."""
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
    named = _strings(info, "eligible_tool_names", source)
    eligible = list(eligible) if eligible is not None else named
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


def _called(messages: Sequence[Any]) -> list[str]:
    names = (
        block.get("name")
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_call"
    )
    return list(dict.fromkeys(name for name in names if isinstance(name, str) and name))


def setup_history(history: HistoryFile, eligible: Sequence[str] | None = None) -> Setup:
    """`setup` for a history in any format the CLI reads: a neutral file keeps every field above; any
    other is converted to neutral messages and carries no labels."""
    name = session_name(history)
    if history.format == "neutral" and isinstance(history.document, (dict, list)):
        return setup(name, history.document, eligible)
    try:
        messages = to_neutral(history)
    except CliError as exc:
        raise HistoryError(str(exc)) from None
    tools = (
        list(eligible or ())
        or list(history.eligible_tools)
        or list(default_tools(history.format))
        or _called(messages)
    )
    try:
        config = attrs.evolve(history.options or tt.CompactorConfig(), eligible_tools=tools)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{history.source}: bad options ({exc})") from None
    request = tt.CompactionRequest(
        messages,
        history.goal,
        history.next_action,
        scope=tt.Scope("audit", "shadow", name),
        protected_message_ids=history.protected_message_ids,
        protected_call_ids=history.protected_call_ids,
    )
    return name, config, request, Labels.from_scenario({})


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
    planned: Setup, observer: tt.JsonLinesObserver
) -> tuple[tt.Record, tt.Outcome, Labels]:
    """Plan one history (`setup`'s answer) in SHADOW mode (what ``compact`` does there before
    returning None, leaving the host's history as it is) and report its labelled needs as follow-ups."""
    _, config, request, labels = planned
    tee = Tee(observer)
    compactor = tt.Compactor(
        config=config, execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW, version="audit-1", observer=tee)
    )
    outcome = await compactor.plan(request)
    assert tee.last is not None
    for call_id in sorted(labels.critical | labels.needed):
        observer.report(tt.Followup.used(call_id, request.scope))
    return tee.last, outcome, labels


async def main(
    out: Path,
    paths: Sequence[str],
    *,
    fmt: str = "auto",
    item: int | None = None,
    every: bool = False,
    eligible: Sequence[str] | None = None,
) -> None:
    """Plan each history in SHADOW mode and append its records and follow-ups to ``out``."""
    observer = tt.JsonLinesObserver(out, pairs=True)
    for history in histories(paths, fmt, item=item, every=every):
        planned = setup_history(history, eligible)
        source, request = planned[0], planned[2]
        record, outcome, labels = await audit_history(planned, observer)
        line = (
            f"{source}: {record.status}/{record.reason}, would save {record.reduction:.1%}, "
            f"actions {record.actions}, adopted={outcome.adopted}"
        )
        if outcome.plan is not None and (labels.must_contain or labels.critical or labels.protected):
            score = score_labels(request.messages, outcome.plan.messages, labels)
            line += (
                f"; must_contain {score.must_contain.kept}/{score.must_contain.total}, "
                f"critical {score.critical.kept}/{score.critical.total}, "
                f"protected {score.protected.kept}/{score.protected.total}"
            )
        print(line)
    print(f"records appended to {out}; audit them with: tracetrim audit {out} --html report.html")


def parser() -> argparse.ArgumentParser:
    """The example's command line."""
    cli = argparse.ArgumentParser(
        prog="shadow_audit.py",
        description="Judge histories in SHADOW mode (nothing changes) and append one record per plan, "
        "with its per-pair decisions, to RECORDS for `tracetrim audit RECORDS --html report.html`.",
    )
    cli.add_argument(
        "records",
        nargs="?",
        default="shadow_records.jsonl",
        metavar="RECORDS",
        help="the JSON-lines file records are appended to (default: shadow_records.jsonl)",
    )
    cli.add_argument(
        "histories",
        nargs="*",
        metavar="HISTORY",
        help="history files in any format `tracetrim compact` reads (default: the bundled examples)",
    )
    add_format_arguments(cli)
    cli.add_argument(
        "--eligible-tools",
        metavar="NAMES",
        help="comma-separated tools to judge (default: the file's, the format's, else every tool called)",
    )
    return cli


if __name__ == "__main__":
    args = parser().parse_args()
    tools = [n.strip() for n in args.eligible_tools.split(",") if n.strip()] if args.eligible_tools else None
    try:
        asyncio.run(
            main(
                Path(args.records),
                args.histories,
                fmt=args.format,
                item=args.item,
                every=args.every,
                eligible=tools,
            )
        )
    except HistoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
