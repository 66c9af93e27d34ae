"""The replay's settings: the host's rule and the cache price model, with errors naming the field."""

from __future__ import annotations

import pytest

from tracetrim import TracetrimError
from tracetrim.replay import ANTHROPIC, NO_CACHE, OPENAI, PRESETS, CachePrices, HostRule, prices


def test_a_window_fires_at_sixty_percent_and_compacts_to_forty() -> None:
    rule = HostRule.window(128_000)
    assert (rule.trigger_tokens, rule.target_tokens) == (76_800, 51_200)
    assert not rule.fires(76_800, 5) and rule.fires(76_801, 5)
    assert rule.target_for(90_000) == 51_200
    assert HostRule.window(10_000, trigger_share=0.8, target_share=0.5).trigger_tokens == 8_000
    assert rule.describe() == "over 76,800 tokens, down to 51,200"


def test_every_k_steps_fires_on_the_kth_call_and_budgets_two_thirds() -> None:
    rule = HostRule(every_steps=3)
    assert [step for step in range(10) if rule.fires(0, step)] == [3, 6, 9]
    assert rule.target_for(9_000) == 6_000
    both = HostRule(trigger_tokens=100, target_tokens=50, every_steps=4)
    assert both.fires(101, 1) and both.fires(0, 4) and not both.fires(100, 5)
    assert both.target_for(9_000) == 50
    assert "every 3 steps" in rule.describe()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "HostRule needs"),
        ({"trigger_tokens": 100}, "HostRule.target_tokens is needed"),
        ({"trigger_tokens": 100, "target_tokens": 100}, "HostRule.target_tokens (100) must be below"),
        ({"trigger_tokens": 0, "target_tokens": 0}, "HostRule.trigger_tokens must be at least 1"),
        ({"every_steps": 0}, "HostRule.every_steps must be at least 1"),
    ],
)
def test_a_bad_rule_names_its_field(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(TracetrimError, match=field.replace("(", r"\(").replace(")", r"\)")):
        HostRule(**kwargs)


def test_window_shares_are_checked() -> None:
    with pytest.raises(ValueError, match="target_share"):
        HostRule.window(1000, trigger_share=0.4, target_share=0.6)
    with pytest.raises(ValueError, match="trigger_share"):
        HostRule.window(1000, trigger_share=1.5)
    with pytest.raises(ValueError, match="context_window"):
        HostRule.window(0)


def test_the_presets_are_the_providers_ratios() -> None:
    assert (ANTHROPIC.read, ANTHROPIC.write) == (0.1, 1.25)
    assert (OPENAI.read, OPENAI.write) == (0.5, 1.0)
    assert (NO_CACHE.read, NO_CACHE.write) == (1.0, 1.0)
    assert set(PRESETS) == {"anthropic", "openai", "none"}
    assert ANTHROPIC.cost(1000, 100) == pytest.approx(225.0)
    assert prices("openai") is OPENAI
    custom = prices("anthropic", read=0.2)
    assert (custom.name, custom.read, custom.write) == ("custom", 0.2, 1.25)
    with pytest.raises(ValueError, match="unknown cache price preset 'azure'"):
        prices("azure")
    with pytest.raises(ValueError, match=r"CachePrices\.read"):
        CachePrices(read=-1.0)
