"""The ``--format`` flag and the conversions around a command: the file's format to neutral and back."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetrim._json import strict_loads
from tracetrim._snapshot import Message, SnapshotError, encode_each
from tracetrim.cli._errors import CliError
from tracetrim.cli._input import HistoryFile
from tracetrim.formats import HISTORY_FORMATS
from tracetrim.formats._cline import DELETED_RANGE, deleted_range

FORMAT_CHOICES = ("auto", *HISTORY_FORMATS)
"""What ``--format`` accepts on commands that read histories: every format, or ``auto`` (by shape)."""


def add_format_arguments(parser: argparse.ArgumentParser) -> None:
    """``--format`` (default auto) and ``--item N`` / ``--all`` for files holding many trajectories."""
    parser.add_argument(
        "--format",
        choices=FORMAT_CHOICES,
        default="auto",
        metavar="FORMAT",
        help=(
            "the history's format, in and out (default: auto, told by shape and said on stderr): "
            + ", ".join(HISTORY_FORMATS)
        ),
    )
    pick = parser.add_mutually_exclusive_group()
    pick.add_argument(
        "--item", type=int, metavar="N", help="of a file that is a list of trajectories: item N"
    )
    pick.add_argument(
        "--all", dest="every", action="store_true", help="of a list of trajectories: each one in turn"
    )


def default_tools(fmt: str) -> tuple[str, ...]:
    """Eligible tools when neither the file nor ``--eligible-tools`` names any (mini-swe-agent: bash)."""
    return HISTORY_FORMATS[fmt].default_tools


def cline_task_fields(source: str) -> dict[str, Any]:
    """For a Cline ``api_conversation_history.json``, the truncation range in force for its task, read
    from the ``ui_messages.json`` beside it (said on stderr), as the reader's field; empty when there is
    none. A side file that cannot be read is said on stderr and left out: every message is judged."""
    ui = Path(source).parent / "ui_messages.json"
    if not Path(source).is_file() or not ui.is_file():  # stdin has no task folder
        return {}
    try:
        found = deleted_range(strict_loads(ui.read_bytes()))
    except (OSError, ValueError) as exc:
        print(f"tracetrim: {ui}: not read ({exc}); every message judged", file=sys.stderr)
        return {}
    if found is None:
        return {}
    print(f"tracetrim: {source}: Cline's truncation range {found} ({ui.name}) kept as it is", file=sys.stderr)
    return {DELETED_RANGE: found}


def to_neutral(history: HistoryFile) -> list[Message]:
    """The history's messages as neutral messages; a conversion error is one CLI line naming the place.
    A Cline task history is read with its task's truncation range (`cline_task_fields`)."""
    fields = history.fields
    if history.format == "cline":
        fields = {**fields, **cline_task_fields(history.source)}
    try:
        return HISTORY_FORMATS[history.format].read(history.messages, fields)
    except SnapshotError as exc:
        raise CliError(f"{history.source}: not valid {history.format} messages: {exc}") from None
    except ImportError as exc:
        raise CliError(f"{history.source}: the {history.format} format needs {exc.name} installed") from None


def as_owned(messages: list[Message]) -> Sequence[Message]:
    """``messages`` (a conversion of the file, this command's own) with each message's canonical JSON,
    marked as owned: the runner copies the history from it and does not encode it again to check for
    changes, so it is encoded once (`EncodedHistory`). As given when JSON cannot carry it: the runner
    then names the place."""
    try:
        return encode_each(messages, owned=True)
    except (TypeError, ValueError):
        return messages


def from_neutral(messages: Sequence[Any], fmt: str, source: str) -> dict[str, Any]:
    """Neutral ``messages`` as ``fmt``'s fields (``messages``, and ``system`` for Anthropic)."""
    try:
        return HISTORY_FORMATS[fmt].write(messages)
    except SnapshotError as exc:
        raise CliError(f"{source}: the result cannot be written as {fmt}: {exc}") from None
