"""`ScriptedDecisionModel`: answers from a table or a function, for tests, demos and replays."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from tracetrim.decision._protocol import BinaryQuestion, DecisionResponse

AnswerFunction = Callable[[str, BinaryQuestion, Mapping[str, Any]], Any]
"""``(question name, question, state) -> probability``; None leaves the question unanswered."""


@attrs.frozen
class ScriptedCall:
    """One request the scripted model received."""

    state: Mapping[str, Any]
    questions: Mapping[str, BinaryQuestion]


class ScriptedDecisionModel:
    """Answers each question from ``answers`` (a table by question name, or a function).

    A question the table lacks is left unanswered, so the planner rejects the plan, unless a
    ``default`` is given explicitly: a scripted model never invents an answer silently.
    Every request is recorded in ``calls``.
    """

    def __init__(
        self,
        answers: Mapping[str, Any] | AnswerFunction,
        *,
        default: float | None = None,
        name: str = "scripted",
    ) -> None:
        self._answers = answers
        self._default = default
        self.name = name
        self.calls: list[ScriptedCall] = []

    @classmethod
    def by_call_id(
        cls,
        table: Mapping[str, tuple[float, float]],
        *,
        default: tuple[float, float] | None = None,
        name: str = "scripted",
    ) -> ScriptedDecisionModel:
        """Answer by the history's own call ids: ``{call_id: (p_call, p_result)}``.

        The state's call records carry each key's call id, so labels written against a history's ids
        (as in the labelled scenarios) can drive the planner directly.
        """

        last: list[tuple[Mapping[str, Any], dict[str, str]]] = []

        def answer(question_name: str, question: BinaryQuestion, state: Mapping[str, Any]) -> float | None:
            kind, _, key = question_name.partition("_")
            if not last or last[0][0] is not state:  # one index per state, not one scan per question
                last[:] = [(state, _call_ids(state))]
            call_id = last[0][1].get(key)
            pair = table.get(call_id) if call_id is not None else None
            pair = pair if pair is not None else default
            if pair is None:
                return None
            return pair[0] if kind == "call" else pair[1]

        return cls(answer, name=name)

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Answer every question it has an answer for."""
        self.calls.append(ScriptedCall(state, questions))
        answers: dict[str, Any] = {}
        for name, question in questions.items():
            if callable(self._answers):
                value = self._answers(name, question, state)
            else:
                value = self._answers.get(name, self._default)
            if value is None:
                value = self._default
            if value is not None:
                answers[name] = value
        return DecisionResponse(model=self.name, answers=answers)


def _call_ids(state: Mapping[str, Any]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for entry in state.get("history", ()):
        call = entry.get("call") if isinstance(entry, Mapping) else None
        if isinstance(call, Mapping):
            ids[str(call.get("key"))] = str(call.get("call_id"))
    return ids
