"""Train the shipped judge on ../shared/data and report how it does on groups it never saw.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/train_judge.py            # writes tracetrim/decision/judge_weights.json
    .venv/bin/python benchmarks/train_judge.py --check    # refit, compare with the shipped file

The labelled scenarios join as a fourth dataset (critical and needed results count as used again,
irrelevant and superseded ones as not). Every trajectory is cut at 35%, 60% and 85% of its messages
(before an assistant turn); each old candidate result is labelled by whether the agent used it after
the cut: the result a used string first appeared in, and the latest result before the cut that shows
it again (`tracetrim.learn.credited`). The model is 100 gradient-boosted trees (scikit-learn's
HistGradientBoostingClassifier, one thread, seed 0, no early stopping: the same data give the same
trees), exported to plain node arrays that the runtime walks in pure Python; each dataset weighs the
same. Held-out figures use 4 folds by group: a
mini-swe-agent repository, a tau-bench task or a SWE-agent run is never in its own training fold.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetrim.decision._learned import DEFAULT_WEIGHTS  # noqa: E402
from tracetrim.decision._weights import JudgeWeights  # noqa: E402
from tracetrim.learn import (  # noqa: E402
    Examples,
    auc,
    calibration,
    check_rows,
    cuts,
    examples,
    fit_weights,
    fold_of,
    format_calibration,
    group_of,
    joined,
    shared_datasets,
    with_reference,
)
from tracetrim.learn._examples import Cut  # noqa: E402
from tracetrim.learn._scenarios import load_scenarios, scenario_examples  # noqa: E402

SHARED = REPO.parent / "shared"
OUT = REPO / "tracetrim" / "decision" / DEFAULT_WEIGHTS
FOLDS = 4
LEVELS = {"size_exponent": 0.25, "keep_level": -2.7, "call_level": -4.0, "slope": 4.0}
"""The policy: keep verbatim when log(need) - 0.25 log(1 + chars) >= -2.7, keep the call (result
shortened to an excerpt) down to -4.0, drop below. Chosen on a grid of 0.3 steps on held-out folds of
the frontier benchmark (`benchmarks/quality.py`), safety first: the most removed on mini-swe-agent at which
each labelled scenario, held out, keeps every critical result verbatim, with no masking baseline better
on both axes on any dataset. (-2.4 / -3.7 removes 27.1% of mini-swe-agent at 90.4% findable, +14.6
points over masking, but keeps 1 of 3 critical results of a held-out scenario.)"""


def _numbers(weights: JudgeWeights) -> list[float]:
    """Every fitted number of ``weights`` (tree shapes included), in a fixed order."""
    numbers = [*weights.mean, *weights.scale, *weights.coef, weights.intercept, weights.reuse_reference]
    numbers += [*weights.range_low, *weights.range_high]
    for tree in weights.trees:
        numbers += [*tree.feature, *tree.threshold, *tree.left, *tree.right, *tree.value]
    return [float(n) for n in numbers]


def _dataset_held_out(all_cuts: list[Cut], datasets: dict[str, object]) -> dict[str, float]:
    """Per dataset, the AUC of a judge fitted on the other datasets only: how it ranks a kind of agent
    it has never seen (the "unseen kind" column)."""
    out = {}
    for name in datasets:
        train = examples([c for c in all_cuts if c.trajectory.dataset != name])
        test = examples([c for c in all_cuts if c.trajectory.dataset == name])
        model = fit_weights(train, version=f"without-{name}", levels=LEVELS)
        out[name] = auc([model.need(row) for row in test.rows], test.labels)
    return out


def main() -> int:
    """Fit, report held-out AUC and calibration per dataset, write (or check) the weights."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the shipped weights, write nothing"
    )
    args = parser.parse_args()
    datasets = shared_datasets(SHARED)
    all_cuts = [c for trajectories in datasets.values() for c in cuts(trajectories)]
    data = examples(all_cuts)
    print(f"{len(all_cuts)} cuts, {len(data.labels)} old results, {sum(data.labels)} used after the cut")

    held_out = Examples([], [], [], [])
    predicted: list[float] = []
    for k in range(FOLDS):
        train = examples([c for c in all_cuts if fold_of(group_of(c), FOLDS) != k])
        model = fit_weights(train, version=f"fold-{k}", levels=LEVELS)
        test = examples([c for c in all_cuts if fold_of(group_of(c), FOLDS) == k])
        held_out = joined(held_out, test)
        predicted.extend(model.need(row) for row in test.rows)
    unseen = _dataset_held_out(all_cuts, datasets)
    print(
        f"{'dataset':16} {'held-out AUC':>12} {'unseen kind':>11}  "
        "calibration (mean predicted -> share used, by quintile)"
    )
    for name in datasets:
        idx = [i for i, g in enumerate(held_out.groups) if g.startswith(f"{name}/")]
        scores = [predicted[i] for i in idx]
        labels = [held_out.labels[i] for i in idx]
        shown = format_calibration(calibration(scores, labels))
        print(f"{name:16} {auc(scores, labels):12.3f} {unseen[name]:11.3f}  {shown}")

    scenarios = load_scenarios(SHARED / "scenarios")
    labelled = [scenario_examples(s) for s in scenarios.values()]
    print(
        f"+ {len(scenarios)} labelled scenarios: {sum(len(x.labels) for x in labelled)} labelled candidates"
    )
    weights = fit_weights(
        joined(data, *labelled),
        version="shared-2026.12.3",
        levels=LEVELS,
        trained_on={
            "datasets": {name: len(t) for name, t in datasets.items()} | {"scenarios": len(scenarios)},
            "cuts": len(all_cuts),
            "examples": len(data.labels),
            "used_later": sum(data.labels),
        },
    )
    # The self-check's reference: how many results the training runs used again per result expected.
    weights = with_reference(weights, check_rows(all_cuts))
    text = weights.to_json()
    if args.check:
        shipped, fresh = JudgeWeights.load(OUT), JudgeWeights.from_json(text)
        # Sums may run in another order between machines: equal up to rounding is the same model.
        old, new = _numbers(shipped), _numbers(fresh)
        same = shipped.features == fresh.features and len(old) == len(new)
        same = same and all(
            math.isclose(a, b, rel_tol=1e-7, abs_tol=1e-9) for a, b in zip(old, new, strict=True)
        )
        print(f"shipped weights {'match' if same else 'DIFFER from'} a fresh fit")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
