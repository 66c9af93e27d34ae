"""The `tracetrim` command: one parser, one sub-command module each, user mistakes as one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tracetrim.cli import _compact, _demo
from tracetrim.cli._errors import CliError

_COMMAND_MODULES = (_demo, _compact)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; each command module registers its own sub-command."""
    parser = argparse.ArgumentParser(
        prog="tracetrim",
        description="Shrink an LLM agent's tool history safely: judge, shorten or drop, archive, restore.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except CliError as exc:
        print(f"tracetrim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tracetrim: interrupted", file=sys.stderr)
        return 130
    return code
