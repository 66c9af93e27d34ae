"""How well a judge ranks and how well its need is calibrated, on rows it was not fitted on."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from tracetrim.decision._learned import LearnedDecisionModel
from tracetrim.learn._crossval import FoldOf
from tracetrim.learn._examples import Cut, examples

QUINTILES = 5


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve: the chance a used result scores above an unused one (ties count
    half); NaN when either kind is missing."""
    order = sorted(range(len(scores)), key=scores.__getitem__)
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    pos = sum(labels)
    neg = len(labels) - pos
    rank_sum = sum(r for r, y in zip(ranks, labels, strict=True) if y)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg) if pos and neg else math.nan


def calibration(
    scores: Sequence[float], labels: Sequence[int], bins: int = QUINTILES
) -> list[tuple[float, float]]:
    """(mean predicted need, share actually used) in each of ``bins`` equal slices of the rows by score."""
    ranked = sorted(zip(scores, labels, strict=True))
    out = []
    for q in range(bins):
        part = ranked[len(ranked) * q // bins : len(ranked) * (q + 1) // bins]
        if part:
            out.append((sum(s for s, _ in part) / len(part), sum(y for _, y in part) / len(part)))
    return out


def format_calibration(pairs: Sequence[tuple[float, float]]) -> str:
    """``0.07->0.09  0.14->0.18 ...``: predicted -> observed, slice by slice."""
    return "  ".join(f"{predicted:.2f}->{observed:.2f}" for predicted, observed in pairs)


def held_out_needs(
    cuts: Sequence[Cut], models: Mapping[int, LearnedDecisionModel], fold: FoldOf
) -> tuple[list[float], list[int]]:
    """Each candidate's need by the model of its fold (which never saw its group), and its label."""
    scores: list[float] = []
    labels: list[int] = []
    for k, model in models.items():
        rows = examples([c for c in cuts if fold(c) == k])
        scores.extend(map(model.weights.need_function(), rows.rows))
        labels.extend(rows.labels)
    return scores, labels
