"""Stage 5 as the planner runs it: one judge, the whole history, both probabilities of every candidate.

Every model reaches the planner as a `HistoryJudge` (`tracetrim.decision._remote.as_judge` wraps a
remote `DecisionModel`). The judge is awaited where it needs awaiting, under the plan's deadline; its
`Judgements` carry what the plan's stats report, and a failure names its own outcome reason
(`JudgeError.failure`). The result is a `Judged` or the `Outcome` saying why there is no usable answer.
"""

from __future__ import annotations

import asyncio

import attrs

from tracetrim._snapshot import Message
from tracetrim.compactor._judging import history_view, probabilities_of, stated_plan
from tracetrim.compactor._outcome import Outcome, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._request import CompactionRequest
from tracetrim.decision import Usage
from tracetrim.decision._census import TermCensus
from tracetrim.decision._failures import JudgeError, ModelFailed
from tracetrim.decision._goal import default_goal
from tracetrim.decision._history import HistoryJudge, HistoryView, Judgements, JudgeNote, judgements_of


@attrs.frozen
class Judged:
    """The answers stage's output: the probabilities and what the judge reported with them."""

    probabilities: dict[str, float]
    requests: int = 0
    retries: int = 0
    usage: Usage = attrs.field(factory=Usage)
    state_tokens: int = 0
    stage: str = ""
    census: TermCensus | None = attrs.field(default=None, eq=False, repr=False)
    """The term census the judge filled on its way through the history (None when it made none):
    the excerpts read it (`salience`, which takes it only when it counted every message) rather
    than tokenising the history a second time."""
    note: JudgeNote | None = None
    """What the judge made of the history as a whole (its self-check, its training range)."""


def _error(reason: Reason, detail: str) -> Outcome:
    return Outcome(status=Status.ERROR, reason=reason, detail=detail)


async def _asked(judge: HistoryJudge, view: HistoryView) -> Judgements:
    """The judge's `Judgements`; anything it raises that is not a `JudgeError` is `ModelFailed`."""
    try:
        return await judgements_of(judge, view)
    except JudgeError:
        raise
    except Exception as exc:
        raise ModelFailed(f"{type(exc).__name__}: {exc}") from exc


async def judge(
    judge: HistoryJudge,
    messages: list[Message],
    pairs: list[Pair],
    request: CompactionRequest,
    *,
    deadline: float,
    budget_s: float,
) -> Judged | Outcome:
    """Both probabilities of every candidate, or the ERROR outcome naming what went wrong."""
    view = history_view(
        messages,
        pairs,
        goal=request.goal or default_goal(messages),
        next_action=request.next_action or stated_plan(messages),
        census=True,
        host_next_action=request.next_action,
    )
    try:
        # An in-process judge never waits, so the deadline cannot cut it short; a remote one is
        # cancelled at the deadline with every request it has in flight.
        async with asyncio.timeout_at(deadline):
            answers = await _asked(judge, view)
        probabilities = probabilities_of(view, answers)
    except TimeoutError:
        return _error(Reason.TIMEOUT, f"decision requests did not finish within {budget_s} s")
    except JudgeError as exc:
        return _error(Reason[exc.failure.name], str(exc))
    return Judged(
        probabilities,
        requests=answers.requests,
        retries=answers.retries,
        usage=answers.usage,
        state_tokens=answers.state_tokens,
        stage=answers.stage,
        census=answers.census,
        note=answers.note,
    )
