"""`tracetrim fit`: learn the judge from a team's own agent runs and show its held-out frontier."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import FORMAT_CHOICES


def register(commands: Any) -> None:
    """Add the ``fit`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "fit",
        help="learn which tool results your agent uses again, from its own trajectories",
        description=(
            "Cut each trajectory at several assistant turns, label every earlier result by whether the "
            "agent used it after the cut, fit the judge, print its held-out frontier next to keep-last-N "
            "masking, and write the weights (use them with --model-file or DECISION_MODEL_FILE)."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="TRAJECTORY", help="trajectory files (JSON)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the weights")
    parser.add_argument(
        "--format", choices=FORMAT_CHOICES, default="auto", help="file format (default: by shape)"
    )
    parser.add_argument(
        "--eligible-tools",
        default=None,
        metavar="A,B",
        help="tools the host opts in (default: every tool the trajectories call)",
    )
    parser.add_argument("--folds", type=int, default=4, help="held-out folds, by file (default: 4)")
    parser.add_argument(
        "--model",
        choices=("trees", "logistic"),
        default="trees",
        help="boosted trees (default) or a logistic model (smaller; for a few short runs)",
    )
    parser.add_argument("--version", default="custom", help="a name stored in the weights (default: custom)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read, label, cross-validate, fit on everything, write."""
    from tracetrim.decision._learned import default_weights
    from tracetrim.learn import (
        FrontierRow,
        cuts,
        examples,
        fit_weights,
        format_frontier,
        from_file,
        group_of,
        held_out_models,
        held_out_point,
        levels_of,
        masking_rows,
    )

    tools = (
        frozenset(t.strip() for t in args.eligible_tools.split(",") if t.strip())
        if args.eligible_tools
        else None
    )
    trajectories = []
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise CliError(f"{name}: no such file")
        try:
            trajectories.extend(from_file(path, fmt=args.format, eligible_tools=tools))
        except (ValueError, KeyError, TypeError) as exc:
            raise CliError(f"{name}: {exc}") from None
    selected = cuts(trajectories)
    data = examples(selected)
    used = sum(data.labels)
    if not selected or used == 0 or used == len(data.labels):
        raise CliError(
            f"{len(trajectories)} trajectories gave {len(data.labels)} examples ({used} used later): "
            "fitting needs longer runs with tool results that were and were not used again"
        )
    levels = levels_of(default_weights())
    groups = {group_of(c) for c in selected}
    folds = max(2, min(args.folds, len(groups)))
    rows = masking_rows("held-out", selected)
    try:
        if len(groups) >= 2:
            models = held_out_models(selected, folds, levels, model=args.model)
            rows.insert(
                0,
                FrontierRow(
                    "held-out",
                    "tracetrim (fitted)",
                    held_out_point(selected, models, folds, minimum_reduction=0.0),
                ),
            )
        weights = fit_weights(
            data,
            version=args.version,
            levels=levels,
            model=args.model,
            trained_on={
                "files": len(args.files),
                "trajectories": len(trajectories),
                "examples": len(data.labels),
                "used_later": used,
            },
        )
    except ImportError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(f"cannot fit: {exc}") from None
    print(
        f"{len(trajectories)} trajectories, {len(selected)} cuts, {len(data.labels)} old results "
        f"({used} used after the cut)"
    )
    print(format_frontier(rows))
    if len(groups) < 2:
        print("(one file: no held-out frontier for the fitted judge; give more files to see it)")
    out = Path(args.output)
    try:
        out.write_text(weights.to_json(), encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{out}: cannot write the weights ({exc.strerror or exc})") from None
    print(f"wrote {out}: use it with --model-file {out} or DECISION_MODEL_FILE={out}")
    return 0
