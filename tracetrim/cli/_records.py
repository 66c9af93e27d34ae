"""``--records FILE``: every plan's `Record` appended as one JSON line, the input `tracetrim audit` reads."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracetrim.cli._errors import CliError

RECORD_DETAILS = {"numbers": (False, False), "pairs": (True, False), "content": (True, True)}
"""``--record-detail`` choices as `JsonLinesObserver`'s ``(pairs, content)``."""


def add_records_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--records FILE`` and ``--record-detail``."""
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="append one JSON line per plan (its Record) to FILE, for `tracetrim audit` (--html too)",
    )
    parser.add_argument(
        "--record-detail",
        choices=tuple(RECORD_DETAILS),
        default="pairs",
        help="what each record carries: numbers (the plan's stats only), pairs (default: also each "
        "pair's tool, action, probabilities and sizes, what `audit --html` charts; no content) or "
        "content (also each pair's call input and result text)",
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
    pairs, content = RECORD_DETAILS[getattr(args, "record_detail", "pairs")]
    return tracetrim.JsonLinesObserver(path, pairs=pairs, content=content)
