"""The one judge protocol the planner sees: the whole history once in, per-pair probabilities out."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from tracetrim._gc_pause import gc_paused
from tracetrim.decision._census import TermCensus
from tracetrim.decision._failures import InvalidAnswer
from tracetrim.decision._protocol import Usage

WHOLE_HISTORY = "whole_history"
"""The fitting stage of a judge that saw every message: nothing was fitted."""


class ToolPair(Protocol):
    """One tool call of the history as the planner matched it (`tracetrim.compactor._pairs.Pair`):
    candidate or not, with where it sits. A remote model's observation describes every one."""

    @property
    def key(self) -> str: ...
    @property
    def call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def input(self) -> str: ...
    @property
    def call_at(self) -> tuple[int, int] | None: ...
    @property
    def result_at(self) -> tuple[int, int] | None: ...
    @property
    def result_state(self) -> str: ...
    @property
    def result_text(self) -> str | None: ...
    @property
    def result_chars(self) -> int: ...
    @property
    def candidate(self) -> bool: ...
    @property
    def pending(self) -> bool: ...


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
    way (`LearnedDecisionModel` does) and hand it back (`Judgements.census`), which spares the
    excerpts a second pass; others leave it."""
    tool_pairs: Sequence[ToolPair] = attrs.field(default=(), kw_only=True, eq=False, repr=False)
    """Every tool call the planner matched, candidates and the rest (protected, pending), in order:
    what a remote model's bounded state describes (`tracetrim.decision._remote`)."""
    host_next_action: str = attrs.field(default="", kw_only=True)
    """The next action as the host named it ("" when it named none; ``next_action`` is then the
    agent's stated plan, while a remote model's state falls back to the last user text)."""


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
    """A judge's answers by pair key (a read-only mapping), with everything the plan's stats report.

    ``note`` is what the judge made of the history; ``requests``, ``retries`` and ``usage`` what
    asking a remote model cost; ``state_tokens`` and ``stage`` the bounded state it saw and the
    fitting stage that won (`WHOLE_HISTORY` for a judge that read every message); ``census`` the
    term census the judge filled on its way (`HistoryView.census`), None when it made none.
    """

    answers: Mapping[str, PairJudgement]
    note: JudgeNote = attrs.field(factory=JudgeNote)
    requests: int = attrs.field(default=0, kw_only=True)
    retries: int = attrs.field(default=0, kw_only=True)
    usage: Usage = attrs.field(factory=Usage, kw_only=True)
    state_tokens: int = attrs.field(default=0, kw_only=True)
    stage: str = attrs.field(default=WHOLE_HISTORY, kw_only=True)
    census: TermCensus | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)

    def __getitem__(self, key: str) -> PairJudgement:
        return self.answers[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)


JudgeAnswer = Mapping[str, PairJudgement] | Awaitable[Mapping[str, PairJudgement]]
"""What `HistoryJudge.judge` returns: the judgements, or (a judge that waits on a remote model)
an awaitable of them."""


@runtime_checkable
class HistoryJudge(Protocol):
    """The one protocol the planner judges with: the whole history once per plan, per-pair answers.

    An in-process judge (the learned default) answers at once; a remote `DecisionModel` is wrapped
    in `tracetrim.decision._remote.RemoteJudge`, whose ``judge`` is a coroutine that fits a bounded
    state, batches the questions and asks. The planner awaits what needs awaiting, under the plan's
    deadline, and reads the plan's stats off the `Judgements`.
    """

    @property
    def name(self) -> str:
        """A short name for records (``learned:<version>``)."""
        ...

    def judge(self, view: HistoryView) -> JudgeAnswer:
        """One judgement per pair key of ``view.pairs`` (a `Judgements` to report more than the
        answers), or an awaitable of them."""
        ...


async def judgements_of(judge: HistoryJudge, view: HistoryView) -> Judgements:
    """``judge``'s answers for ``view`` awaited where they need it, as `Judgements` (a plain mapping
    gets the defaults: a judge that read the whole history, asked nothing remote)."""
    with gc_paused():  # an in-process judge's pass; an awaitable is awaited outside the pause
        answer = judge.judge(view)
    if not isinstance(answer, Mapping) and inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, Mapping):
        raise InvalidAnswer(f"the judge returned {type(answer).__name__}, not judgements by pair key")
    return answer if isinstance(answer, Judgements) else Judgements(answer)
