"""What an in-process judge sees: the whole history once, with the pairs it must judge."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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


@attrs.frozen
class JudgeNote:
    """What an in-process judge made of a history as a whole, for the plan's stats and detail.

    ``level_shift`` is how far it moved its policy levels for this run (negative: it keeps more),
    ``reuse`` the results the run used again per result it expected at its self-check (None: no
    self-check), ``out_of_range`` the share of pairs with a feature outside its training range (None:
    not known), ``cautious`` whether it turned cautious, and ``text`` one line saying so ("" when
    there is nothing to say).
    """

    level_shift: float = 0.0
    reuse: float | None = None
    out_of_range: float | None = None
    cautious: bool = False
    text: str = ""


@attrs.frozen
class Judgements(Mapping[str, PairJudgement]):
    """A judge's answers by pair key (a read-only mapping), with its `JudgeNote` on the history."""

    answers: Mapping[str, PairJudgement]
    note: JudgeNote = attrs.field(factory=JudgeNote)

    def __getitem__(self, key: str) -> PairJudgement:
        return self.answers[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)


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
        """One judgement per pair key of ``view.pairs`` (a `Judgements` to add a note on the history)."""
        ...
