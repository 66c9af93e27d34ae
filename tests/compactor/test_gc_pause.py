"""The garbage collector is paused only around a plan's pure stages, and always restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

import tracetrim as tt
from tests._histories import tool_history
from tracetrim.decision import BinaryQuestion, HistoryView, PairJudgement, ScriptedDecisionModel

CONFIG = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0)


class Recording:
    """A judge that notes whether automatic collection was on while it judged, then drops or fails."""

    name = "recording"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.enabled: list[bool] = []

    def judge(self, view: HistoryView) -> dict[str, PairJudgement]:
        """Drop every pair (or raise)."""
        self.enabled.append(gc.isenabled())
        if self.fail:
            raise RuntimeError("the judge broke")
        return {pair.key: PairJudgement(keep_call=0.0, keep_result=0.0) for pair in view.pairs}


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


async def test_an_in_process_judge_runs_with_collection_paused_and_it_comes_back() -> None:
    judge = Recording()
    outcome = await tt.Compactor(judge, config=CONFIG).plan(tt.CompactionRequest(tool_history(4)))
    assert outcome.reason == "SHADOW_PROPOSAL" and judge.enabled == [False]
    assert gc.isenabled()


async def test_a_failing_judge_leaves_collection_on() -> None:
    judge = Recording(fail=True)
    outcome = await tt.Compactor(judge, config=CONFIG).plan(tt.CompactionRequest(tool_history(4)))
    assert outcome.reason == "MODEL_ERROR" and judge.enabled == [False]
    assert gc.isenabled()


async def test_a_host_that_turned_collection_off_keeps_it_off() -> None:
    gc.disable()
    await tt.Compactor(Recording(), config=CONFIG).plan(tt.CompactionRequest(tool_history(4)))
    assert not gc.isenabled()


async def test_a_remote_model_is_awaited_with_collection_on() -> None:
    """While a remote model is awaited the host's other tasks run: the collector must be on then."""
    seen: list[bool] = []

    def answer(name: str, question: BinaryQuestion, state: Any) -> float:
        seen.append(gc.isenabled())
        return 0.0

    model = ScriptedDecisionModel(answer)
    outcome = await tt.Compactor(model, config=CONFIG).plan(tt.CompactionRequest(tool_history(4)))
    assert outcome.reason == "SHADOW_PROPOSAL" and seen and all(seen)
    assert gc.isenabled()
