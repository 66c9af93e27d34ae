"""The one judge protocol: a remote `DecisionModel` wrapped by `as_judge`, and what any judge reports."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tests._histories import tool_history
from tracetrim._snapshot import validate_messages
from tracetrim.compactor._judging import history_view
from tracetrim.compactor._pairs import find_pairs, protected_messages
from tracetrim.decision import (
    HistoryJudge,
    HistoryView,
    Judgements,
    LearnedDecisionModel,
    PairJudgement,
    ScriptedDecisionModel,
    Usage,
)
from tracetrim.decision._failures import Failure
from tracetrim.decision._remote import RemoteJudge, as_judge

CONFIG = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0)


def _answers(name: str, question: Any, state: Any) -> float:
    """Keep every call; results of odd pairs go, even ones stay."""
    if name.startswith("call_"):
        return 1.0
    return 0.0 if int(name.rsplit("t", 1)[1]) % 2 else 1.0


def _view(pairs: int = 4, next_action: str = "") -> HistoryView:
    messages = validate_messages(tool_history(pairs))
    protected = protected_messages(messages, preserve_recent=6, protected_ids=(), pinned_ids=())
    found = find_pairs(messages, eligible_tools={"read_file"}, protected=protected, protected_call_ids=())
    return history_view(
        messages, found, goal="fix it", next_action=next_action or "the plan", host_next_action=next_action
    )


def test_as_judge_keeps_a_judge_wraps_a_model_and_refuses_anything_else() -> None:
    learned = LearnedDecisionModel()
    assert as_judge(learned, CONFIG) is learned
    model = ScriptedDecisionModel({}, default=0.5, name="remote-x")
    wrapped = as_judge(model, CONFIG)
    assert isinstance(wrapped, RemoteJudge) and isinstance(wrapped, HistoryJudge)
    assert wrapped.model is model and wrapped.name == "remote-x"
    with pytest.raises(tt.TracetrimError, match="model must be a DecisionModel"):
        as_judge(42, CONFIG)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="or a HistoryJudge"):
        tt.Compactor("not a model")  # type: ignore[arg-type]


async def test_the_remote_judge_answers_per_pair_with_what_asking_cost() -> None:
    model = ScriptedDecisionModel(_answers)
    judged = await RemoteJudge(model, CONFIG).judge(_view(4))
    assert dict(judged) == {
        f"t{n}": PairJudgement(keep_call=1.0, keep_result=0.0 if n % 2 else 1.0) for n in range(1, 5)
    }
    assert judged.requests == 1 and judged.stage == "full" and judged.census is None
    assert judged.state_tokens > 0 and judged.usage == Usage()
    [asked] = model.calls
    # the host named no next action: a remote model's state says the last user text, as it always has
    assert asked.state["goal"] == "fix it" and asked.state["next_action"] == "recent message 4"
    assert sorted(asked.questions) == sorted(f"{k}_t{n}" for n in range(1, 5) for k in ("call", "result"))


async def test_the_hosts_next_action_reaches_the_remote_state() -> None:
    model = ScriptedDecisionModel(_answers)
    await RemoteJudge(model, CONFIG).judge(_view(2, next_action="edit parser.py"))
    assert model.calls[0].state["next_action"] == "edit parser.py"


async def test_a_wrapped_model_plans_exactly_as_the_model_itself() -> None:
    request = tt.CompactionRequest(tool_history(6), goal="fix it")
    config = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0, max_questions=4)
    bare = await tt.Compactor(ScriptedDecisionModel(_answers), config=config).plan(request)
    wrapped = await tt.Compactor(RemoteJudge(ScriptedDecisionModel(_answers), config), config=config).plan(
        request
    )
    assert bare.plan is not None and wrapped.plan is not None
    assert (
        (bare.status, bare.reason)
        == (wrapped.status, wrapped.reason)
        == (tt.Status.DECIDED, "SHADOW_PROPOSAL")
    )
    assert bare.plan.messages == wrapped.plan.messages and bare.plan.decisions == wrapped.plan.decisions
    stats = [attrs_without_time(p.stats) for p in (bare.plan, wrapped.plan)]
    assert stats[0] == stats[1] and stats[0]["requests"] == 3 and stats[0]["fitting_stage"] == "full"


def attrs_without_time(stats: tt.PlanStats) -> dict[str, Any]:
    """A plan's stats but the elapsed time, which differs from run to run."""
    return {k: v for k, v in attrs.asdict(stats).items() if k != "elapsed_ms"}


class Reporting:
    """A judge of whole histories that reports requests, usage and a fitting stage of its own."""

    name = "reporting"

    async def judge(self, view: HistoryView) -> Judgements:
        await asyncio.sleep(0)
        answers = {pair.key: PairJudgement(keep_call=1.0, keep_result=0.0) for pair in view.pairs}
        return Judgements(answers, requests=3, retries=1, usage=Usage(10, 2), state_tokens=7, stage="mine")


async def test_the_plans_stats_come_from_the_judgements_whatever_the_judge() -> None:
    outcome = await tt.Compactor(Reporting(), config=CONFIG).plan(tt.CompactionRequest(tool_history(3)))
    assert outcome.plan is not None, outcome.detail
    stats = outcome.plan.stats
    assert (stats.requests, stats.retries, stats.input_tokens, stats.output_tokens) == (3, 1, 10, 2)
    assert (stats.state_tokens, stats.fitting_stage) == (7, "mine")


async def test_a_plain_mapping_is_a_whole_history_judgement() -> None:
    class Plain:
        name = "plain"

        def judge(self, view: HistoryView) -> Mapping[str, PairJudgement]:
            return {pair.key: PairJudgement(keep_call=1.0, keep_result=1.0) for pair in view.pairs}

    outcome = await tt.Compactor(Plain(), config=CONFIG).plan(tt.CompactionRequest(tool_history(2)))
    assert outcome.plan is not None and outcome.plan.stats.fitting_stage == "whole_history"
    assert outcome.plan.stats.requests == 0


async def test_a_slow_judge_is_cut_at_the_plans_deadline() -> None:
    class Slow:
        name = "slow"

        async def judge(self, view: HistoryView) -> Judgements:
            await asyncio.sleep(30)
            raise AssertionError("not reached")

    execution = tt.ExecutionOptions(budget_s=0.05)
    outcome = await tt.Compactor(Slow(), config=CONFIG, execution=execution).plan(
        tt.CompactionRequest(tool_history(2))
    )
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "TIMEOUT")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [(None, "INVALID_ANSWER"), ({}, "INVALID_ANSWER"), (RuntimeError("boom"), "MODEL_ERROR")],
)
async def test_a_judges_bad_answer_or_failure_names_its_reason(answer: Any, reason: str) -> None:
    class Bad:
        name = "bad"

        def judge(self, view: HistoryView) -> Any:
            if isinstance(answer, Exception):
                raise answer
            return answer

    outcome = await tt.Compactor(Bad(), config=CONFIG).plan(tt.CompactionRequest(tool_history(2)))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, reason)
    if reason == "MODEL_ERROR":
        assert outcome.detail == "RuntimeError: boom"


def test_every_failure_names_an_outcome_reason() -> None:
    assert {failure.name for failure in Failure} <= {reason.name for reason in tt.Reason}
