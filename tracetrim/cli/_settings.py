"""CLI flags over request-file options: the validated `CompactorConfig` a planning command uses."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

import attrs

from tracetrim._validators import FieldValueError
from tracetrim.cli._arg_types import non_negative_int
from tracetrim.cli._errors import CliError
from tracetrim.compactor import CompactorConfig


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by commands that plan: thresholds or a token budget, and the recent window."""
    parser.add_argument(
        "--eligible-tools",
        metavar="NAMES",
        help="comma-separated tool names that may be compacted ('*': every tool the history calls)",
    )
    parser.add_argument(
        "--keep-threshold", type=float, metavar="P", help="keep/discard threshold (default 0.5)"
    )
    parser.add_argument("--discard-threshold", type=float, metavar="P", help="second, lower threshold")
    parser.add_argument("--preserve-recent", type=int, metavar="N", help="never touch the last N messages")
    parser.add_argument(
        "--minimum-reduction",
        type=float,
        metavar="F",
        help="adopt only proposals at least this fraction smaller (default 0.10; 0 adopts any saving)",
    )
    parser.add_argument(
        "--trigger-tokens",
        type=non_negative_int,
        metavar="N",
        help="with --target-tokens, a token budget instead of the thresholds: plan only above N tokens",
    )
    parser.add_argument(
        "--target-tokens",
        type=non_negative_int,
        metavar="N",
        help="with --trigger-tokens: compact down to N tokens, cheapest loss per token first",
    )


def build_config(
    args: argparse.Namespace, options: CompactorConfig | None, eligible: Iterable[str]
) -> CompactorConfig:
    """The request file's ``options`` (already validated) overridden by flags; a bad flag value is one
    clear CLI error naming the setting."""
    values: dict[str, Any] = {}
    names = set(eligible)
    if args.eligible_tools:
        names = {name.strip() for name in args.eligible_tools.split(",") if name.strip()}
    for flag, field in (
        ("keep_threshold", "keep_threshold"),
        ("discard_threshold", "discard_threshold"),
        ("preserve_recent", "preserve_recent_messages"),
        ("minimum_reduction", "minimum_reduction"),
        ("trigger_tokens", "trigger_tokens"),
        ("target_tokens", "target_tokens"),
    ):
        if getattr(args, flag, None) is not None:
            values[field] = getattr(args, flag)
    try:
        return attrs.evolve(options or CompactorConfig(), eligible_tools=names, **values)
    except FieldValueError as exc:
        raise CliError(str(exc)) from None
