"""Configuration values: defaults as designed, every bad field refused with its name."""

from __future__ import annotations

import math
from typing import Any

import pytest

import tracetrim as tt


def test_defaults_match_the_design() -> None:
    config = tt.CompactorConfig()
    assert config.eligible_tools == frozenset()
    assert (config.keep_threshold, config.discard_threshold, config.discard) == (0.5, None, 0.5)
    assert config.preserve_recent_messages == 6
    assert (config.max_state_tokens, config.max_request_tokens, config.max_questions) == (25_000, 30_000, 128)
    assert (config.truncate_head_chars, config.truncate_tail_chars) == (300, 0)
    assert config.minimum_reduction == 0.10 and config.max_concurrency == 4
    assert config.max_transcript_chars == 5_000_000 and config.token_counter is None
    options = tt.ExecutionOptions()
    assert options.mode is tt.Mode.SHADOW and options.budget_s == 30.0 and options.version == "v1"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("keep_threshold", 1.5),
        ("keep_threshold", -0.1),
        ("keep_threshold", math.nan),
        ("keep_threshold", "0.5"),
        ("keep_threshold", True),
        ("discard_threshold", 2.0),
        ("preserve_recent_messages", -1),
        ("preserve_recent_messages", 2.5),
        ("max_state_tokens", 0),
        ("max_questions", 1),
        ("truncate_head_chars", -5),
        ("minimum_reduction", 1.0),
        ("max_concurrency", 0),
        ("max_concurrency", 33),
        ("max_transcript_chars", 0),
        ("token_counter", "len"),
        ("eligible_tools", "read_file"),
        ("eligible_tools", [""]),
    ],
)
def test_bad_field_is_named(field: str, value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=field if field != "eligible_tools" else "names"):
        tt.CompactorConfig(**{field: value})


def test_discard_above_keep_is_refused() -> None:
    with pytest.raises(ValueError, match="discard_threshold"):
        tt.CompactorConfig(keep_threshold=0.4, discard_threshold=0.6)


def test_request_budget_must_exceed_state_budget() -> None:
    with pytest.raises(ValueError, match="max_request_tokens"):
        tt.CompactorConfig(max_state_tokens=30_000, max_request_tokens=30_000)


@pytest.mark.parametrize("budget", [0, -1, math.inf, "3"])
def test_bad_budget(budget: Any) -> None:
    with pytest.raises(ValueError, match="budget_s"):
        tt.ExecutionOptions(budget_s=budget)


def test_bad_mode_and_observer() -> None:
    with pytest.raises(TypeError):
        tt.ExecutionOptions(mode="enforce")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="observer"):
        tt.ExecutionOptions(observer="print")  # type: ignore[arg-type]


@pytest.mark.parametrize("part", ["", "x" * 513, "a\x00b"])
def test_scope_parts_are_validated(part: str) -> None:
    with pytest.raises(ValueError, match=r"Scope\.session_id"):
        tt.Scope("u", "a", part)


def test_request_ids_must_be_collections_of_strings() -> None:
    with pytest.raises(TypeError):
        tt.CompactionRequest([], protected_call_ids="c1")
    with pytest.raises(TypeError):
        tt.CompactionRequest([], protected_message_ids=[1])  # type: ignore[list-item]
