"""`tracetrim audit`: summarise plan records (JSON lines, e.g. from a SHADOW-mode rollout)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tracetrim._audit import RecordError, read_records, summarise, summary_json, write_summary
from tracetrim.cli._errors import CliError


def register(commands: Any) -> None:
    """Add the ``audit`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit", help="summarise plan records (JSON lines): outcomes, would-be savings, cost"
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON-lines record files, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read every file's records and print one summary of them all."""
    records = []
    for source in args.files:
        try:
            if source == "-":
                records += read_records(sys.stdin, "stdin")
                continue
            with Path(source).open(encoding="utf-8") as handle:
                records += read_records(handle, source)
        except FileNotFoundError:
            raise CliError(f"{source}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"{source}: cannot read ({exc})") from None
        except RecordError as exc:
            raise CliError(str(exc)) from None
    summary = summarise(records)
    if args.json:
        print(json.dumps(summary_json(summary), indent=2, sort_keys=True))
    else:
        write_summary(summary, sys.stdout)
    return 0
