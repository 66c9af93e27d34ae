"""What an in-process judge sees: the whole history once, with the pairs it must judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from tracetrim.decision._census import TermCensus


@attrs.frozen
class JudgedPair:
    """One candidate call/result pair as a judge sees it: where it sits and what it says."""

    key: str
    call_id: str
    tool: str
    input: str
    result_text: str
    call_message: int
    result_message: int


@attrs.frozen
class HistoryView:
    """The whole history (read-only), the candidates to judge, and what the agent does next."""

    messages: Sequence[Mapping[str, Any]]
    pairs: Sequence[JudgedPair]
    goal: str = ""
    next_action: str = ""
    census: TermCensus | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)
    """An empty census the planner offers: a judge that tokenises every message may fill it on the
    way (`LearnedDecisionModel` does), which spares the excerpts a second pass; others leave it."""


@attrs.frozen
class PairJudgement:
    """A judge's two answers for one pair: does the call still matter, must the result stay verbatim."""

    keep_call: float
    keep_result: float


@runtime_checkable
class HistoryJudge(Protocol):
    """An in-process judge: sees the whole history once per plan, no state fitting, no batches.

    Remote models answer questions about a bounded state (`DecisionModel`); a judge that runs in the
    host's process has no request limit, so the planner hands it everything and asks once.
    """

    @property
    def name(self) -> str:
        """A short name for records (``learned:<version>``)."""
        ...

    def judge(self, view: HistoryView) -> Mapping[str, PairJudgement]:
        """One judgement per pair key of ``view.pairs``."""
        ...
