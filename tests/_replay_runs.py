"""Small runs for the replay tests: structured tool calls, a later call using an old result's value."""

from __future__ import annotations

from typing import Any

from tests._histories import assistant, call, result, text, user
from tracetrim.decision import HistoryView, PairJudgement
from tracetrim.learn import Trajectory

SECRET = "ORD_2_XYZ"
"""The value only call c2's result shows, which the run's last model call writes."""


def lookup_run(pairs: int = 8, *, size: int = 2000, use_at_end: bool = True) -> Trajectory:
    """A system prompt, a task, ``pairs`` lookups (call then result, each result ~``size`` characters
    holding its own order id ``ORD_<n>_XYZ``), and a last model call that writes `SECRET`."""
    messages: list[dict[str, Any]] = [
        {"id": "s0", "role": "system", "content": [text("You are a support agent. Look records up.")]},
        user("u0", "What is the total of my second order?"),
    ]
    for n in range(1, pairs + 1):
        body = f"order ORD_{n}_XYZ\n" + "".join(
            f"detail {k} of record {n}: status shipped\n" for k in range(size // 36)
        )
        messages.append(
            assistant(f"a{n}", text(f"Looking up record {n}."), call(f"c{n}", "lookup", {"id": n}))
        )
        messages.append(assistant(f"r{n}", result(f"c{n}", "lookup", body)))
    if use_at_end:
        messages.append(assistant("final", text(f"Your second order is {SECRET}; its total is 42.")))
    return Trajectory("lookups", "fixture", "lookups", messages, frozenset({"lookup"}))


class DropEvery:
    """A judge that answers "no" to both questions for every pair: every candidate pair is dropped."""

    name = "drop-every"

    def judge(self, view: HistoryView) -> dict[str, PairJudgement]:
        """Drop every pair of ``view``."""
        return {pair.key: PairJudgement(keep_call=0.0, keep_result=0.0) for pair in view.pairs}


class ShortenEvery:
    """A judge that keeps every call and shortens every result."""

    name = "shorten-every"

    def judge(self, view: HistoryView) -> dict[str, PairJudgement]:
        """Keep the call, shorten the result, for every pair of ``view``."""
        return {pair.key: PairJudgement(keep_call=1.0, keep_result=0.0) for pair in view.pairs}
