"""Stage 5: ask every batch concurrently under one deadline and accept only complete, valid answers."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim._errors import TracetrimError
from tracetrim._validators import is_count, is_real
from tracetrim.compactor._batches import Batch
from tracetrim.decision import DecisionModel, DecisionResponse, Usage


class InvalidAnswer(TracetrimError, ValueError):
    """A response that is not exactly one finite probability in [0, 1] per question asked."""


class ModelFailed(TracetrimError, RuntimeError):
    """A decision request raised; the original exception is the cause."""


@attrs.frozen
class Answers:
    """All probabilities of one plan, with what they cost."""

    probabilities: dict[str, float]
    requests: int
    usage: Usage
    retries: int
    models: tuple[str, ...]


def probability(name: str, value: Any) -> float:
    """``value`` as a probability, or `InvalidAnswer` naming the answer and what is wrong."""
    if not is_real(value):
        raise InvalidAnswer(f"answer {name!r} is {type(value).__name__} {value!r}, not a probability")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidAnswer(f"answer {name!r} is {value!r}, outside [0, 1]")
    return number


def check_response(batch: Batch, response: Any) -> dict[str, float]:
    """The batch's probabilities, or `InvalidAnswer` naming the first thing wrong."""
    if not isinstance(response, DecisionResponse):
        raise InvalidAnswer(f"decision model returned {type(response).__name__}, not a DecisionResponse")
    answers = response.answers
    if not isinstance(answers, Mapping):
        raise InvalidAnswer(f"answers is {type(answers).__name__}, not a mapping")
    missing = [name for name in batch.questions if name not in answers]
    if missing:
        raise InvalidAnswer(f"missing answers: {', '.join(sorted(missing)[:5])}")
    extra = [name for name in answers if name not in batch.questions]
    if extra:
        raise InvalidAnswer(f"answers to questions not asked: {', '.join(sorted(map(str, extra))[:5])}")
    return {name: probability(name, answers[name]) for name in batch.questions}


def _retries(response: DecisionResponse) -> int:
    value = response.metadata.get("retries", 0) if isinstance(response.metadata, Mapping) else 0
    return value if is_count(value) and value > 0 else 0


async def ask(
    model: DecisionModel,
    state: Mapping[str, Any],
    batches: Sequence[Batch],
    *,
    max_concurrency: int,
) -> Answers:
    """Run every batch (at most ``max_concurrency`` at once); the first failure cancels the rest.

    The caller sets the deadline; cancellation is never swallowed.
    """
    gate = asyncio.Semaphore(max_concurrency)
    responses: list[DecisionResponse] = []
    probabilities: dict[str, float] = {}

    async def one(batch: Batch) -> None:
        async with gate:
            try:
                response = await model(state, batch.questions)
            except (asyncio.CancelledError, InvalidAnswer):
                raise
            except Exception as exc:
                raise ModelFailed(f"{type(exc).__name__}: {exc}") from exc
        probabilities.update(check_response(batch, response))
        responses.append(response)

    try:
        async with asyncio.TaskGroup() as group:
            for batch in batches:
                group.create_task(one(batch))
    except BaseExceptionGroup as failure:
        # Report the first real failure rather than the group wrapper.
        raise _first_cause(failure) from None

    asked = sum(len(batch.questions) for batch in batches)
    if len(probabilities) != asked:
        raise InvalidAnswer(f"{asked - len(probabilities)} questions came back without an answer")
    usage = sum((r.usage for r in responses), Usage())
    models = tuple(sorted({r.model for r in responses}))
    return Answers(probabilities, len(responses), usage, sum(_retries(r) for r in responses), models)


def _first_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_cause(exc)
        return exc
    return group
