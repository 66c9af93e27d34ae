"""`LearnedDecisionModel`: the embedded default judge, a small model learned from real agent runs."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from tracetrim.decision._calibration import CAUTIOUS_RECENT, OUT_OF_RANGE_SHARE, note, outside, self_check
from tracetrim.decision._features import FEATURE_NAMES, iter_pair_features
from tracetrim.decision._history import HistoryView, Judgements, PairJudgement
from tracetrim.decision._weights import JudgeWeights, WeightsError

SELF_CHECK_DEFAULT = True
"""Whether the judge checks itself on the run's own past unless told otherwise."""
DEFAULT_WEIGHTS = "judge_weights.json"
"""The shipped weights, next to this module; `benchmarks/train_judge.py` reproduces them."""


@functools.cache
def default_weights() -> JudgeWeights:
    """The weights shipped with tracetrim (read once per process: they are frozen)."""
    text = resources.files("tracetrim.decision").joinpath(DEFAULT_WEIGHTS).read_text(encoding="utf-8")
    return JudgeWeights.from_json(text, source=DEFAULT_WEIGHTS)


class LearnedDecisionModel:
    """Judges every candidate pair from features of the whole history; offline and deterministic.

    An in-process `HistoryJudge`: the planner hands it the full history once per plan (no state
    fitting, no batches), and the time it takes grows linearly with the history. ``weights`` defaults
    to the shipped file; pass a path or `JudgeWeights` from ``tracetrim fit`` to use a team's own.
    It is not a `DecisionModel`: it answers about a whole history, never questions about a state.

    Before it answers it reads the run itself (`tracetrim.decision._calibration`): with
    ``self_check`` it judges the history as it stood at an internal cut, sees how many of those
    results the run used again against how many it expected, and moves its levels by that; with
    ``caution``, when many pairs have features outside its training range it drops nothing and keeps
    the newest pairs whole. What it did is in its answers' `JudgeNote`, and so in the plan's stats.
    """

    def __init__(
        self,
        weights: JudgeWeights | str | Path | None = None,
        *,
        self_check: bool = SELF_CHECK_DEFAULT,
        caution: bool = True,
    ) -> None:
        if weights is None:
            weights = default_weights()
        elif not isinstance(weights, JudgeWeights):
            weights = JudgeWeights.load(weights)
        if weights.features != FEATURE_NAMES:
            missing = sorted(set(weights.features) ^ set(FEATURE_NAMES))
            raise WeightsError(
                f"judge weights {weights.version!r} were trained on other features "
                f"(differs in: {', '.join(missing) or 'order'}); refit them with `tracetrim fit`"
            )
        self.weights = weights
        self.self_check = self_check
        self.caution = caution

    @property
    def name(self) -> str:
        """``learned:<version>`` of the weights in use."""
        return f"learned:{self.weights.version}"

    def judge(self, view: HistoryView) -> Judgements:
        """Both answers for every pair of ``view``, the note on how the run moved them, and the census
        it filled on the way (``view.census``)."""
        weights = self.weights
        need_of = weights.need_function()
        low, high = weights.range_low, weights.range_high
        ranged = self.caution and bool(low)
        scored: list[tuple[str, float, int]] = []
        far = 0
        for pair, features in iter_pair_features(view):
            scored.append((pair.key, need_of(features), len(pair.result_text)))
            if ranged and outside(features, low, high):
                far += 1
        check = self_check(view, need_of) if self.self_check and scored else None
        shift = check.shift(weights.reuse_reference) if check is not None else 0.0
        share = far / len(scored) if ranged and scored else None
        cautious = share is not None and share >= OUT_OF_RANGE_SHARE
        moved = weights.moved(shift) if shift else weights
        recent = len(scored) - CAUTIOUS_RECENT
        out: dict[str, PairJudgement] = {}
        for n, (key, need, chars) in enumerate(scored):
            keep_call, keep_result = moved.answers(moved.value(need, chars))
            if cautious:
                keep_call = 1.0
                if n >= recent:
                    keep_result = 1.0
            out[key] = PairJudgement(keep_call=keep_call, keep_result=keep_result)
        return Judgements(out, note(check, shift, share, cautious), census=view.census)

    def __repr__(self) -> str:
        return (
            f"LearnedDecisionModel(version={self.weights.version!r}, self_check={self.self_check}, "
            f"caution={self.caution})"
        )
