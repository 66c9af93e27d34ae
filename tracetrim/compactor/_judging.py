"""Stage 5 for in-process judges: the candidates as a `HistoryView`, the judge's answers as probabilities."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from tracetrim._errors import TracetrimError
from tracetrim._snapshot import Message
from tracetrim.compactor._pairs import Pair
from tracetrim.decision._history import HistoryJudge, HistoryView, JudgedPair


class InvalidJudgement(TracetrimError, ValueError):
    """An in-process judge answered with a missing key or a probability outside [0, 1]."""


def history_view(
    messages: Sequence[Message], pairs: Sequence[Pair], *, goal: str, next_action: str
) -> HistoryView:
    """What an in-process judge sees: every message and the candidate pairs (text results only)."""
    judged = tuple(
        JudgedPair(
            key=pair.key,
            call_id=pair.call_id,
            tool=pair.tool,
            input=pair.input,
            result_text=pair.result_text or "",
            call_message=pair.call_at[0],
            result_message=pair.result_at[0],
        )
        for pair in pairs
        if pair.candidate and pair.call_at is not None and pair.result_at is not None
    )
    return HistoryView(messages=messages, pairs=judged, goal=goal, next_action=next_action)


def judge_history(judge: HistoryJudge, view: HistoryView) -> dict[str, float]:
    """The judge's answers as the planner's ``call_<key>`` / ``result_<key>`` probabilities, checked."""
    answers: Mapping[str, object] = judge.judge(view)
    probabilities: dict[str, float] = {}
    for pair in view.pairs:
        judgement = answers.get(pair.key)
        if judgement is None:
            raise InvalidJudgement(f"the judge gave no answer for pair {pair.key} (call {pair.call_id})")
        for name, value in (("call", judgement.keep_call), ("result", judgement.keep_result)):  # type: ignore[attr-defined]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0.0 <= value <= 1.0
                or math.isnan(value)
            ):
                raise InvalidJudgement(f"{name}_{pair.key}: expected a probability in [0, 1], got {value!r}")
            probabilities[f"{name}_{pair.key}"] = float(value)
    return probabilities
