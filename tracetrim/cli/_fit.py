"""`tracetrim fit`: learn the judge from a team's own agent runs and show its held-out frontier."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracetrim.cli._archive_args import ARCHIVE_HELP
from tracetrim.cli._arg_types import finite_float, unit_fraction
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import FORMAT_CHOICES
from tracetrim.cli._runs import read_runs, tool_names


def register(commands: Any) -> None:
    """Add the ``fit`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "fit",
        help="learn which tool results your agent uses again, from its own trajectories",
        description=(
            "Cut each trajectory at several assistant turns, label every earlier result by whether the "
            "agent used it after the cut, fit the judge, print its held-out frontier next to the shipped "
            "judge's and keep-last-N masking on the same runs, and write the weights (use them with "
            "--model-file or DECISION_MODEL_FILE). Runs come "
            "from trajectory files, or from the records of an ENFORCE rollout and the archive they name."
        ),
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="TRAJECTORY",
        help="trajectory files (JSON), or folders of them (every *.json and *.traj file below)",
    )
    parser.add_argument(
        "--records",
        action="append",
        default=[],
        metavar="FILE",
        help="plan records (JSON lines, as JsonLinesObserver writes them); each scope they name is one "
        "run, rebuilt from the --archive snapshots its records refer to (repeatable)",
    )
    parser.add_argument(
        "--archive",
        metavar="URL",
        help="with --records: the archive holding their snapshots, "
        + ARCHIVE_HELP.removeprefix("where snapshots go: "),
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the weights")
    parser.add_argument(
        "--format", choices=FORMAT_CHOICES, default="auto", help="file format (default: by shape)"
    )
    parser.add_argument(
        "--eligible-tools",
        default=None,
        metavar="A,B",
        help="tools the host opts in (default: the file's, the format's, or every tool a run calls; "
        "*: every tool a run calls)",
    )
    parser.add_argument("--folds", type=int, default=4, help="held-out folds, each run in one (default: 4)")
    parser.add_argument(
        "--model",
        choices=("trees", "logistic"),
        default="trees",
        help="boosted trees (default) or a logistic model (smaller; for a few short runs)",
    )
    point = parser.add_mutually_exclusive_group()
    point.add_argument(
        "--level-shift",
        type=finite_float,
        default=0.0,
        metavar="S",
        help="move both policy levels of the weights by S: above 0 more goes, below 0 more stays "
        "(default: 0, the shipped judge's levels)",
    )
    point.add_argument(
        "--target-findable",
        type=unit_fraction,
        default=None,
        metavar="P",
        help="choose the level shift (from -0.9 to +1.2, in steps of 0.3) that removes the most while "
        "the held-out judge still keeps findable at least this share (0-1) of what your agent used later",
    )
    parser.add_argument(
        "--curve",
        action="store_true",
        help="also print the held-out frontier with the levels moved by -0.3, +0.3, +0.6 and +1.0, to choose "
        "a --level-shift on your own runs",
    )
    parser.add_argument("--version", default="custom", help="a name stored in the weights (default: custom)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read, label, cross-validate, fit on everything, write."""
    from tracetrim.decision._learned import default_weights
    from tracetrim.learn import (
        check_rows,
        cuts,
        examples,
        fit_weights,
        format_frontier,
        levels_of,
        shifted,
        with_reference,
    )

    tools = tool_names(args.eligible_tools)
    if not args.files and not args.records:
        raise CliError("fit needs trajectory files or --records (with --archive)")
    if args.records and not args.archive:
        raise CliError("--records needs --archive: the records name snapshots, the archive holds them")
    trajectories = read_runs(args.files, args.format, args.eligible_tools)
    if args.records:
        trajectories.extend(_recorded_runs(args.records, args.archive, tools))
    selected = cuts(trajectories)
    data = examples(selected)
    used = sum(data.labels)
    if not selected or used == 0 or used == len(data.labels):
        raise CliError(
            f"{len(trajectories)} trajectories gave {len(data.labels)} examples ({used} used later): "
            "fitting needs longer runs with tool results that were and were not used again"
        )
    try:
        start = shifted(default_weights(), args.level_shift)
        rows, note, shift = _frontier(selected, levels_of(start), args)
        levels = levels_of(shifted(start, shift))
        weights = fit_weights(
            data,
            version=args.version,
            levels=levels,
            model=args.model,
            trained_on={
                "files": len(args.files),
                "record_files": len(args.records),
                "trajectories": len(trajectories),
                "examples": len(data.labels),
                "used_later": used,
                "level_shift": args.level_shift + shift,
            },
        )
        weights = with_reference(weights, check_rows(selected))
    except ImportError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(f"cannot fit: {exc}") from None
    print(
        f"{len(trajectories)} trajectories, {len(selected)} cuts, {len(data.labels)} old results "
        f"({used} used after the cut)"
    )
    print(format_frontier(rows))
    if note:
        print(note)
    out = Path(args.output)
    try:
        out.write_text(weights.to_json(), encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{out}: cannot write the weights ({exc.strerror or exc})") from None
    print()
    print(_summary(rows))
    print(f"\nwrote {out}; to compact with it instead of the shipped judge:")
    print(f"  tracetrim compact HISTORY.json --model-file {out}")
    print(f"  DECISION_MODEL_FILE={out} tracetrim compact HISTORY.json   (the environment's way)")
    print(f'  tracetrim.decision.LearnedDecisionModel("{out}")   (in Python)')
    return 0


FITTED = "tracetrim (fitted"
"""How the fitted judge's rows start (``tracetrim (fitted)``, ``tracetrim (fitted, +0.3)``)."""
SHIPPED = "shipped judge, as shipped"
"""The row of the shipped judge on the team's runs: a judge that never saw them, at default settings."""


def _summary(rows: list[Any]) -> str:
    """The closing lines: on these runs, the held-out fitted judge beside the shipped one and masking."""
    by_name = {row.strategy: row.point for row in rows}
    fitted = next((row.point for row in rows if row.strategy.startswith(FITTED)), None)
    lines = [
        "On your runs: the fitted judge held out (each run judged by a fold that never saw it), the "
        "shipped judge as it ships:"
    ]
    if fitted is not None:
        lines.append(f"  fitted judge   {fitted.recall:6.1%} findable at {fitted.removed:5.1%} removed")
    else:
        lines.append("  fitted judge   (no held-out figure: too few runs)")
    for label, name in (("shipped judge", SHIPPED), ("keep-last-10", "keep-last-10")):
        point = by_name.get(name)
        if point is not None:
            lines.append(f"  {label:14} {point.recall:6.1%} findable at {point.removed:5.1%} removed")
    shipped = by_name.get(SHIPPED)
    if fitted is not None and shipped is not None:
        lines.append(f"  ({_verdict(fitted, shipped)})")
    return "\n".join(lines)


def _verdict(fitted: Any, shipped: Any) -> str:
    """Which judge the figures favour: ahead on findable at no less removed (a point of slack)."""
    if fitted.recall >= shipped.recall and fitted.removed >= shipped.removed - 0.01:
        return "the fitted judge keeps at least as much at about the same share removed, or more: use it"
    if shipped.recall >= fitted.recall and shipped.removed >= fitted.removed - 0.01:
        return "the shipped judge keeps at least as much at about the same share removed, or more: keep it"
    return "each is ahead on one axis: choose by what matters more to you (findable, or removed)"


TARGET_SHIFTS = tuple(round(0.3 * n, 1) for n in range(-3, 5))
"""The level shifts ``--target-findable`` chooses among: -0.9 to +1.2."""


def _frontier(
    selected: list[Any], levels: dict[str, float], args: argparse.Namespace
) -> tuple[list[Any], str, float]:
    """The held-out frontier rows (the fitted judge first, with ``--curve`` its shifted levels, then
    masking and the excerpt alone), a note on how the held-out judges rank (or why the judge could
    not be held out), and the level shift ``--target-findable`` chose (0 without it)."""
    from tracetrim.decision import LearnedDecisionModel
    from tracetrim.learn import (
        FrontierRow,
        auc,
        calibration,
        curve_rows,
        default_compactor,
        evaluate,
        excerpt_row,
        format_calibration,
        held_out_needs,
        masking_rows,
        shifted_point,
        tracetrim,
    )

    # The shipped judge never saw these runs: what the team has without fitting. The excerpt with no
    # judge beside masking: how much of the fitted judge's lead is the excerpt's.
    shipped = evaluate(selected, tracetrim(default_compactor(LearnedDecisionModel(), minimum_reduction=0.0)))
    rows = [
        FrontierRow("held-out", SHIPPED, shipped),
        *masking_rows("held-out", selected),
        excerpt_row("held-out", selected),
    ]
    held = _held_out_models(selected, levels, args)
    if isinstance(held, str):
        if args.target_findable is not None:
            raise CliError(f"--target-findable needs a held-out frontier to choose from: {held}")
        return rows, f"({held})", 0.0
    models, folds, fold = held
    target = args.target_findable
    if target is None:
        shift, point = 0.0, shifted_point(selected, models, folds, 0.0, fold=fold)
    else:
        points = {s: shifted_point(selected, models, folds, s, fold=fold) for s in TARGET_SHIFTS}
        shift, point = _chosen(target, points)
    label = "tracetrim (fitted)" if target is None else f"tracetrim (fitted, {shift:+.1f})"
    fitted = [FrontierRow("held-out", label, point)]
    if args.curve:
        fitted += curve_rows("held-out", selected, models, folds, label="fitted", fold=fold)
    scores, labels = held_out_needs(selected, models, fold)
    note = (
        f"held-out ranking: AUC {auc(scores, labels):.3f}; need by quintile, predicted -> used: "
        f"{format_calibration(calibration(scores, labels))}"
    )
    if target is not None:
        short = "" if point.recall >= target else " (short of the target: the most cautious shift)"
        note = (
            f"level shift {shift:+.1f} chosen for >= {target:.0%} findable: {point.recall:.1%} at "
            f"{point.removed:.1%} removed{short}\n{note}"
        )
    return fitted + rows, note, shift


def _held_out_models(
    selected: list[Any], levels: dict[str, float], args: argparse.Namespace
) -> tuple[dict[int, Any], int, Any] | str:
    """One judge per fold with its fold count and fold function, or why there cannot be any (a
    phrase the caller puts in a note or an error)."""
    from tracetrim.learn import group_of, held_out_models, ranked_folds

    groups = {group_of(c) for c in selected}
    if len(groups) < 2:
        return "one run: no held-out frontier for the fitted judge; give more runs to see it"
    folds = max(2, min(args.folds, len(groups)))
    fold = ranked_folds(selected, folds)
    try:
        return held_out_models(selected, folds, levels, model=args.model, fold=fold), folds, fold
    except ValueError as exc:  # a fold whose other runs used nothing again, say
        return f"too few runs for a held-out frontier: {exc}"


def _chosen(target: float, points: dict[float, Any]) -> tuple[float, Any]:
    """The shift that removes the most among those keeping ``target`` findable (the most cautious
    when none does), and its point."""
    meeting = [s for s, p in points.items() if p.recall >= target]
    shift = max(meeting, key=lambda s: (points[s].removed, -s)) if meeting else min(points)
    return shift, points[shift]


def _recorded_runs(record_files: list[str], url: str, tools: frozenset[str] | None) -> list[Any]:
    """The runs the records name, rebuilt from the archive at ``url``; what could not be rebuilt is
    said on stderr."""
    import asyncio

    from tracetrim.archive import ArchiveError, close_archive, open_archive
    from tracetrim.audit._observer import RecordError, read_files
    from tracetrim.cli._archive_args import check_exists
    from tracetrim.learn._archived import archived_runs

    try:
        found = read_files(record_files)
    except RecordError as exc:
        raise CliError(str(exc)) from None
    for junk in found.junk:
        print(f"tracetrim: skipped {junk}", file=sys.stderr)
    try:
        archive = open_archive(url)
    except (ArchiveError, ValueError) as exc:
        raise CliError(f"--archive: {exc}") from None
    check_exists(archive, url)

    async def rebuild() -> Any:
        try:
            return await archived_runs(found.records, archive, eligible_tools=tools)
        finally:
            await close_archive(archive)

    runs = asyncio.run(rebuild())
    for problem in runs.problems:
        print(f"tracetrim: {problem}", file=sys.stderr)
    print(
        f"{len(runs.trajectories)} runs rebuilt from {len(found.records)} records "
        f"({runs.unarchived} with no archived history)"
    )
    return list(runs.trajectories)
