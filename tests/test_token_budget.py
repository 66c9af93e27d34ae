"""One token budget: the planner, the offload, the adapters and the replay's host fire and refuse alike."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import tracetrim as tt
from tracetrim.harness_adapter._window import check_settings, resolve_budget
from tracetrim.replay import HostRule


def test_fires_strictly_over_the_trigger_and_meets_at_or_under_the_target() -> None:
    budget = tt.TokenBudget(1_000, 600)
    assert [budget.fires(n) for n in (999, 1_000, 1_001)] == [False, False, True]
    assert [budget.met(n) for n in (599, 600, 601)] == [True, True, False]
    assert tt.TokenBudget(1_000).met(10**9)  # without a target every pass meets it
    assert budget.describe() == "over 1,000 tokens, down to 600"
    assert budget.below_trigger(900) == "the history holds 900 tokens; trigger_tokens is 1,000"


REFUSALS: list[tuple[str, Callable[[], object]]] = [
    ("TokenBudget.target_tokens (100) must be below", lambda: tt.TokenBudget(100, 100)),
    (
        "CompactorConfig.target_tokens (100) must be below",
        lambda: tt.CompactorConfig(trigger_tokens=100, target_tokens=100),
    ),
    (
        "OffloadConfig.target_tokens (100) must be below",
        lambda: tt.OffloadConfig(trigger_tokens=100, target_tokens=100),
    ),
    ("HostRule.target_tokens (100) must be below", lambda: HostRule(trigger_tokens=100, target_tokens=100)),
    ("target_tokens (100) must be below", lambda: check_settings(100, 100, None)),
]


@pytest.mark.parametrize(("message", "make"), REFUSALS, ids=[m.split(" ")[0] for m, _ in REFUSALS])
def test_every_owner_refuses_a_target_at_its_trigger_by_name(
    message: str, make: Callable[[], object]
) -> None:
    with pytest.raises(tt.TracetrimError, match="^" + re.escape(message)):
        make()


@pytest.mark.parametrize("window", [1, 2, 3, 10, 1_000, 16_000, 128_000, 200_000, 1_000_001])
def test_one_derivation_from_a_context_window(window: int) -> None:
    budget = tt.TokenBudget.of_window(window)
    assert budget.trigger_tokens == max(int(window * 0.6), 1)
    assert budget.target_tokens is not None and budget.target_tokens < budget.trigger_tokens
    host = HostRule.window(window)
    adapters = resolve_budget("auto", "auto", window, derive=True)
    assert (host.trigger_tokens, host.target_tokens) == (budget.trigger_tokens, budget.target_tokens)
    assert (adapters.trigger_tokens, adapters.target_tokens) == (budget.trigger_tokens, budget.target_tokens)
    assert host.budget == budget


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"context_window": 0}, "context_window"),
        ({"context_window": 1_000, "trigger_share": 0.0}, "trigger_share"),
        ({"context_window": 1_000, "target_share": 1.5}, "target_share"),
        ({"context_window": 1_000, "trigger_share": 0.4, "target_share": 0.6}, "target_share"),
    ],
)
def test_a_window_that_gives_no_budget_is_refused_by_name(kwargs: dict[str, float], field: str) -> None:
    window = int(kwargs.pop("context_window"))
    with pytest.raises(tt.TracetrimError, match=f"TokenBudget.{field}"):
        tt.TokenBudget.of_window(window, **kwargs)


def test_the_configs_carry_their_budget() -> None:
    assert tt.CompactorConfig().budget is None
    assert tt.CompactorConfig(trigger_tokens=900, target_tokens=500).budget == tt.TokenBudget(900, 500)
    assert tt.OffloadConfig(trigger_tokens=900).budget == tt.TokenBudget(900)
