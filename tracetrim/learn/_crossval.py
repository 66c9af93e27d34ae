"""Held-out evaluation: fit on some groups, judge the others, compare with masking on the same cuts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._validators import FieldValueError
from tracetrim.decision._learned import LearnedDecisionModel
from tracetrim.decision._weights import JudgeWeights
from tracetrim.learn._calibrate import check_rows, with_reference
from tracetrim.learn._examples import Cut, Examples, examples, group_of, joined
from tracetrim.learn._fit import fit_weights, fold_of
from tracetrim.learn._frontier import (
    Point,
    default_compactor,
    evaluate,
    excerpt_every,
    keep_last,
    label_oracle,
    tracetrim,
)

MASKING = (
    ("keep-last-3", 3, False),
    ("keep-last-5", 5, False),
    ("keep-last-10", 10, False),
    ("keep-last-15", 15, False),
    ("keep-last-20", 20, False),
    ("keep-last-25", 25, False),
    ("clear-all-but-3", 3, True),
)
"""The baselines: observation masking keeping the last N results, and clearing calls and results."""


FoldOf = Callable[[Cut], int]
"""Which held-out fold a cut is in; every cut of one group in the same fold."""


def hashed_folds(folds: int) -> FoldOf:
    """Folds by a stable hash of each cut's group (`fold_of`): a group's fold never depends on which
    other groups there are (the benchmarks' folds)."""
    return lambda cut: fold_of(group_of(cut), folds)


def ranked_folds(cuts: Sequence[Cut], folds: int) -> FoldOf:
    """Folds by each group's place among the sorted groups of ``cuts``: with at least as many groups
    as folds, no fold is empty (a hash can put a few groups all in one fold)."""
    rank = {group: n for n, group in enumerate(sorted({group_of(c) for c in cuts}))}
    return lambda cut: rank[group_of(cut)] % folds


def held_out_models(
    train: Sequence[Cut],
    folds: int,
    levels: Mapping[str, float],
    *,
    extra: Examples | None = None,
    version: str = "fold",
    model: str = "trees",
    fold: FoldOf | None = None,
    **judge: bool,
) -> dict[int, LearnedDecisionModel]:
    """One ``model`` (see `fit_weights`) per fold, each fitted on the cuts of every other fold (plus
    ``extra`` rows, which are never evaluated here: labelled scenarios, say), its self-check's
    reference measured on those cuts (`with_reference`). ``fold`` says which fold a cut is in
    (default: a stable hash of its group, `fold_of`); ``judge`` goes to each `LearnedDecisionModel`
    (``self_check``, ``caution``)."""
    fold = fold or hashed_folds(folds)
    checks = check_rows(train)
    models = {}
    for k in range(folds):
        rows = examples([c for c in train if fold(c) != k])
        if extra is not None:
            rows = joined(rows, extra)
        if not rows.rows:
            groups = len({group_of(c) for c in train})
            raise FieldValueError(
                f"held-out fold {k} of {folds} has nothing to train on: its cuts are every cut there is "
                f"({groups} group(s)); give runs of more groups (repositories, tasks)"
            )
        weights = fit_weights(rows, version=f"{version}-{k}", levels=levels, model=model)
        weights = with_reference(weights, [c for c, cut in zip(checks, train, strict=True) if fold(cut) != k])
        models[k] = LearnedDecisionModel(weights, **judge)
    return models


def held_out_point(
    cuts: Sequence[Cut],
    models: Mapping[int, LearnedDecisionModel],
    folds: int,
    *,
    fold: FoldOf | None = None,
    **config: Any,
) -> Point:
    """tracetrim's totals on ``cuts``, each judged by the model that never saw its group (``fold``:
    as given to `held_out_models`)."""
    fold = fold or hashed_folds(folds)
    by_fold = {k: default_compactor(model, **config) for k, model in models.items()}
    return evaluate(cuts, lambda cut: tracetrim(by_fold[fold(cut)])(cut))


@attrs.frozen
class FrontierRow:
    """One strategy's point on one dataset."""

    dataset: str
    strategy: str
    point: Point


def masking_rows(dataset: str, cuts: Sequence[Cut]) -> list[FrontierRow]:
    """Every masking baseline on ``cuts``."""
    return [
        FrontierRow(dataset, name, evaluate(cuts, keep_last(n, clear_inputs=clear)))
        for name, n, clear in MASKING
    ]


EXCERPT_EVERY = "excerpt every result"
"""The row of the no-judgement baseline (`excerpt_every`)."""


def excerpt_row(dataset: str, cuts: Sequence[Cut]) -> FrontierRow:
    """Every old result shortened to its excerpt and none dropped: what the excerpt gives without a
    judge, next to masking (it reads nothing of the future, so unlike the oracles it is a competitor)."""
    return FrontierRow(dataset, EXCERPT_EVERY, evaluate(cuts, excerpt_every()))


def oracle_rows(dataset: str, cuts: Sequence[Cut]) -> list[FrontierRow]:
    """The label ceilings on ``cuts`` (they read the future: a scale, not a competitor)."""
    return [
        FrontierRow(dataset, "oracle: used verbatim", evaluate(cuts, label_oracle(used_lines=False))),
        FrontierRow(dataset, "oracle: head+used lines", evaluate(cuts, label_oracle(used_lines=True))),
    ]


LEVEL_SHIFTS = (-0.3, 0.3, 0.6, 1.0)
"""Both policy levels moved by these amounts trace a judge's curve around its point (more goes as
the levels rise); on mini-swe-agent the last reaches the far end of the issue's 15-35% band."""


def shifted(weights: JudgeWeights, shift: float) -> JudgeWeights:
    """``weights`` with both policy levels moved by ``shift`` (the model itself unchanged)."""
    # Rounded: -2.7 + 0.3 is stored as -2.4, not -2.4000000000000004.
    return weights.moved(shift)


def rejudged(
    model: LearnedDecisionModel, *, weights: JudgeWeights | None = None, **judge: bool
) -> LearnedDecisionModel:
    """``model`` again with other ``weights`` or other `LearnedDecisionModel` switches (``self_check``,
    ``caution``); what is not given stays as it was."""
    settings = {"self_check": model.self_check, "caution": model.caution} | judge
    return LearnedDecisionModel(weights or model.weights, **settings)


def curve_rows(
    dataset: str,
    cuts: Sequence[Cut],
    models: Mapping[int, LearnedDecisionModel],
    folds: int,
    *,
    label: str = "tracetrim",
    fold: FoldOf | None = None,
) -> list[FrontierRow]:
    """The held-out ``models`` again with both levels shifted by each of `LEVEL_SHIFTS`."""
    return [
        FrontierRow(
            dataset, f"{label}, levels {shift:+.1f}", shifted_point(cuts, models, folds, shift, fold=fold)
        )
        for shift in LEVEL_SHIFTS
    ]


def shifted_point(
    cuts: Sequence[Cut],
    models: Mapping[int, LearnedDecisionModel],
    folds: int,
    shift: float,
    *,
    fold: FoldOf | None = None,
) -> Point:
    """`held_out_point` (the proposals, whatever ``minimum_reduction`` says) of ``models`` with both
    levels moved by ``shift``."""
    moved = {k: rejudged(m, weights=shifted(m.weights, shift)) for k, m in models.items()}
    return held_out_point(cuts, moved, folds, fold=fold, minimum_reduction=0.0)


def levels_of(weights: JudgeWeights) -> dict[str, float]:
    """The policy settings of ``weights``, to fit new weights that decide the same way."""
    return {name: getattr(weights, name) for name in ("size_exponent", "keep_level", "call_level", "slope")}


def format_frontier(rows: Sequence[FrontierRow], extra: Callable[[FrontierRow], str] | None = None) -> str:
    """A plain-text table: dataset, strategy, findable and verbatim recall, share removed, cuts."""
    lines = [
        f"{'dataset':16} {'strategy':26} {'findable':>9} {'verbatim':>9} {'removed':>8} {'needed':>7} "
        f"{'cuts':>5}"
    ]
    for row in rows:
        p = row.point
        line = (
            f"{row.dataset:16} {row.strategy:26} {p.recall:9.1%} {p.verbatim_recall:9.1%} "
            f"{p.removed:8.1%} {p.needed:7d} {p.cuts:5d}"
        )
        lines.append(line + (f"  {extra(row)}" if extra else ""))
    return "\n".join(lines)
