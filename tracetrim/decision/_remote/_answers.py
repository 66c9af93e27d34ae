"""Asking a remote model: every batch concurrently, and only complete, valid answers accepted."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim._validators import is_count
from tracetrim.decision._failures import InvalidAnswer, ModelFailed, probability
from tracetrim.decision._protocol import DecisionModel, DecisionResponse, Usage
from tracetrim.decision._remote._batches import Batch


@attrs.frozen
class Answers:
    """All probabilities of one plan, with what they cost."""

    probabilities: dict[str, float]
    requests: int
    usage: Usage
    retries: int
    models: tuple[str, ...]


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

    The caller sets the deadline (the plan's); cancellation is never swallowed.
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
