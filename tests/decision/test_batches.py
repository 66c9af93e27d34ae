"""Questions and batches: two per candidate, same batch, limits on count and request tokens."""

from __future__ import annotations

import pytest

import tracetrim as tt
from tests._histories import tool_history
from tracetrim._snapshot import validate_messages
from tracetrim._tokens import estimate_tokens
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.decision._remote._batches import (
    REQUEST_OVERHEAD_TOKENS,
    RequestOverBudget,
    make_batches,
    questions_for,
)


def _candidates(n: int) -> list[Pair]:
    messages = validate_messages(tool_history(n))
    protected = protected_messages(messages, preserve_recent=6, protected_ids=(), pinned_ids=())
    return [
        p
        for p in find_pairs(
            messages, eligible_tools={"read_file"}, protected=protected, protected_call_ids=()
        )
        if p.candidate
    ]


def test_two_named_questions_per_pair() -> None:
    pair = _candidates(1)[0]
    asked = questions_for(pair)
    assert list(asked) == ["call_t1", "result_t1"]
    assert "t1" in asked["call_t1"].instructions and "verbatim" in asked["result_t1"].instructions


@pytest.mark.parametrize(
    ("max_questions", "sizes"), [(2, [2] * 5), (3, [2] * 5), (4, [4, 4, 2]), (128, [10])]
)
def test_question_limit_never_splits_a_pair(max_questions: int, sizes: list[int]) -> None:
    batches = make_batches(
        _candidates(5),
        state_tokens=100,
        max_questions=max_questions,
        max_request_tokens=30_000,
        count_tokens=estimate_tokens,
    )
    assert [len(b.questions) for b in batches] == sizes
    for batch in batches:
        keys = {name.split("_", 1)[1] for name in batch.questions}
        assert all({f"call_{k}", f"result_{k}"} <= batch.questions.keys() for k in keys)


def test_request_token_limit_closes_batches() -> None:
    candidates = _candidates(6)
    # A question costs its name, instructions and both criteria; every pair here costs the same.
    one_pair = sum(
        estimate_tokens(" ".join((name, q.instructions, q.criteria_true or "", q.criteria_false or "")))
        for name, q in questions_for(candidates[0]).items()
    )
    state = 1000
    limit = REQUEST_OVERHEAD_TOKENS + state + 3 * one_pair + one_pair // 2  # room for 3.5 pairs
    batches = make_batches(
        candidates,
        state_tokens=state,
        max_questions=128,
        max_request_tokens=limit,
        count_tokens=estimate_tokens,
    )
    assert [len(b.questions) for b in batches] == [6, 6]


def test_a_pair_that_cannot_fit_is_an_error() -> None:
    with pytest.raises(RequestOverBudget, match="max_request_tokens"):
        make_batches(
            _candidates(1),
            state_tokens=1000,
            max_questions=128,
            max_request_tokens=REQUEST_OVERHEAD_TOKENS + 1010,
            count_tokens=estimate_tokens,
        )


async def test_request_over_budget_outcome_makes_no_model_call() -> None:
    model = ScriptedDecisionModel({}, default=0.0)

    def counter(value: str) -> int:  # the state is nearly the whole request budget
        return 2990 if '"goal"' in value else estimate_tokens(value)

    config = tt.CompactorConfig(
        eligible_tools={"read_file"}, max_state_tokens=3000, max_request_tokens=3600, token_counter=counter
    )
    outcome = await tt.Compactor(model, config=config).plan(tt.CompactionRequest(tool_history(3)))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "REQUEST_OVER_BUDGET")
    assert model.calls == []


async def test_every_batch_carries_the_same_state() -> None:
    model = ScriptedDecisionModel({}, default=0.0)
    config = tt.CompactorConfig(eligible_tools={"read_file"}, max_questions=2)
    outcome = await tt.Compactor(model, config=config).plan(tt.CompactionRequest(tool_history(4)))
    assert outcome.plan is not None and outcome.plan.stats.requests == 4
    assert all(call.state is model.calls[0].state for call in model.calls)
    asked = [name for call in model.calls for name in call.questions]
    assert sorted(asked) == sorted(f"{kind}_t{n}" for n in range(1, 5) for kind in ("call", "result"))
