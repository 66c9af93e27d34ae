"""`tracetrim audit`: the rollout questions over plan records (JSON lines from a SHADOW rollout)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracetrim._convert import to_json_object
from tracetrim._json import pretty_json
from tracetrim.audit._observer import AuditInput, RecordError, read_audit, read_files
from tracetrim.audit._report import AuditOptions, audit
from tracetrim.audit._summary import summary_json
from tracetrim.audit._text import write_audit
from tracetrim.cli._arg_types import non_negative_float, positive_int, unit_fraction
from tracetrim.cli._errors import CliError


def register(commands: Any) -> None:
    """Add the ``audit`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit",
        help="answer the rollout questions over plan records: savings, outcomes, tools, loss, advice",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON-lines record files, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the summary and advice as JSON")
    parser.add_argument("--html", metavar="REPORT", help="also write a self-contained HTML report here")
    parser.add_argument(
        "--price-per-mtok", type=non_negative_float, metavar="DOLLARS", help="price of a million input tokens"
    )
    parser.add_argument(
        "--keep-threshold", type=unit_fraction, default=0.5, help="keep threshold in force (default 0.5)"
    )
    parser.add_argument(
        "--discard-threshold",
        type=unit_fraction,
        help="discard threshold in force (default: the keep threshold)",
    )
    parser.add_argument(
        "--target-loss",
        type=unit_fraction,
        default=0.0,
        help="highest acceptable share of removed results needed later (default 0: none observed)",
    )
    parser.add_argument(
        "--min-decisions",
        type=positive_int,
        default=20,
        help="would-be drops a tool needs before it can be judged ready (default 20)",
    )
    parser.set_defaults(handler=run)


def _read(sources: list[str]) -> AuditInput:
    found = AuditInput()
    files = []
    for source in sources:
        if source == "-":
            found += read_audit(sys.stdin, "stdin")
        else:
            files.append(source)
    try:
        return found + read_files(files)
    except RecordError as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Read every file's records and print one audit of them all (and the HTML report if asked)."""
    if args.discard_threshold is not None and args.discard_threshold > args.keep_threshold:
        raise CliError(
            f"--discard-threshold ({args.discard_threshold}) must not exceed --keep-threshold "
            f"({args.keep_threshold})"
        )
    found = _read(args.files)
    if not found.records:
        for item in found.junk:
            print(f"skipped {item}", file=sys.stderr)
        raise CliError(f"no plan records in {', '.join(args.files)}")
    options = AuditOptions(
        keep_threshold=args.keep_threshold,
        discard_threshold=args.discard_threshold,
        price_per_mtok=args.price_per_mtok,
        target_loss=args.target_loss,
        min_decisions=args.min_decisions,
    )
    report = audit(found, options)
    if args.html:
        try:
            Path(args.html).write_text(report.html(), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"{args.html}: cannot write the report ({exc})") from None
    if args.json:
        for item in found.junk:
            print(f"skipped {item}", file=sys.stderr)
        data = summary_json(report.summary)
        data["recommendation"] = to_json_object(report.advice) | {
            "text": report.advice.text,
            "threshold_text": report.advice.threshold_text,
        }
        data["skipped"] = [str(item) for item in found.junk]
        sys.stdout.write(pretty_json(data, sort_keys=True))
    else:
        write_audit(report.summary, report.advice, found.junk, sys.stdout, sys.stderr)
    if args.html:
        print(f"report written to {args.html}", file=sys.stderr)
    return 0
