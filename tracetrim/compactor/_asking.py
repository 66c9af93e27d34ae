"""Stages 3-5 as the planner runs them: get both probabilities of every candidate from the model.

An in-process `HistoryJudge` (the default learned judge) reads the whole history once; any other
`DecisionModel` answers batched questions about a bounded state under the plan's deadline. Either
way the result is a `Judged` or the `Outcome` saying why the model gave no usable answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs

from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter
from tracetrim.compactor._answers import InvalidAnswer, ModelFailed, ask
from tracetrim.compactor._batches import RequestOverBudget, make_batches
from tracetrim.compactor._config import CompactorConfig
from tracetrim.compactor._judging import history_view, judge_history, stated_plan
from tracetrim.compactor._observation import StateOverBudget, default_goal, default_next_action, observe
from tracetrim.compactor._outcome import Outcome, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._request import CompactionRequest
from tracetrim.decision import DecisionModel, Usage
from tracetrim.decision._census import TermCensus
from tracetrim.decision._history import HistoryJudge, JudgeNote

WHOLE_HISTORY = "whole_history"
"""The fitting stage an in-process judge reports: it saw every message, nothing was fitted."""


@attrs.frozen
class Judged:
    """The answers stage's output, whichever kind of model gave it."""

    probabilities: dict[str, float]
    requests: int = 0
    retries: int = 0
    usage: Usage = attrs.field(factory=Usage)
    state_tokens: int = 0
    stage: str = ""
    census: TermCensus | None = attrs.field(default=None, eq=False, repr=False)
    """The term census an in-process judge filled on its way through the history (None when it made
    none): the excerpts read it (`salience`, which takes it only when it counted every message)
    rather than tokenising the history a second time."""
    note: JudgeNote | None = None
    """What an in-process judge made of the history as a whole (its self-check, its training range)."""


def _error(reason: Reason, detail: str) -> Outcome:
    return Outcome(status=Status.ERROR, reason=reason, detail=detail)


async def judge(
    model: DecisionModel | HistoryJudge,
    messages: list[Message],
    pairs: list[Pair],
    candidates: Sequence[Pair],
    request: CompactionRequest,
    *,
    config: CompactorConfig,
    count: TokenCounter,
    deadline: float,
    budget_s: float,
) -> Judged | Outcome:
    """Both probabilities of every candidate, or the ERROR outcome naming what went wrong."""
    goal = request.goal or default_goal(messages)
    if isinstance(model, HistoryJudge):
        next_action = request.next_action or stated_plan(messages)
        view = history_view(messages, pairs, goal=goal, next_action=next_action, census=True)
        try:
            probabilities, note = judge_history(model, view)
        except ModelFailed as exc:
            return _error(Reason.MODEL_ERROR, str(exc))
        except InvalidAnswer as exc:
            return _error(Reason.INVALID_ANSWER, str(exc))
        return Judged(probabilities, stage=WHOLE_HISTORY, census=view.census, note=note)
    next_action = request.next_action or default_next_action(messages)
    try:
        observation = observe(
            messages,
            pairs,
            goal=goal,
            next_action=next_action,
            preserve_recent=config.preserve_recent_messages,
            preview_chars=config.result_preview_chars,
            max_tokens=config.max_state_tokens,
            count_tokens=count,
        )
        batches = make_batches(
            list(candidates),
            state_tokens=observation.tokens,
            max_questions=config.max_questions,
            max_request_tokens=config.max_request_tokens,
            count_tokens=count,
        )
    except StateOverBudget as exc:
        return _error(Reason.STATE_OVER_BUDGET, str(exc))
    except RequestOverBudget as exc:
        return _error(Reason.REQUEST_OVER_BUDGET, str(exc))
    try:
        async with asyncio.timeout_at(deadline):
            answers = await ask(model, observation.state, batches, max_concurrency=config.max_concurrency)
    except TimeoutError:
        return _error(Reason.TIMEOUT, f"decision requests did not finish within {budget_s} s")
    except ModelFailed as exc:
        return _error(Reason.MODEL_ERROR, str(exc))
    except InvalidAnswer as exc:
        return _error(Reason.INVALID_ANSWER, str(exc))
    return Judged(
        answers.probabilities,
        requests=answers.requests,
        retries=answers.retries,
        usage=answers.usage,
        state_tokens=observation.tokens,
        stage=observation.stage,
    )
