"""``--records FILE``: every plan's `Record` appended as one JSON line, the input `tracetrim audit` reads."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracetrim.cli._errors import CliError


def add_records_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--records FILE``."""
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="append one JSON line per plan (its Record) to FILE, for `tracetrim audit`",
    )


def records_observer(args: argparse.Namespace) -> Callable[[Any], object] | None:
    """The observer writing records to ``--records FILE``, or None; an unwritable place is a CLI error."""
    if not args.records:
        return None
    import tracetrim  # the public observer, wherever the record module lives

    path = Path(args.records)
    try:
        with path.open("a", encoding="utf-8"):
            pass  # fail now, not silently inside the observer (the planner swallows observer errors)
    except OSError as exc:
        raise CliError(f"--records {path}: cannot write ({exc.strerror or exc})") from None
    return tracetrim.JsonLinesObserver(path)
