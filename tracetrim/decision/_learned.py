"""`LearnedDecisionModel`: the embedded default judge, a small model learned from real agent runs."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from tracetrim.decision._features import FEATURE_NAMES, iter_pair_features
from tracetrim.decision._history import HistoryView, PairJudgement
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError, DecisionResponse
from tracetrim.decision._weights import JudgeWeights, WeightsError

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
    Called as a remote-style `DecisionModel` (state and questions) it refuses: it needs the history.
    """

    def __init__(self, weights: JudgeWeights | str | Path | None = None) -> None:
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

    @property
    def name(self) -> str:
        """``learned:<version>`` of the weights in use."""
        return f"learned:{self.weights.version}"

    def judge(self, view: HistoryView) -> Mapping[str, PairJudgement]:
        """Both answers for every pair of ``view``."""
        out: dict[str, PairJudgement] = {}
        weights = self.weights
        need_of = weights.need_function()
        for pair, features in iter_pair_features(view):
            need = need_of(features)
            keep_call, keep_result = weights.answers(weights.value(need, len(pair.result_text)))
            out[pair.key] = PairJudgement(keep_call=keep_call, keep_result=keep_result)
        return out

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Not supported: the learned judge reads the whole history, not a bounded state."""
        raise DecisionModelError(
            "LearnedDecisionModel judges whole histories in-process; use it through Compactor, "
            "or use LexicalDecisionModel where a state-and-questions model is needed"
        )

    def __repr__(self) -> str:
        return f"LearnedDecisionModel(version={self.weights.version!r})"
