"""The frontier benchmark: needed content still there against how much of the history went, on held-out data.

Run from the repository root (about three minutes on two cores):

    .venv/bin/python benchmarks/quality.py                 # every dataset in ../shared
    .venv/bin/python benchmarks/quality.py --limit 20      # a quick slice: 20 runs per dataset

What is measured:
- Real runs (mini-swe-agent, SWE-agent, tau-bench): each trajectory is cut at 35%, 60% and 85% of its
  messages; the prefix is compacted by tracetrim at default settings (SHADOW; the proposal is scored
  even where ``minimum_reduction`` would keep the original, so the judge's decisions are measured; the
  row "adopted" scores only what ENFORCE would adopt, a plan under 10% counting as no change) and
  by masking baselines, and once more with a token budget (down to 2/3 of the prefix's tokens; a target
  the protections do not allow leaves the prefix unchanged), and with both policy levels shifted
  (`tracetrim.learn.LEVEL_SHIFTS`), tracing the judge's curve against masking's; the row "excerpt every
  result" shortens every old result and drops none (the excerpt alone, no judge). An
  old result the agent used after the cut (`tracetrim.learn.evidence`) counts as *findable* when every
  string it was used for is still somewhere in the compacted prefix, and as *verbatim* when the result
  is unchanged (or, for a long one, still whole inside a later result its pointer names). *Removed* is
  the share of the prefix's characters (canonical JSON, summed over cuts). tracetrim's judge is
  refitted per fold and only judges groups it never saw (4 folds by repository, task or run).
- The judge reads each run before judging it (`tracetrim.decision._calibration`: its self-check on the
  run's own past moves its levels, and features outside its training range make it cautious); the row
  "uncalibrated" is the same held-out judges without either, and "What the judges read" says how often
  each fired.
- Agent kinds left out: each dataset judged by judges fitted on the other datasets only, at the
  default settings (with and without each of the two readings) and along the level curve, beside the
  judge that saw its kind and masking; targets: more findable than masking's curve at the same share
  removed (where masking keeps everything too, a tie), and within 5 points of the judge that saw it.
- Labelled scenarios: leave one out; the judge is fitted on the real runs and the other scenario, and
  once on the real runs alone (no labelled history: a kind of history it has never seen labelled).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetrim._validators import FieldValueError  # noqa: E402
from tracetrim.decision import LearnedDecisionModel  # noqa: E402
from tracetrim.decision._learned import default_weights  # noqa: E402
from tracetrim.decision._weights import JudgeWeights  # noqa: E402
from tracetrim.learn import (  # noqa: E402
    Examples,
    FrontierRow,
    Point,
    curve_rows,
    cuts,
    examples,
    excerpt_row,
    fit_weights,
    format_frontier,
    hashed_folds,
    held_out_models,
    held_out_point,
    joined,
    judge_notes,
    levels_of,
    masking_rows,
    oracle_rows,
    rejudged,
    shared_datasets,
    shortening_score,
)
from tracetrim.learn._examples import Cut  # noqa: E402
from tracetrim.learn._quality import Case, evaluate, format_table, standard_strategies, tracetrim_strategy  # noqa: E402
from tracetrim.learn._scenarios import critical_values, load_scenarios, scenario_examples  # noqa: E402

SHARED = REPO.parent / "shared"
Scenarios = dict[str, dict[str, Any]]
"""Labelled histories by name, as `load_scenarios` reads them."""
FOLDS = 4
UNCALIBRATED = "tracetrim, uncalibrated"
"""The row of the same judges without reading the run (no self-check, no out-of-range caution)."""
BUDGET_SHARE = 2 / 3
"""The budget row: each cut taken as at the trigger and compacted to two thirds of its tokens (a host
compacting at 60% of its context window down to 40%)."""


def scenario_section(
    scenarios: Scenarios, scenario_rows: dict[str, Examples], train_rows: Examples, failures: list[str]
) -> None:
    """Leave-one-scenario-out table and its targets (``scenario_rows``: each scenario's training rows)."""
    levels = levels_of(default_weights())
    # No labelled history at all: how the judge does on a kind of history it has never seen labelled.
    real_only = LearnedDecisionModel(fit_weights(train_rows, version="real-runs-only", levels=levels))
    rows = []
    margins: list[str] = []
    for name, scenario in scenarios.items():
        others = [their_rows for n, their_rows in scenario_rows.items() if n != name]
        weights = fit_weights(joined(train_rows, *others), version=f"without-{name}", levels=levels)
        strategies = [
            ("tracetrim (held out)", tracetrim_strategy(LearnedDecisionModel(weights))),
            ("tracetrim (real runs only)", tracetrim_strategy(real_only)),
        ]
        strategies += [s for s in standard_strategies() if s[0] != "tracetrim"]
        case_rows = asyncio.run(evaluate(Case.from_scenario(scenario), strategies))
        margins.append(_margins(name, critical_values(scenario, weights), weights))
        rows.extend(case_rows)
        score = case_rows[0].labels
        assert score is not None
        for column in ("critical", "protected", "must_contain"):
            count = getattr(score, column)
            if not count.complete:
                failures.append(f"scenario {name}: {column} {count}")
        if score.irrelevant.kept < 0.6 * score.irrelevant.total:
            failures.append(f"scenario {name}: irrelevant cut {score.irrelevant} < 60%")
    print("## Labelled scenarios (leave one out)\n")
    print(format_table(rows))
    drop = levels["call_level"] - levels["keep_level"]
    print("\nEach critical result's value under its held-out judge, less the keep level: below 0 it is")
    print(f"shortened (unless its excerpt would not be short enough), below {drop:+.1f} dropped")
    print("\n".join(margins))


def _margins(name: str, values: dict[str, float], weights: JudgeWeights) -> str:
    return f"  {name}: " + ", ".join(f"{k} {v - weights.keep_level:+.2f}" for k, v in sorted(values.items()))


def _masking_dominates(rows: list[FrontierRow]) -> list[str]:
    ours = rows[0].point
    return [
        row.strategy
        for row in rows[1:]
        if row.point.recall >= ours.recall
        and row.point.removed >= ours.removed
        and (row.point.recall, row.point.removed) != (ours.recall, ours.removed)
    ]


def real_section(
    shared: Path, limit: int | None, extra: Examples, failures: list[str], seen: dict[str, Seen]
) -> Examples:
    """Held-out frontier per real dataset, each fold's judge also trained on the ``extra`` rows (the
    labelled scenarios'); returns every real-run row for the scenario section and fills ``seen`` with
    each dataset's cuts, its judge's point and masking's rows, for the kind-left-out section."""
    datasets = shared_datasets(shared)
    if limit:
        datasets = {name: t[:limit] for name, t in datasets.items()}
    by_dataset = {name: cuts(t) for name, t in datasets.items()}
    for name in [name for name, selected in by_dataset.items() if not selected]:
        # Another shared folder may hold only some datasets: an absent one is not measured, not met.
        failures.append(f"{name}: no runs under {shared / 'data'}, so its targets are not measured")
        del by_dataset[name]
    every = [c for cs in by_dataset.values() for c in cs]
    levels = levels_of(default_weights())
    try:
        models = held_out_models(every, FOLDS, levels, extra=extra)
    except FieldValueError as exc:
        failures.append(f"real runs not measured: {exc}")
        return Examples([], [], [], [])
    uncalibrated = {k: rejudged(m, self_check=False, caution=False) for k, m in models.items()}
    print("\n## Real runs: held-out frontier\n")
    all_rows: list[FrontierRow] = []
    notes: list[str] = []
    for name, selected in by_dataset.items():
        started = time.perf_counter()
        ours = held_out_point(selected, models, FOLDS, minimum_reduction=0.0)
        per_cut_ms = (time.perf_counter() - started) / max(len(selected), 1) * 1000
        rows = [
            FrontierRow(name, f"tracetrim ({per_cut_ms:.0f} ms/plan)", ours),
            *masking_rows(name, selected),
        ]
        budgeted = held_out_point(selected, models, FOLDS, budget_share=BUDGET_SHARE)
        curve = curve_rows(name, selected, models, FOLDS)
        plain = held_out_point(selected, uncalibrated, FOLDS, minimum_reduction=0.0)
        adopted = held_out_point(selected, models, FOLDS)  # what ENFORCE adopts: minimum_reduction 10%
        all_rows.extend(
            [
                *rows,
                excerpt_row(name, selected),
                *curve,
                FrontierRow(name, UNCALIBRATED, plain),
                FrontierRow(name, "tracetrim, adopted", adopted),
                FrontierRow(name, "tracetrim, budget 2/3", budgeted),
                *oracle_rows(name, selected),
            ]
        )
        if name == "mini-swe-agent":  # the curve target is mini-swe-agent's alone
            _curve_target(curve, rows, failures)
        _budget_target(name, budgeted, rows, failures)
        dominated_by = _masking_dominates(rows)
        if dominated_by:
            failures.append(f"{name}: {', '.join(dominated_by)} is better on both recall and reduction")
        _targets(name, ours, failures)
        seen[name] = Seen(selected, ours, rows[1:])
        notes.append(f"  {name}: {judge_notes(selected, models, hashed_folds(FOLDS))}")
    print(format_frontier(all_rows))
    print("\nWhat the judges read in each run (`JudgeNote`, in every plan's stats):")
    print("\n".join(notes))
    if "mini-swe-agent" in by_dataset:
        shortening_section(by_dataset["mini-swe-agent"], failures)
    return examples(every)  # real runs only: each scenario is held out in its own section


@attrs.frozen
class Seen:
    """One dataset as the within-kind folds saw it: its cuts, the judge's point, masking's rows."""

    cuts: list[Cut]
    point: Point
    masking: list[FrontierRow]


def kind_section(seen: dict[str, Seen], extra: Examples, failures: list[str]) -> None:
    """Leave one agent kind out: each dataset judged by a judge fitted on the other datasets only (and
    the ``extra`` rows), at the default levels and along the level curve, beside the judge that saw its
    kind and masking. Targets: above masking's curve at the same share removed, and within 5 points of
    the within-kind judge's findable share."""
    names = sorted(seen)
    if len(names) < 2:
        failures.append(f"agent kinds left out: {len(names)} dataset(s), so nothing to leave out")
        return

    def kind(cut: Cut) -> int:
        return names.index(cut.trajectory.dataset)

    every = [cut for name in names for cut in seen[name].cuts]
    models = held_out_models(
        every, len(names), levels_of(default_weights()), extra=extra, version="without-kind", fold=kind
    )
    variants = {
        "left out, uncalibrated": {"self_check": False, "caution": False},
        "left out, self-check only": {"self_check": True, "caution": False},
        "left out, range only": {"self_check": False, "caution": True},
    }
    rows: list[FrontierRow] = []
    notes: list[str] = []
    for name in names:
        data = seen[name]
        ours = held_out_point(data.cuts, models, len(names), fold=kind, minimum_reduction=0.0)
        others = [
            FrontierRow(
                name,
                label,
                held_out_point(
                    data.cuts,
                    {k: rejudged(m, **switches) for k, m in models.items()},
                    len(names),
                    fold=kind,
                    minimum_reduction=0.0,
                ),
            )
            for label, switches in variants.items()
        ]
        rows += [
            FrontierRow(name, "tracetrim, kind left out", ours),
            *others,
            *curve_rows(name, data.cuts, models, len(names), label="left out", fold=kind),
            FrontierRow(name, "tracetrim, kind seen", data.point),
            *data.masking,
        ]
        notes.append(f"  {name}: {judge_notes(data.cuts, models, kind)}")
        line = _interpolate(_masking_curve(data.masking), ours.removed)
        # Keeping more than masking is impossible where both keep everything (SWE-agent's few used results).
        if line is not None and (ours.recall < line or ours.recall == line < 1.0):
            failures.append(
                f"{name} left out: {ours.recall:.1%} findable at {ours.removed:.1%} removed, masking "
                f"{line:.1%} at the same share"
            )
        if ours.recall < data.point.recall - 0.05:
            failures.append(
                f"{name} left out: {ours.recall:.1%} findable, {data.point.recall - ours.recall:.1%} under "
                f"the judge that saw it ({data.point.recall:.1%}; target within 5 points)"
            )
    print("\n## Agent kinds left out: each dataset judged by a judge that never saw its kind\n")
    print(format_frontier(rows))
    print("\nWhat the judges that never saw the kind read in each run:")
    print("\n".join(notes))


def _masking_curve(rows: list[FrontierRow]) -> list[tuple[float, float]]:
    """The keep-last-N points among ``rows`` as (removed, recall), by removed."""
    return sorted((r.point.removed, r.point.recall) for r in rows if "keep-last" in r.strategy)


def _curve_target(curve: list[FrontierRow], rows: list[FrontierRow], failures: list[str]) -> None:
    """Between 15% and 35% removed, every point of the curve at least 15 points over masking's."""
    masking = _masking_curve(rows)
    for row in [rows[0], *curve]:
        point = row.point
        line = _interpolate(masking, point.removed)
        if 0.15 <= point.removed <= 0.35 and line is not None and point.recall - line < 0.15:
            # Where masking keeps more than 85%, +15 points is more than any strategy can keep.
            reach = f"; masking keeps {line:.1%} there, so +15 is out of reach" if line > 0.85 else ""
            failures.append(
                f"{row.dataset}: {row.strategy.split(' (')[0]} {point.recall - line:+.1%} over masking's "
                f"curve at {point.removed:.1%} removed (target >= 15 points between 15% and 35%{reach})"
            )


def shortening_section(selected: list[Cut], failures: list[str]) -> None:
    """Head against excerpt on every long old result the agent used later (issue 12's comparison)."""
    print("\n## Shortening: what a cut result still holds (mini-swe-agent, used results over 1,000 chars)\n")
    print(f"{'shortening':28} {'used strings kept':>18} {'chars kept':>11} {'results':>8}")
    scores = {}
    for label, budget in (("300-character head", 0), ("head + 700-char excerpt", 700)):
        score = scores[budget] = shortening_score(selected, head=300, budget=budget)
        print(f"{label:28} {score.recall:18.1%} {score.kept_share:11.1%} {score.needed:8d}")
    if scores[700].recall <= scores[0].recall:
        failures.append("the excerpt keeps the used lines no more often than the 300-character head")


def _targets(name: str, ours: Point, failures: list[str]) -> None:
    if name == "mini-swe-agent" and (ours.recall < 0.90 or ours.removed < 0.25):
        failures.append(
            f"mini-swe-agent: {ours.recall:.1%} findable at {ours.removed:.1%} removed "
            "(target >= 90% at >= 25%)"
        )
    # The issue counts needed *values* kept word for word, wherever they are (its oracle keeps only
    # the latest copy of each value): the findable column. Whole results unchanged is stricter.
    if name == "tau-bench" and (ours.recall < 0.99 or ours.removed < 0.05):
        failures.append(
            f"tau-bench: {ours.recall:.1%} of needed values still there at {ours.removed:.1%} removed "
            "(target >= 99% at >= 5%)"
        )


def _budget_target(name: str, budgeted: Point, rows: list[FrontierRow], failures: list[str]) -> None:
    """Issue 12's comparison: at a realistic budget the judge keeps more than masking at the same size."""
    curve = _interpolate(_masking_curve(rows), budgeted.removed)
    # Keeping more than masking is impossible where both keep everything (SWE-agent's few used results).
    if curve is not None and (budgeted.recall < curve or budgeted.recall == curve < 1.0):
        failures.append(
            f"{name}: the 2/3 budget keeps {budgeted.recall:.1%} at {budgeted.removed:.1%} removed, "
            f"masking {curve:.1%} at the same size"
        )


def _interpolate(points: list[tuple[float, float]], x: float) -> float | None:
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= x <= x1 and x1 > x0:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def main() -> int:
    """Print both sections and the targets; exit 1 when a target is short."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder (default ../shared)")
    parser.add_argument("--limit", type=int, default=0, help="at most N runs per dataset (0: all)")
    args = parser.parse_args()
    failures: list[str] = []
    started = time.perf_counter()
    scenarios = load_scenarios(args.shared / "scenarios")
    scenario_rows = {name: scenario_examples(s) for name, s in scenarios.items()}
    seen: dict[str, Seen] = {}
    extra = joined(*scenario_rows.values())
    train_rows = real_section(args.shared, args.limit or None, extra, failures, seen)
    kind_section(seen, extra, failures)
    print()
    if scenarios:
        scenario_section(scenarios, scenario_rows, train_rows, failures)
    else:
        failures.append(f"scenarios: no labelled histories under {args.shared / 'scenarios'}: not measured")
    print(f"\n({time.perf_counter() - started:.0f} s)")
    print("\nTargets: " + ("all met" if not failures else "SHORT:\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
