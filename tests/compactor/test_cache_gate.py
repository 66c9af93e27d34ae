"""The cache gate: a compaction is adopted only when its saving pays back the prompt cache it rewrites."""

from __future__ import annotations

from typing import Any

import pytest

import tracetrim as tt
from tests._histories import tool_history
from tracetrim._tokens import estimate_tokens, history_tokens
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.compactor._budget import model_calls, pays_back
from tracetrim.decision import ScriptedDecisionModel

ANTHROPIC = (0.1, 1.25)
SCOPE = tt.Scope(user_id="u", agent_id="a", session_id="s")


def _by_position(name: str, question: object, state: object) -> float:
    """Older pairs are less likely needed: p = n / 20 for pair tn."""
    return int(name.split("_t")[1]) / 20


def _compactor(**config: Any) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel(_by_position),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, **config),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )


async def _plan(messages: list[dict[str, Any]], **config: Any) -> tt.Outcome:
    return await _compactor(**config).plan(tt.CompactionRequest(messages, scope=SCOPE))


def test_the_rule_is_k_plus_one_reads_of_the_saving_against_the_write_premium_on_the_rewrite() -> None:
    # Anthropic: (k + 1) * 0.1 * 500 against 1.15 * 4,000 = 4,600: 91 * 50 falls short, 93 * 50 pays.
    assert not pays_back(500, 4_000, 90, 0.1, 1.25)
    assert pays_back(500, 4_000, 92, 0.1, 1.25)
    # OpenAI: (k + 1) * 0.5 * 500 > 0.5 * 4,000 from k = 8.
    assert not pays_back(500, 4_000, 7, 0.5, 1.0) and pays_back(500, 4_000, 8, 0.5, 1.0)
    # No write premium: any saving pays back; no saving never does.
    assert pays_back(1, 10**6, 0, 1.0, 1.0) and not pays_back(0, 0, 10, 0.1, 1.25)


def test_model_calls_count_assistant_messages_that_say_or_call_something() -> None:
    messages = tool_history(5)  # five turns of text, call and result; the tail says "ok" three times
    assert model_calls(messages) == 8
    only_results = {"id": "x", "role": "assistant", "content": [{"type": "tool_result", "id": "c1"}]}
    assert model_calls([*messages, only_results]) == 8


async def test_without_prices_the_gate_is_off() -> None:
    outcome = await _plan(tool_history(12), expected_calls=0)
    assert outcome.adopted and outcome.reason == tt.Reason.ARCHIVED_PROPOSAL


async def test_the_gate_refuses_below_the_break_even_calls_and_adopts_at_it() -> None:
    messages = tool_history(12)
    free = await _plan(messages)  # thresholds: pairs t1..t9 go
    assert free.adopted and free.plan is not None
    stats = free.plan.stats
    saved, rewrite = stats.tokens_before - stats.tokens_after, stats.cache_rewrite_tokens
    assert saved > 0 and rewrite > 0
    even = next(k for k in range(10_000) if pays_back(saved, rewrite, k, *ANTHROPIC))
    assert even > 0

    refused = await _plan(messages, cache_prices=ANTHROPIC, expected_calls=even - 1)
    assert refused.status is tt.Status.INCONCLUSIVE and refused.reason == tt.Reason.CACHE_NOT_PAID_BACK
    assert not refused.adopted and refused.plan is not None and refused.plan.messages == messages
    assert refused.plan.stats.cache_rewrite_tokens == rewrite  # the proposal's numbers are reported
    assert (
        f"rewriting {rewrite:,} cached tokens" in refused.detail
        and f"at each of {even:,} calls" in refused.detail
    )

    adopted = await _plan(messages, cache_prices=ANTHROPIC, expected_calls=even)
    assert adopted.adopted and adopted.reason == tt.Reason.ARCHIVED_PROPOSAL
    assert adopted.plan is not None and adopted.plan.messages == free.plan.messages


async def test_the_expected_calls_default_to_the_calls_the_history_holds() -> None:
    messages = tool_history(12)
    free = await _plan(messages)
    assert free.plan is not None
    stats = free.plan.stats
    saved, rewrite = stats.tokens_before - stats.tokens_after, stats.cache_rewrite_tokens
    calls = model_calls(messages)
    expected = pays_back(saved, rewrite, calls, *ANTHROPIC)
    gated = await _plan(messages, cache_prices=ANTHROPIC)
    assert gated.adopted is expected
    assert gated.adopted is (await _plan(messages, cache_prices=ANTHROPIC, expected_calls=calls)).adopted
    # At OpenAI's ratios, the same compaction pays back within the calls held so far.
    assert (await _plan(messages, cache_prices=(0.5, 1.0))).adopted


async def test_the_gate_applies_to_a_budget_too() -> None:
    messages = tool_history(12)
    tokens = history_tokens(messages, estimate_tokens)
    budget = {"trigger_tokens": tokens - 1, "target_tokens": tokens * 2 // 3}
    refused = await _plan(messages, cache_prices=(0.1, 100.0), expected_calls=0, **budget)
    assert refused.reason == tt.Reason.CACHE_NOT_PAID_BACK and not refused.adopted
    assert refused.plan is not None and refused.plan.stats.target_met is True
    assert (await _plan(messages, cache_prices=(0.1, 100.0), expected_calls=10**6, **budget)).adopted


async def test_a_proposal_under_the_minimum_reduction_is_refused_for_that_first() -> None:
    outcome = await _plan(tool_history(12), minimum_reduction=0.99, cache_prices=ANTHROPIC, expected_calls=0)
    assert outcome.reason == tt.Reason.INSUFFICIENT_REDUCTION


@pytest.mark.parametrize("prices", [[0.1, 1.25], (0, 0)])
def test_prices_are_a_pair_read_then_write(prices: Any) -> None:
    assert tt.CompactorConfig(cache_prices=prices).cache_prices == tuple(prices)


def test_the_options_of_a_request_file_carry_the_gate() -> None:
    from tracetrim.compactor._options import config_from_options

    config = config_from_options(
        {"cache_prices": [0.1, 1.25], "expected_calls": 40, "adopt_partial": False}, []
    )
    assert (config.cache_prices, config.expected_calls, config.adopt_partial) == ((0.1, 1.25), 40, False)
