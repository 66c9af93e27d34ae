"""A remote model's questions: two per candidate pair, packed into batches that never split a pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

import attrs

from tracetrim._tokens import TokenCounter
from tracetrim.decision._failures import Failure, JudgeError
from tracetrim.decision._protocol import BinaryQuestion

# Room kept in every request for the backend's own framing (instructions, JSON envelope).
REQUEST_OVERHEAD_TOKENS = 512


class RequestOverBudget(JudgeError, ValueError):
    """A single pair's questions plus the state do not fit ``max_request_tokens``."""

    failure: ClassVar[Failure] = Failure.REQUEST_OVER_BUDGET


class AskedPair(Protocol):
    """What the questions name of a candidate pair (`JudgedPair`, or the planner's own `Pair`)."""

    @property
    def key(self) -> str: ...
    @property
    def tool(self) -> str: ...


def call_question(pair: AskedPair) -> BinaryQuestion:
    """``call_<key>``: does knowing this call happened, with its input, still matter?"""
    return BinaryQuestion(
        instructions=(
            f"Tool call {pair.key} ({pair.tool}) is in the history. Does knowing that this call happened, "
            "with its input, still matter for the agent's next action?"
        ),
        criteria_true="The call's input or the fact it ran is still needed to continue the goal.",
        criteria_false="The call belongs to a finished side task, was superseded, or is irrelevant now.",
    )


def result_question(pair: AskedPair) -> BinaryQuestion:
    """``result_<key>``: must the full result stay verbatim because retrieval later would not do?"""
    return BinaryQuestion(
        instructions=(
            f"Must the full result of tool call {pair.key} ({pair.tool}) stay verbatim in the history, "
            "because retrieving it later would not do?"
        ),
        criteria_true="The next action quotes, copies or closely reasons over the exact result text.",
        criteria_false="A short summary or a later lookup of the result is enough.",
    )


def questions_for(pair: AskedPair) -> dict[str, BinaryQuestion]:
    """The two questions about one candidate pair, by name."""
    return {f"call_{pair.key}": call_question(pair), f"result_{pair.key}": result_question(pair)}


@attrs.frozen
class Batch:
    """One decision request's questions; every batch carries the same state."""

    questions: dict[str, BinaryQuestion]


def _question_tokens(name: str, question: BinaryQuestion, count_tokens: TokenCounter) -> int:
    parts = (name, question.instructions, question.criteria_true or "", question.criteria_false or "")
    return count_tokens(" ".join(parts))


def make_batches(
    candidates: Sequence[AskedPair],
    *,
    state_tokens: int,
    max_questions: int,
    max_request_tokens: int,
    count_tokens: TokenCounter,
) -> list[Batch]:
    """Greedy packing in history order: a batch closes when the next pair would break a limit."""
    room = max_request_tokens - REQUEST_OVERHEAD_TOKENS - state_tokens
    batches: list[Batch] = []
    current: dict[str, BinaryQuestion] = {}
    used = 0
    for pair in candidates:
        asked = questions_for(pair)
        cost = sum(_question_tokens(name, q, count_tokens) for name, q in asked.items())
        if cost > room:
            raise RequestOverBudget(
                f"pair {pair.key} needs {cost} question tokens but only {max(room, 0)} remain of "
                f"max_request_tokens={max_request_tokens} after the state ({state_tokens}) and overhead"
            )
        if current and (len(current) + len(asked) > max_questions or used + cost > room):
            batches.append(Batch(current))
            current, used = {}, 0
        current.update(asked)
        used += cost
    if current:
        batches.append(Batch(current))
    return batches
