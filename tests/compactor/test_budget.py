"""The token budget: trigger, target, cheapest steps first, no thrashing, the cache-rewrite cap, and
what a target the protections do not allow adopts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, tool_history, user
from tracetrim import Action
from tracetrim._tokens import estimate_tokens, history_tokens
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.compactor._budget import PairCost, cache_boundary, plan_budget
from tracetrim.decision import ScriptedDecisionModel


def _cost(key: str, order: int, p_call: float, p_result: float, **sizes: Any) -> PairCost:
    sizes = {"call_tokens": 10, "result_tokens": 500, "shortened": 100, **sizes}
    return PairCost(key=key, order=order, keep_call=p_call, keep_result=p_result, **sizes)


def test_cheapest_step_per_token_goes_first_and_stops_at_the_target() -> None:
    costs = [_cost("t1", 0, 0.9, 0.5), _cost("t2", 1, 0.9, 0.1), _cost("t3", 2, 0.9, 0.3)]
    plan = plan_budget(costs, tokens=2000, target=1600)  # one shortening (400 tokens) is enough
    assert plan.actions == {
        "t1": (Action.KEEP, "within_budget"),
        "t2": (Action.DROP_RESULT, "budget_shorten"),
        "t3": (Action.KEEP, "within_budget"),
    }
    assert plan.tokens_after == 1600
    assert plan.met


def test_a_pair_is_shortened_before_it_is_dropped() -> None:
    # t1's call is worthless, its result is not: its result is still shortened first, t2's after
    costs = [_cost("t1", 0, 0.0, 0.2), _cost("t2", 1, 0.9, 0.3)]
    plan = plan_budget(costs, tokens=2000, target=1100)
    assert plan.actions["t1"] == (Action.DROP_CALL, "budget_drop")
    assert plan.actions["t2"] == (Action.DROP_RESULT, "budget_shorten")
    assert plan.tokens_after == 2000 - 510 - 400


def test_oldest_goes_first_among_equals_and_unshortenable_pairs_drop_whole() -> None:
    costs = [_cost("t2", 1, 0.1, 0.1, shortened=None), _cost("t1", 0, 0.1, 0.1, shortened=None)]
    plan = plan_budget(costs, tokens=1100, target=600)
    assert plan.actions == {"t1": (Action.DROP_CALL, "budget_drop"), "t2": (Action.KEEP, "within_budget")}


def test_an_unreachable_target_says_so() -> None:
    plan = plan_budget([_cost("t1", 0, 0.9, 0.9)], tokens=5000, target=100)
    assert plan.actions["t1"] == (Action.DROP_CALL, "budget_drop")
    assert plan.tokens_after == 5000 - 510
    assert not plan.met


def test_confidently_irrelevant_pairs_go_even_when_the_target_is_met() -> None:
    costs = [_cost("t1", 0, 0.01, 0.02), _cost("t2", 1, 0.5, 0.5)]
    plan = plan_budget(costs, tokens=1000, target=2000, drop_confident=0.05)
    assert plan.actions == {
        "t1": (Action.DROP_CALL, "confidently_not_needed"),
        "t2": (Action.KEEP, "within_budget"),
    }
    assert plan.tokens_after == 490


def _by_position(name: str, question: object, state: object) -> float:
    """Older pairs are less likely needed: p = n / 20 for pair tn."""
    return int(name.split("_t")[1]) / 20


def _compactor(**config: Any) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel(_by_position),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, **config),
    )


def _paired(messages: list[dict[str, Any]]) -> bool:
    calls = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_call"]
    results = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_result"]
    return sorted(calls) == sorted(results)


async def test_a_history_over_the_trigger_ends_under_the_target_lowest_value_first() -> None:
    messages = tool_history(12)
    before = copy.deepcopy(messages)
    tokens = history_tokens(messages, estimate_tokens)
    compactor = _compactor(trigger_tokens=tokens - 1, target_tokens=tokens * 2 // 3)
    outcome = await compactor.plan(tt.CompactionRequest(messages))
    assert outcome.status is tt.Status.DECIDED, outcome.detail
    plan = outcome.plan
    assert plan is not None
    stats = plan.stats
    assert stats.tokens_before == tokens
    assert stats.target_met is True
    assert stats.tokens_after <= tokens * 2 // 3 == stats.target_tokens
    assert stats.tokens_after == history_tokens(plan.messages, estimate_tokens)
    changed = [d.key for d in plan.decisions if d.action is not Action.KEEP]
    kept = [d.key for d in plan.decisions if d.action is Action.KEEP and d.reason == "within_budget"]
    assert changed and kept
    assert max(int(k[1:]) for k in changed) < min(int(k[1:]) for k in kept)  # the least likely needed went
    assert _paired(plan.messages)
    assert messages == before

    # One turn later the history is still under the trigger: nothing fires, nothing is asked.
    later = [*plan.messages, user("u1", "and now?"), assistant("a99", text("Looking."))]
    again = await compactor.plan(tt.CompactionRequest(later))
    assert again.status is tt.Status.SKIPPED and again.reason == tt.Reason.BELOW_TRIGGER
    assert again.plan is not None and again.plan.stats.requests == 0
    assert {d.reason for d in again.plan.decisions if d.keep_call is None} >= {"below_trigger"}


async def test_a_budget_plan_makes_each_excerpt_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget weighs every candidate shortened (a trial rebuild) and then rebuilds for real: the
    excerpts of the first are taken again, not made twice. A counting wrapper around the real excerpt
    function stands in for a profiler."""
    from tracetrim.compactor import _rebuild

    made: list[str] = []
    real = _rebuild.shortened_text

    def counting(text: str, pair: Any, ref: str, how: Any, **kw: Any) -> str | None:
        made.append(pair.key)
        return real(text, pair, ref, how, **kw)

    monkeypatch.setattr(_rebuild, "shortened_text", counting)
    messages = tool_history(12, size=4_000)
    tokens = history_tokens(messages, estimate_tokens)
    outcome = await _compactor(trigger_tokens=tokens - 1, target_tokens=tokens * 2 // 3).plan(
        tt.CompactionRequest(messages)
    )
    assert outcome.plan is not None
    shortened = [d.key for d in outcome.plan.decisions if d.action is Action.DROP_RESULT]
    assert shortened, "the plan shortens something"
    assert sorted(made) == sorted(set(made)) and set(shortened) <= set(made)


async def test_a_second_pass_over_a_compacted_history_changes_nothing() -> None:
    messages = tool_history(12)
    tokens = history_tokens(messages, estimate_tokens)
    compactor = _compactor(trigger_tokens=tokens // 2, target_tokens=tokens // 3)
    first = await compactor.plan(tt.CompactionRequest(messages))
    assert first.plan is not None and first.plan.stats.target_met
    second = await compactor.plan(tt.CompactionRequest(first.plan.messages))
    assert second.status is tt.Status.SKIPPED and second.reason == tt.Reason.BELOW_TRIGGER
    assert second.plan is not None and second.plan.messages == first.plan.messages


async def test_an_unreachable_target_without_partial_adoption_is_inconclusive_and_says_how_close() -> None:
    messages = tool_history(4)
    tokens = history_tokens(messages, estimate_tokens)
    outcome = await _compactor(trigger_tokens=tokens - 1, target_tokens=10, adopt_partial=False).plan(
        tt.CompactionRequest(messages)
    )
    assert outcome.status is tt.Status.INCONCLUSIVE and outcome.reason == tt.Reason.TARGET_NOT_REACHED
    assert outcome.plan is not None
    assert outcome.plan.messages == messages  # nothing adopted
    assert outcome.plan.stats.target_met is False and outcome.plan.stats.tokens_after > 10
    assert f"{outcome.plan.stats.tokens_after:,} tokens" in outcome.detail
    assert "below minimum_reduction" not in outcome.detail


def _enforcing(**config: Any) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel(_by_position),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, **config),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )


SCOPE = tt.Scope(user_id="u", agent_id="a", session_id="s")


async def test_an_unreachable_target_adopts_what_it_reached_and_says_the_target_was_not_met() -> None:
    messages = tool_history(4)
    tokens = history_tokens(messages, estimate_tokens)
    compactor = _enforcing(trigger_tokens=tokens - 1, target_tokens=10)  # adopt_partial is the default
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.status is tt.Status.DECIDED and outcome.reason == tt.Reason.ARCHIVED_PROPOSAL
    assert outcome.adopted and outcome.plan is not None
    stats = outcome.plan.stats
    assert stats.target_met is False and 10 < stats.tokens_after < tokens
    assert stats.reduction >= tt.CompactorConfig().minimum_reduction
    assert stats.tokens_after == history_tokens(outcome.plan.messages, estimate_tokens)
    assert "target_tokens (10) not reached" in outcome.detail and "original archived as" in outcome.detail
    assert _paired(outcome.plan.messages)


async def test_a_target_not_met_that_saves_less_than_the_minimum_adopts_nothing() -> None:
    messages = tool_history(4)
    tokens = history_tokens(messages, estimate_tokens)
    compactor = _enforcing(trigger_tokens=tokens - 1, target_tokens=10, minimum_reduction=0.99)
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.status is tt.Status.INCONCLUSIVE and outcome.reason == tt.Reason.TARGET_NOT_REACHED
    assert not outcome.adopted and outcome.plan is not None and outcome.plan.messages == messages
    assert "below minimum_reduction (99%) it adopts nothing" in outcome.detail
    # The original is what ENFORCE hands back.
    assert await compactor.compact(tt.CompactionRequest(messages, scope=SCOPE)) == messages


async def test_a_met_target_needs_no_minimum_reduction() -> None:
    messages = tool_history(12)
    tokens = history_tokens(messages, estimate_tokens)
    compactor = _enforcing(trigger_tokens=tokens - 1, target_tokens=tokens - 50, minimum_reduction=0.5)
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.adopted and outcome.plan is not None and outcome.plan.stats.target_met is True
    assert outcome.plan.stats.reduction < 0.5
    assert "not reached" not in outcome.detail


async def test_cache_rewrite_tokens_count_from_the_first_change_and_the_cap_holds() -> None:
    messages = tool_history(12)
    compactor = _compactor(minimum_reduction=0.0)  # thresholds: pairs t1..t9 (p < 0.5) go
    plan = (await compactor.plan(tt.CompactionRequest(messages))).plan
    assert plan is not None
    first = next(i for i, (a, b) in enumerate(zip(messages, plan.messages, strict=False)) if a != b)
    assert first == 1
    assert plan.stats.cache_rewrite_tokens == history_tokens(plan.messages[first:], estimate_tokens)

    cap = history_tokens(messages[-10:], estimate_tokens)
    capped = _compactor(minimum_reduction=0.0, max_cache_rewrite_tokens=cap)
    plan = (await capped.plan(tt.CompactionRequest(messages))).plan
    assert plan is not None
    assert 0 < plan.stats.cache_rewrite_tokens <= cap
    reasons = {d.key: d.reason for d in plan.decisions}
    assert reasons["t8"] == "cache_cap" and reasons["t9"] == "call_not_needed"
    assert cache_boundary([1, 2, 3], None) == 0 and cache_boundary([1, 2, 3], 4) == 2


async def test_a_budget_plan_never_touches_protected_pairs() -> None:
    messages = [
        user("m0", "Fix it."),
        *(assistant(f"a{n}", call(f"c{n}"), result(f"c{n}")) for n in range(1, 6)),
        *(user(f"r{n}", "recent") for n in range(6)),
    ]
    compactor = _compactor(trigger_tokens=10, target_tokens=1)
    request = tt.CompactionRequest(messages, protected_call_ids=["c2"])
    outcome = await compactor.plan(request)
    assert outcome.plan is not None
    by_call = {d.call_id: d for d in outcome.plan.decisions}
    assert by_call["c2"].action is Action.KEEP and by_call["c2"].keep_call is None
    assert by_call["c1"].action is Action.DROP_CALL


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"trigger_tokens": 100}, "go together"),
        ({"target_tokens": 100}, "go together"),
        ({"trigger_tokens": 100, "target_tokens": 100}, "must be below trigger_tokens"),
        ({"trigger_tokens": 0, "target_tokens": 0}, "CompactorConfig.trigger_tokens"),
        ({"drop_confident": 1.5}, "CompactorConfig.drop_confident"),
        ({"max_cache_rewrite_tokens": -1}, "CompactorConfig.max_cache_rewrite_tokens"),
        ({"adopt_partial": 1}, "adopt_partial"),
        ({"cache_prices": (0.1,)}, "CompactorConfig.cache_prices must be"),
        ({"cache_prices": (0.1, -1.0)}, "CompactorConfig.cache_prices must be"),
        ({"cache_prices": 0.1}, "CompactorConfig.cache_prices must be"),
        ({"cache_prices": ("0.1", 1.25)}, "CompactorConfig.cache_prices must be"),
        ({"expected_calls": -1}, "CompactorConfig.expected_calls"),
    ],
)
def test_budget_settings_are_validated(fields: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        tt.CompactorConfig(**fields)
