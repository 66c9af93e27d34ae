"""`tracetrim replay`: walk whole runs as a host would, and compare what each strategy bills and loses."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracetrim._json import pretty_json
from tracetrim._token_budget import default_target
from tracetrim._validators import FieldValueError
from tracetrim.cli._arg_types import non_negative_float, non_negative_int, unit_fraction
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import FORMAT_CHOICES
from tracetrim.cli._model_options import add_model_arguments, model_from_args
from tracetrim.cli._runs import read_runs
from tracetrim.replay import (
    DEFAULT_NAMES,
    DEFAULT_WINDOW,
    NO_TOMBSTONES,
    PRESETS,
    STRATEGY_NAMES,
    HostRule,
    format_report,
    prices,
    replay_runs,
    strategies_by_name,
)
from tracetrim.replay._html import render_html


def register(commands: Any) -> None:
    """Add the ``replay`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "replay",
        help="walk whole runs as a host would and compare what each compaction strategy bills and loses",
        description=(
            "Replay each run's model calls in order: every strategy hands the prompt for each call "
            "(tracetrim's when the host's rule fires, continuing from what it adopted; the baselines "
            "per request, as they run), and the replay totals the prompt tokens billed, with a "
            "prompt-cache model, the context size, the compactions and what later calls used that was "
            "gone (recallable, re-runnable or silently lost). Prints a table; --json and --html write "
            "the rest."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="run files, or folders of them (any format)")
    parser.add_argument(
        "--format",
        choices=FORMAT_CHOICES,
        default="auto",
        metavar="FORMAT",
        help="the runs' format (default: auto, told by shape)",
    )
    host = parser.add_argument_group(
        "host rule", f"when tracetrim's strategies fire (default: --context-window {DEFAULT_WINDOW})"
    )
    host.add_argument("--trigger-tokens", type=non_negative_int, metavar="N", help="fire over N tokens")
    host.add_argument("--target-tokens", type=non_negative_int, metavar="N", help="compact down to N tokens")
    host.add_argument(
        "--context-window", type=non_negative_int, metavar="W", help="fire past --trigger-share of W tokens"
    )
    host.add_argument("--trigger-share", type=unit_fraction, default=0.6, metavar="F", help="default 0.6")
    host.add_argument("--target-share", type=unit_fraction, default=0.4, metavar="F", help="default 0.4")
    host.add_argument("--every", type=non_negative_int, metavar="K", help="fire before every K-th model call")
    parser.add_argument(
        "--strategies",
        metavar="NAMES",
        default=",".join(DEFAULT_NAMES),
        help=f"comma-separated, from {', '.join(STRATEGY_NAMES)} (default: {','.join(DEFAULT_NAMES)})",
    )
    parser.add_argument(
        "--without-tombstones",
        action="store_true",
        help="add threshold-no-tombstones and budget-no-tombstones (by default a drop leaves a tombstone)",
    )
    parser.add_argument("--mask-keep", type=non_negative_int, default=10, metavar="N", help="masking keeps N")
    parser.add_argument(
        "--baseline-trigger",
        type=non_negative_int,
        metavar="N",
        help="Anthropic's and LangChain's clearing trigger (default: their documented 100,000 tokens)",
    )
    parser.add_argument(
        "--eligible-tools",
        metavar="NAMES",
        help="tools tracetrim may compact (default: the file's, the format's, or every tool a run calls)",
    )
    parser.add_argument("--cache", choices=tuple(PRESETS), default="anthropic", help="cache price preset")
    parser.add_argument("--cache-read", type=non_negative_float, metavar="X", help="cache read price ratio")
    parser.add_argument("--cache-write", type=non_negative_float, metavar="X", help="cache write price ratio")
    parser.add_argument("--json", metavar="FILE", help="write the whole report (every run) as JSON")
    parser.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def host_rule(args: argparse.Namespace) -> HostRule:
    """The host rule the flags describe; one CLI error for a contradiction."""
    budget = args.trigger_tokens is not None or args.target_tokens is not None
    if budget and args.context_window is not None:
        raise CliError("give --trigger-tokens/--target-tokens or --context-window, not both")
    try:
        if budget:
            if args.trigger_tokens is None:
                raise CliError("--target-tokens needs --trigger-tokens")
            target = (
                args.target_tokens if args.target_tokens is not None else default_target(args.trigger_tokens)
            )
            return HostRule(trigger_tokens=args.trigger_tokens, target_tokens=target, every_steps=args.every)
        if args.every is not None and args.context_window is None:
            return HostRule(every_steps=args.every)
        return HostRule.window(
            args.context_window if args.context_window is not None else DEFAULT_WINDOW,
            trigger_share=args.trigger_share,
            target_share=args.target_share,
            every_steps=args.every,
        )
    except FieldValueError as exc:
        raise CliError(str(exc)) from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    """Replay the runs, print the table, write JSON and HTML when asked."""
    rule = host_rule(args)
    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    if args.without_tombstones:
        names += [n for n in NO_TOMBSTONES if n not in names]
    if len(set(names)) != len(names):
        raise CliError("--strategies names a strategy twice")
    try:
        cache = prices(args.cache, read=args.cache_read, write=args.cache_write)
        judge = model_from_args(args) if any(n.startswith(("threshold", "budget")) for n in names) else None
        strategies = strategies_by_name(
            names, judge, mask_keep=args.mask_keep, baseline_trigger=args.baseline_trigger, prices=cache
        )
    except FieldValueError as exc:
        raise CliError(str(exc)) from None
    runs = read_runs(args.files, args.format, args.eligible_tools)
    if not runs:
        raise CliError("no runs to replay")
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            sys.stderr.write(f"\rreplayed {done}/{total} runs")
            sys.stderr.write("\n" if done == total else "")
            sys.stderr.flush()

    report = replay_runs(runs, strategies, rule, cache, progress=progress)
    print(format_report(report))
    if args.json:
        _write(args.json, pretty_json(report.to_json()))
    if args.html:
        _write(args.html, render_html(report))
    return 0
