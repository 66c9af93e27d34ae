"""The `tracetrim` command: one parser, one sub-command module each, user mistakes as one line."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence

from tracetrim.cli._archive_commands import register as register_archive
from tracetrim.cli._audit import register as register_audit
from tracetrim.cli._compact import register as register_compact
from tracetrim.cli._demo import register as register_demo
from tracetrim.cli._errors import CliError
from tracetrim.cli._fit import register as register_fit
from tracetrim.cli._mcp import register as register_mcp
from tracetrim.cli._offload import register as register_offload
from tracetrim.cli._replay import register as register_replay
from tracetrim.cli._serve import register as register_serve

_REGISTRATIONS = (
    register_demo,
    register_compact,
    register_offload,
    register_archive,
    register_audit,
    register_fit,
    register_replay,
    register_serve,
    register_mcp,
)


def _version() -> str:
    """The installed distribution's version, or the package's own when running from a source tree."""
    try:
        return importlib.metadata.version("tracetrim")
    except importlib.metadata.PackageNotFoundError:
        import tracetrim

        return tracetrim.__version__


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; each command module registers its own sub-command."""
    parser = argparse.ArgumentParser(
        prog="tracetrim",
        description="Shrink an LLM agent's tool history safely: judge, shorten or drop, archive, restore.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in _REGISTRATIONS:
        register(commands)
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
    except BrokenPipeError:  # e.g. `tracetrim compact ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code
