"""Turning CLI flags and file options into a validated `CompactorConfig`."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tracetrim.cli._errors import CliError
from tracetrim.compactor import CompactorConfig

_OPTION_FIELDS = {a.name for a in attrs.fields(CompactorConfig)} - {"eligible_tools", "token_counter"}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by commands that plan: thresholds and the recent window."""
    parser.add_argument(
        "--eligible-tools", metavar="NAMES", help="comma-separated tool names that may be compacted"
    )
    parser.add_argument(
        "--keep-threshold", type=float, metavar="P", help="keep/discard threshold (default 0.5)"
    )
    parser.add_argument("--discard-threshold", type=float, metavar="P", help="second, lower threshold")
    parser.add_argument("--preserve-recent", type=int, metavar="N", help="never touch the last N messages")


def build_config(
    args: argparse.Namespace, options: Mapping[str, Any], eligible: Iterable[str]
) -> CompactorConfig:
    """A config from file ``options`` overridden by flags; a bad value is one clear CLI error."""
    unknown = sorted(set(options) - _OPTION_FIELDS)
    if unknown:
        raise CliError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(_OPTION_FIELDS))}")
    values: dict[str, Any] = dict(options)
    names = set(eligible)
    if args.eligible_tools:
        names = {name.strip() for name in args.eligible_tools.split(",") if name.strip()}
    for flag, field in (
        ("keep_threshold", "keep_threshold"),
        ("discard_threshold", "discard_threshold"),
        ("preserve_recent", "preserve_recent_messages"),
    ):
        if getattr(args, flag, None) is not None:
            values[field] = getattr(args, flag)
    try:
        return CompactorConfig(eligible_tools=names, **values)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
