"""rehydrate, restore_calls and the recall tool, over real archives and by-hand compacted histories."""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._archive_support import compact_by_hand, make_history
from tracetrim._json import canonical_bytes
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim.archive import (
    CallNotFoundError,
    FileArchive,
    InvalidReferenceError,
    KeyValueArchive,
    MemoryStore,
    RecallTool,
    rehydrate,
    restore_calls,
    snapshot_ref,
)

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")
APPENDED: list[Message] = [
    {"id": "new1", "role": "user", "content": [{"type": "text", "text": "and now?"}]},
    {
        "id": "new2",
        "role": "assistant",
        "content": [
            {"type": "tool_call", "id": "late", "name": "read_file", "input": "{}", "state": "finished"},
            {
                "type": "tool_result",
                "id": "late",
                "name": "read_file",
                "output": "late body",
                "state": "success",
            },
        ],
    },
]


def _compacted(original: list[Message], actions: dict[str, str]) -> list[Message]:
    return compact_by_hand(original, actions, snapshot_ref(SCOPE, original)) + copy.deepcopy(APPENDED)


def test_rehydrating_every_call_gives_the_original_plus_what_came_since() -> None:
    original = make_history(9, seed=1)
    # c0,c1: separate messages; c2: same message as its text; c3..: mixed
    actions = {
        "c0": "drop_call",
        "c1": "drop_result",
        "c2": "drop_call",
        "c3": "drop_result",
        "c5": "drop_call",
        "c6": "drop_call",
        "c8": "drop_result",
    }
    current = _compacted(original, actions)
    assert len(current) < len(original) + len(APPENDED)  # whole messages really were removed
    before = canonical_bytes(current)
    restored = rehydrate(current, original)
    assert restored == original + APPENDED
    assert canonical_bytes(current) == before  # inputs untouched


def test_rehydrating_some_calls_restores_only_those() -> None:
    original = make_history(6, seed=2)
    actions = {"c0": "drop_call", "c1": "drop_result", "c2": "drop_call", "c4": "drop_result"}
    current = _compacted(original, actions)
    partial = rehydrate(current, original, ["c0", "c1"])
    assert partial == _compacted(original, {"c2": "drop_call", "c4": "drop_result"})
    assert rehydrate(partial, original, ["c2", "c4"]) == original + APPENDED
    assert rehydrate(current, original, "c2") == _compacted(
        original, {"c0": "drop_call", "c1": "drop_result", "c4": "drop_result"}
    )


def test_a_pair_dropped_from_a_surviving_message_goes_back_in_place() -> None:
    original = make_history(3, seed=3)  # c2's call and result share message m5 with a text block
    current = _compacted(original, {"c2": "drop_call"})
    holder = next(m for m in current if m["id"] == "m5")
    assert [b["type"] for b in holder["content"]] == ["text"]
    assert rehydrate(current, original, ["c2"]) == original + APPENDED


def test_messages_without_ids_are_aligned_by_position() -> None:
    original = make_history(5, seed=4)
    for message in original:
        del message["id"]
    current = compact_by_hand(original, {"c0": "drop_call", "c3": "drop_result", "c4": "drop_call"}, "r" * 64)
    tail = [{"role": "user", "content": [{"type": "text", "text": "later"}]}]
    assert rehydrate(current + tail, original) == original + tail


def test_unknown_call_ids_and_unrelated_histories_are_refused() -> None:
    original = make_history(3, seed=5)
    current = _compacted(original, {"c0": "drop_call"})
    with pytest.raises(CallNotFoundError, match="nope"):
        rehydrate(current, original, ["nope"])
    reordered = [current[1], current[0], *current[2:]]
    with pytest.raises(ValueError, match="reorders"):
        rehydrate(reordered, original)


def test_nothing_to_rehydrate_returns_an_equal_copy() -> None:
    original = make_history(2, seed=6)
    current = original + APPENDED
    result = rehydrate(current, original)
    assert result == current
    assert result is not current and result[0] is not current[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.integers(min_value=1, max_value=8),
    seed=st.integers(0, 10_000),
    choices=st.lists(st.sampled_from(["keep", "drop_result", "drop_call"]), min_size=8, max_size=8),
    appended=st.integers(min_value=0, max_value=2),
)
def test_rehydrate_inverts_any_compaction(pairs: int, seed: int, choices: list[str], appended: int) -> None:
    original = make_history(pairs, seed=seed, result_chars=60)
    actions = {f"c{i}": a for i, a in enumerate(choices[:pairs]) if a != "keep"}
    current = compact_by_hand(original, actions, "f" * 64) + copy.deepcopy(APPENDED[:appended])
    assert rehydrate(current, original) == original + APPENDED[:appended]
    # rehydrating in two halves reaches the same place
    ids = sorted(actions)
    halfway = rehydrate(current, original, ids[: len(ids) // 2])
    assert rehydrate(halfway, original, ids[len(ids) // 2 :]) == original + APPENDED[:appended]


async def test_restore_calls_returns_the_original_blocks(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path)
    original = make_history(4, seed=7)
    ref = await archive.save(SCOPE, original)
    calls = await restore_calls(archive, SCOPE, ref, ["c3", "c1"])
    assert [c.call_id for c in calls] == ["c3", "c1"]
    assert calls[1].call == original[3]["content"][1]
    assert calls[1].result == original[4]["content"][0]
    assert calls[0].as_dict()["result"]["output"] == original[7]["content"][0]["output"]
    with pytest.raises(CallNotFoundError, match=ref):
        await restore_calls(archive, SCOPE, ref, ["c1", "missing"])


async def test_recall_tool_answers_from_the_newest_snapshot_holding_the_full_result() -> None:
    archive = KeyValueArchive(MemoryStore())
    original = make_history(4, seed=8)
    first_ref = await archive.save(SCOPE, original)
    # a second pass archives the already-compacted history: its copy of c1 is the shortened one
    second = _compacted(original, {"c1": "drop_result", "c2": "drop_call"})
    await archive.save(SCOPE, second)
    tool = RecallTool(archive, SCOPE)
    full = original[4]["content"][0]["output"]
    assert await tool("c1") == full
    assert await tool("c1", first_ref) == full
    assert await tool("late") == "late body"
    with pytest.raises(CallNotFoundError, match="'c1'"):
        await tool("c1", snapshot_ref(SCOPE, second))
    with pytest.raises(CallNotFoundError, match="nothing-here"):
        await tool("nothing-here")
    with pytest.raises(InvalidReferenceError):
        await tool("c1", "../etc/passwd")
    other = RecallTool(archive, Scope(user_id="x", agent_id="a", session_id="s"))
    with pytest.raises(CallNotFoundError):
        await other("c1")


async def test_recall_tool_is_ready_to_register() -> None:
    archive = KeyValueArchive(MemoryStore())
    history = make_history(1, seed=9)
    history[2]["content"][0]["output"] = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    await archive.save(SCOPE, history)
    tool = RecallTool(archive, SCOPE)
    assert tool.name == "recall_tool_result"
    assert "call id" in tool.description
    schema = json.loads(json.dumps(tool.json_schema))
    assert schema["required"] == ["call_id"] and set(schema["properties"]) == {"call_id", "archive_ref"}
    function = tool.function
    assert function.__name__ == "recall_tool_result"
    assert "call_id" in (function.__doc__ or "")
    assert list(inspect.signature(function).parameters) == ["call_id", "archive_ref"]
    assert await function("c0", None) == "a\nb"


def _with_repeated_ids(original: list[Message], ids: list[str]) -> list[Message]:
    """The history with its message ids replaced, cycling through ``ids`` (hosts reuse ids)."""
    return [{**m, "id": ids[n % len(ids)]} for n, m in enumerate(original)]


@pytest.mark.parametrize("ids", [["same"], ["a", "b"], ["x", "y", "x", "z"]])
def test_rehydrate_with_repeated_message_ids_restores_the_original(ids: list[str]) -> None:
    original = _with_repeated_ids(make_history(7, seed=11), ids)
    actions = {"c0": "drop_call", "c1": "drop_result", "c2": "drop_call", "c4": "drop_call"}
    current = _compacted(original, actions)
    assert rehydrate(current, original) == original + APPENDED
    partial = rehydrate(current, original, ["c0", "c2"])
    assert partial == _compacted(original, {"c1": "drop_result", "c4": "drop_call"})


def test_rehydrate_with_tau_bench_style_ids_reused_as_message_ids() -> None:
    # tau-bench names a tool message after its call id, and reuses call ids across turns.
    original = make_history(6, seed=12)
    for message in original:
        tool_ids = [b["id"] for b in message["content"] if b["type"] in ("tool_call", "tool_result")]
        if tool_ids:
            message["id"] = tool_ids[0]
    current = _compacted(original, {"c0": "drop_call", "c3": "drop_call", "c5": "drop_result"})
    assert rehydrate(current, original) == original + APPENDED


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.integers(min_value=1, max_value=8),
    seed=st.integers(0, 10_000),
    choices=st.lists(st.sampled_from(["keep", "drop_result", "drop_call"]), min_size=8, max_size=8),
    ids=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4),
)
def test_rehydrate_inverts_any_compaction_with_repeated_ids(
    pairs: int, seed: int, choices: list[str], ids: list[str]
) -> None:
    original = _with_repeated_ids(make_history(pairs, seed=seed, result_chars=60), ids)
    actions = {f"c{i}": a for i, a in enumerate(choices[:pairs]) if a != "keep"}
    current = compact_by_hand(original, actions, "f" * 64) + copy.deepcopy(APPENDED)
    assert rehydrate(current, original) == original + APPENDED
