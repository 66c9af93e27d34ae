"""How the learned judge reads the run in front of it: a self-check, and its distance from its training.

A judge trained on some kinds of agent is miscalibrated on another: it was tuned on how those reuse
their past. Two cheap, model-free readings of the history it is judging correct for that:

- The **self-check.** Judge the history as it stood at an internal cut (the assistant turn nearest
  `SELF_CHECK_AT` of its messages; of its latest `SELF_CHECK_SPAN` in a longer one), then read which
  of the results judged there the later messages used again (`tracetrim.decision._reuse.credited`:
  the labels the judge is trained on). A result's need is the judge's probability that it is used
  again, so their sum is how many it expected; the ratio of used to expected, against the same ratio
  on the judge's own training runs (`JudgeWeights.reuse_reference`), says how far off it is on this
  run. Both policy levels move by ``-log`` of that ratio (pooled with `PRIOR` results at the
  reference, so a run with little past moves little; within `SHIFT_BOUNDS`): an agent that goes back
  to its past more than the judge expects gets a more cautious judge, one that never looks back a
  bolder one. The probabilities do not depend on the levels, so one extra feature pass over the
  history up to the cut serves every shift.
- The **training range.** A pair whose features fall outside every value the training rows had
  (`JudgeWeights.range_low` / ``range_high``; its age features only above theirs,
  `YOUNGER_IS_KNOWN`) is judged by trees that never saw anything like it.
  When at least `OUT_OF_RANGE_SHARE` of the pairs are, the judge is *cautious*: nothing is dropped
  (a result it would drop is shortened instead, so its excerpt stays) and the newest
  `CAUTIOUS_RECENT` pairs keep their results whole.

Both are recorded (`JudgeNote`): the plan's stats carry the numbers and its detail says why.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim.decision._features import FEATURE_NAMES, iter_pair_features
from tracetrim.decision._history import HistoryView, JudgeNote
from tracetrim.decision._reuse import credited

SELF_CHECK_AT = 0.6
"""Where the self-check cuts the history: the assistant turn nearest this share of its messages."""
SELF_CHECK_RECENT = 6
"""Messages just before the internal cut that are not judged there (the planner's default
``preserve_recent_messages``): what the judge would have been asked at that point."""
SELF_CHECK_SPAN = 400
"""The most messages the self-check reads: a longer history is checked on its first message and its
latest ones (`recent_span`), so the check costs the same however long the run grows (30-45 ms on the
shared machine). Shorter runs (every run of the shared data) are checked whole: there it costs about
what the judge's own pass does (mini-swe-agent, 40 runs: 8 ms a plan without it, 12-16 ms with it)."""
PRIOR = 1.0
"""Results at the training reference that a run's own count is pooled with."""
SHIFT_BOUNDS = (-1.2, 0.6)
"""The furthest the self-check moves both levels, toward caution and away from it."""
OUT_OF_RANGE_SHARE = 0.1
"""The share of a history's pairs with a feature outside the training range at which the judge is
cautious. On the shared runs a judge that saw the agent's kind finds about 1% of a history's pairs
outside (0% for two of the three kinds); one that never saw it, 36% (mini-swe-agent) or all of them
(tau-bench)."""
YOUNGER_IS_KNOWN = frozenset(
    FEATURE_NAMES.index(name) for name in ("age", "log_age_messages", "log_pairs_after")
)
"""The features that count as out of range only above their training maximum (a history longer than
any seen): below the minimum they only say that a pair is younger than any the judge was trained on,
which a host that protects fewer recent messages than the default six makes so (nothing about the
kind of agent). On the shared runs this changes no plan's caution."""
CAUTIOUS_RECENT = 3
"""The newest pairs a cautious judge keeps whole."""

NeedOf = Callable[[Sequence[float]], float]
"""A judge's need function: features in, the probability that the result is used again out."""


@attrs.frozen
class SelfCheck:
    """The judge on the history as it stood at message ``at``: of the ``pairs`` it judged there,
    how many the messages from ``at`` on ``used`` again, and how many its need ``expected``."""

    at: int
    pairs: int
    used: int
    expected: float

    def rate(self, reference: float, prior: float = PRIOR) -> float:
        """Results used again per result expected, pooled with ``prior`` results at ``reference``."""
        return (self.used + prior * reference) / (self.expected + prior)

    def shift(
        self, reference: float, *, prior: float = PRIOR, bounds: tuple[float, float] = SHIFT_BOUNDS
    ) -> float:
        """How far both levels move for this run: ``-log(rate / reference)``, within ``bounds``
        (negative: more is kept)."""
        low, high = bounds
        moved = -math.log(self.rate(reference, prior) / reference)
        return round(min(max(moved, low), high), 6)


def internal_cut(messages: Sequence[Mapping[str, Any]], fraction: float = SELF_CHECK_AT) -> int | None:
    """The message index of the self-check: the assistant turn nearest ``fraction`` of the history,
    leaving messages to judge before it; None when the history is too short for one."""
    target = int(len(messages) * fraction)
    turns = [
        i
        for i, message in enumerate(messages)
        if message.get("role") == "assistant" and SELF_CHECK_RECENT + 2 < i < len(messages)
    ]
    return min(turns, key=lambda i: (abs(i - target), i), default=None)


def latest_prose(messages: Sequence[Mapping[str, Any]]) -> str:
    """The agent's latest text before the end of ``messages`` (its stated plan): the next action the
    judge assumes at an internal cut, as the planner does at the real one."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            text = "\n".join(
                str(b.get("text", "")) for b in message.get("content", ()) if b.get("type") == "text"
            )
            if text.strip():
                return text
    return ""


@attrs.frozen
class CheckView:
    """What the self-check judges: the history up to message ``at`` as a judge would have seen it
    then (``view``), and which of its pairs the messages from ``at`` on used again (``used``)."""

    at: int
    view: HistoryView
    used: tuple[bool, ...]


def recent_span(view: HistoryView, span: int = SELF_CHECK_SPAN) -> HistoryView:
    """``view`` itself when it holds at most ``span`` messages, else its first message and its latest
    ``span - 1`` with the pairs among them (message indexes counted in the shorter history)."""
    messages = view.messages
    if len(messages) <= span:
        return view
    start = len(messages) - span + 1
    pairs = [
        attrs.evolve(p, call_message=p.call_message - start + 1, result_message=p.result_message - start + 1)
        for p in view.pairs
        if p.call_message >= start
    ]
    return attrs.evolve(view, messages=[messages[0], *messages[start:]], pairs=pairs, census=None)


def check_view(view: HistoryView, *, fraction: float = SELF_CHECK_AT) -> CheckView | None:
    """The self-check's history for ``view`` (its `recent_span`): None when it has no internal cut or
    no pair old enough to have been judged there. It depends on the history alone, not on the judge's
    weights."""
    view = recent_span(view)
    at = internal_cut(view.messages, fraction)
    if at is None:
        return None
    judged = [p for p in view.pairs if p.result_message < at - SELF_CHECK_RECENT]
    if not judged:
        return None
    before = view.messages[:at]
    then = HistoryView(messages=before, pairs=judged, goal=view.goal, next_action=latest_prose(before))
    reused = credited(view.messages, at)
    return CheckView(at, then, tuple(pair.call_id in reused for pair in judged))


def self_check(view: HistoryView, need_of: NeedOf, *, fraction: float = SELF_CHECK_AT) -> SelfCheck | None:
    """The self-check of ``view`` with ``need_of`` (None where `check_view` has none)."""
    found = check_view(view, fraction=fraction)
    if found is None:
        return None
    expected = math.fsum(need_of(features) for _, features in iter_pair_features(found.view))
    return SelfCheck(at=found.at, pairs=len(found.used), used=sum(found.used), expected=expected)


def outside(
    features: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    *,
    floorless: frozenset[int] = YOUNGER_IS_KNOWN,
) -> bool:
    """True when any feature is below its training minimum or above its maximum (the features at
    ``floorless`` only above it)."""
    assert len(features) == len(low) == len(high), "features and their training range differ in length"
    # Compared in C (map): this runs once per pair of the history.
    if any(map(operator.gt, features, high)):
        return True
    floored = _floored(floorless, len(features))
    return any(map(operator.lt, floored(features), floored(low)))


@functools.cache
def _floored(floorless: frozenset[int], count: int) -> Callable[[Sequence[float]], Sequence[float]]:
    """Picks the features of ``count`` that are not ``floorless``, as a sequence."""
    kept = [n for n in range(count) if n not in floorless]
    if len(kept) == count:
        return lambda values: values
    if len(kept) == 1:
        return lambda values: (values[kept[0]],)
    return operator.itemgetter(*kept) if kept else (lambda values: ())


def note(check: SelfCheck | None, shift: float, out_of_range: float | None, cautious: bool) -> JudgeNote:
    """The record of what the judge made of this history, with one line saying so."""
    parts = []
    if check is not None:
        parts.append(
            f"self-check at message {check.at}: {check.used} of {check.pairs} results used again, "
            f"{check.expected:.1f} expected, levels {shift:+.2f}"
        )
    if out_of_range is not None and cautious:
        parts.append(
            f"{out_of_range:.0%} of pairs outside the training range: cautious (nothing dropped, "
            f"the newest {CAUTIOUS_RECENT} kept whole)"
        )
    return JudgeNote(
        level_shift=shift,
        reuse=None if check is None else round(check.used / check.expected, 6) if check.expected else None,
        out_of_range=None if out_of_range is None else round(out_of_range, 6),
        cautious=cautious,
        text="judge " + "; ".join(parts) if parts else "",
    )
