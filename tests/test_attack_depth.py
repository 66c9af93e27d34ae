"""Deep nesting and unencodable text (issue 15, defects 1 and 5): checked limits, places named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, tool_history, user
from tracetrim._json import (
    MAX_NESTING,
    NestingError,
    canonical_bytes,
    check_nesting,
    compact_bytes,
    text_nesting_exceeds,
)
from tracetrim.decision import LearnedDecisionModel, ScriptedDecisionModel

SCOPE = tt.Scope("u", "a", "s")


def _deep(levels: int) -> dict[str, Any]:
    """An object ``levels`` objects deep (itself included)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _deep_input(levels: int) -> str:
    return '{"x": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


def test_metadata_nested_1500_deep_is_a_snapshot_error_naming_where() -> None:
    messages = [user("m0", "task"), user("m1", "x", metadata=_deep(1500))]
    with pytest.raises(tt.SnapshotError) as info:
        tt.validate_messages(messages)
    assert (info.value.message_index, info.value.field) == (1, "metadata")
    assert f"nested deeper than {MAX_NESTING} levels" in str(info.value)


def test_deep_block_field_is_named_with_its_block() -> None:
    block = {**result("c1"), "metadata": _deep(1500)}
    messages = [user("m0", "task"), assistant("a1", text("t"), call("c1"), block)]
    with pytest.raises(tt.SnapshotError) as info:
        tt.validate_messages(messages)
    assert (info.value.message_index, info.value.block_index, info.value.field) == (1, 2, "metadata")


def test_nesting_limit_is_exact() -> None:
    # The message is level 1, "metadata" level 2: a message exactly MAX_NESTING deep is accepted.
    ok = [user("m0", "x", metadata=_deep(MAX_NESTING - 1))]
    assert tt.validate_messages(ok) == ok
    with pytest.raises(tt.SnapshotError, match="nested deeper"):
        tt.validate_messages([user("m0", "x", metadata=_deep(MAX_NESTING))])


def test_deep_value_with_a_non_orjson_float_is_checked_too() -> None:
    # A tiny float sends the copy down json's slow path, which has its own depth check.
    metadata = {"tiny": 1e-9, "deep": _deep(1500)}
    with pytest.raises(tt.SnapshotError, match="message 0, field 'metadata'"):
        tt.validate_messages([user("m0", "x", metadata=metadata)])


def test_cyclic_metadata_is_refused_cleanly() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(tt.SnapshotError, match="cyclic"):
        tt.validate_messages([user("m0", "x", metadata=cyclic)])


@pytest.mark.parametrize("encode", [canonical_bytes, compact_bytes, check_nesting])
def test_encoders_refuse_deep_values_with_a_value_error(encode: Any) -> None:
    with pytest.raises(NestingError):
        encode([_deep(1500)])


def test_text_nesting_ignores_brackets_inside_strings() -> None:
    assert text_nesting_exceeds("[" * 201 + "]" * 201)
    assert not text_nesting_exceeds("[" * 200 + "]" * 200)
    assert not text_nesting_exceeds('{"x": "' + "[" * 5000 + '"}')
    assert not text_nesting_exceeds('{"x": "\\"' + "{" * 5000 + '"}')
    assert text_nesting_exceeds(b"[" * 5000)


async def test_plan_with_a_too_deep_snapshot_is_invalid_transcript_naming_where() -> None:
    messages = tool_history(3)
    messages[2] = {**messages[2], "metadata": _deep(1500)}
    compactor = tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(eligible_tools={"read_file"}),
        execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW),
    )
    outcome = await compactor.plan(tt.CompactionRequest(messages))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "INVALID_TRANSCRIPT")
    assert "message 2, field 'metadata'" in outcome.detail


@pytest.mark.parametrize("model", [ScriptedDecisionModel({}, default=0.0), LearnedDecisionModel()])
async def test_a_deep_call_input_is_protected_and_the_healthy_pairs_still_compact(model: Any) -> None:
    messages = tool_history(4)
    messages[2]["content"][1] = call("c2", raw=_deep_input(1200))
    original = copy.deepcopy(messages)
    compactor = tt.Compactor(
        model,
        config=tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=tt.archive.KeyValueArchive(tt.archive.MemoryStore()),
    )
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.plan is not None, outcome.detail
    reasons = {d.call_id: d.reason for d in outcome.plan.decisions}
    assert reasons["c2"] == "input_too_deep"
    assert outcome.status is not tt.Status.ERROR
    assert messages == original


def test_lone_surrogate_names_message_block_and_field() -> None:
    messages = [user("m0", "task"), assistant("a1", text("fine"), text("bad \ud800 text"))]
    with pytest.raises(tt.SnapshotError) as info:
        tt.validate_messages(messages)
    assert (info.value.message_index, info.value.block_index, info.value.field) == (1, 1, "text")
    assert "surrogate" in str(info.value)


def test_lone_surrogate_in_a_message_field_names_the_field() -> None:
    messages = [user("m0", "task"), user("m1", "x", name="bad \udfff")]
    with pytest.raises(tt.SnapshotError) as info:
        tt.validate_messages(messages)
    assert (info.value.message_index, info.value.block_index, info.value.field) == (1, None, "name")
