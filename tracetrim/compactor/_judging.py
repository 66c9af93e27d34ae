"""Stage 5's inputs and outputs: the candidates as a `HistoryView`, a judge's answers as probabilities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracetrim._snapshot import Message
from tracetrim.compactor._pairs import Pair
from tracetrim.decision._census import TermCensus
from tracetrim.decision._failures import InvalidAnswer, probability
from tracetrim.decision._goal import default_next_action
from tracetrim.decision._history import HistoryView, JudgedPair, PairJudgement


def stated_plan(messages: Sequence[Message]) -> str:
    """The next action a judge assumes when the host names none: the agent's latest prose
    (its stated plan), or the last user text when the agent has said nothing yet. The shipped judge
    was trained with exactly this (`tracetrim.learn.make_cut`), so a host that passes nothing gets
    what was measured."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            text = "\n".join(b["text"] for b in message["content"] if b.get("type") == "text")
            if text.strip():
                return text
    return default_next_action(messages)


def history_view(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    *,
    goal: str,
    next_action: str,
    census: bool = False,
    host_next_action: str = "",
) -> HistoryView:
    """What a judge sees: every message, the candidate pairs (text results only) and every pair as
    matched (`HistoryView.tool_pairs`); with ``census``, an empty `TermCensus` the judge may fill for
    the excerpts (`HistoryView.census`)."""
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
    return HistoryView(
        messages=messages,
        pairs=judged,
        goal=goal,
        next_action=next_action,
        census=TermCensus() if census else None,
        tool_pairs=pairs,
        host_next_action=host_next_action,
    )


def probabilities_of(view: HistoryView, answers: Mapping[str, PairJudgement]) -> dict[str, float]:
    """A judge's answers as the planner's ``call_<key>`` / ``result_<key>`` probabilities, checked
    whoever gave them: a missing or bad answer is `InvalidAnswer`."""
    probabilities: dict[str, float] = {}
    for pair in view.pairs:
        judgement = answers.get(pair.key)
        if not isinstance(judgement, PairJudgement):
            raise InvalidAnswer(f"the judge gave no PairJudgement for pair {pair.key} (call {pair.call_id})")
        for name, value in (
            (f"call_{pair.key}", judgement.keep_call),
            (f"result_{pair.key}", judgement.keep_result),
        ):
            probabilities[name] = probability(name, value)
    return probabilities
