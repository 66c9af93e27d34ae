"""Learning the run calibration: the self-check's reference, and what judges noted on held-out runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from tracetrim.decision._calibration import check_view
from tracetrim.decision._features import iter_pair_features
from tracetrim.decision._learned import LearnedDecisionModel
from tracetrim.decision._weights import JudgeWeights
from tracetrim.learn._examples import Cut


@attrs.frozen
class CheckRows:
    """One cut's self-check, ready for any weights: the features of the pairs judged at its internal
    cut and whether the run used each again (`tracetrim.decision._calibration.check_view`)."""

    dataset: str
    rows: tuple[tuple[float, ...], ...]
    used: tuple[bool, ...]


def check_rows(cuts: Iterable[Cut]) -> list[CheckRows | None]:
    """Each cut's `CheckRows` (None where its history is too short for a self-check), in order. The
    features do not depend on the weights, so one pass serves every fold's judge."""
    out: list[CheckRows | None] = []
    for cut in cuts:
        found = check_view(cut.view)
        if found is None:
            out.append(None)
            continue
        rows = tuple(tuple(features) for _, features in iter_pair_features(found.view))
        out.append(CheckRows(cut.trajectory.dataset, rows, found.used))
    return out


def reuse_reference(weights: JudgeWeights, checks: Iterable[CheckRows | None]) -> float:
    """Results used again per result ``weights`` expected, over ``checks``, each dataset weighing the
    same (as in the fit); 1.0 when nothing was expected."""
    need = weights.need_function()
    sums: dict[str, list[float]] = {}
    for check in checks:
        if check is None:
            continue
        total = sums.setdefault(check.dataset, [0.0, 0.0, 0.0])
        total[0] += math.fsum(need(row) for row in check.rows)
        total[1] += sum(check.used)
        total[2] += len(check.used)
    if not sums:
        return 1.0
    mean = sum(t[2] for t in sums.values()) / len(sums)
    expected = math.fsum(t[0] * mean / t[2] for t in sums.values() if t[2])
    used = math.fsum(t[1] * mean / t[2] for t in sums.values() if t[2])
    return round(used / expected, 6) if expected > 0 and used > 0 else 1.0


def with_reference(weights: JudgeWeights, checks: Sequence[CheckRows | None]) -> JudgeWeights:
    """``weights`` with `JudgeWeights.reuse_reference` measured on ``checks`` (its training runs')."""
    return attrs.evolve(weights, reuse_reference=reuse_reference(weights, checks))


@attrs.frozen
class NoteSummary:
    """What held-out judges noted over some cuts (those with candidates): how many plans were
    cautious, the mean level shift of the self-check, the mean share of pairs out of range."""

    cuts: int = 0
    cautious: int = 0
    shift: float = 0.0
    out_of_range: float = 0.0

    def __str__(self) -> str:
        return (
            f"{self.cautious} of {self.cuts} plans cautious, levels moved {self.shift:+.2f} on average, "
            f"{self.out_of_range:.0%} of pairs out of range"
        )


def judge_notes(
    cuts: Iterable[Cut], models: Mapping[int, LearnedDecisionModel], fold: Callable[[Cut], int]
) -> NoteSummary:
    """`NoteSummary` of each cut judged by its held-out model (``fold`` says which)."""
    notes = [models[fold(cut)].judge(cut.view).note for cut in cuts if cut.view.pairs]
    if not notes:
        return NoteSummary()
    return NoteSummary(
        cuts=len(notes),
        cautious=sum(n.cautious for n in notes),
        shift=math.fsum(n.level_shift for n in notes) / len(notes),
        out_of_range=math.fsum(n.out_of_range or 0.0 for n in notes) / len(notes),
    )
