"""OffloadStrategy on the real SWE-agent trajectories, plus a property test of the grouping rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._offload_support import RecordingSummarizer, expected_offloads, shortened_ids
from tests.conftest import DATA, require_data
from tracetrim import CompactionRequest, ExecutionOptions, Mode, Scope, Status
from tracetrim._tokens import estimate_tokens
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.compactor._offload import OffloadConfig, OffloadStrategy, restore_offloaded
from tracetrim.compactor._offload._select import compress_groups
from tracetrim.formats._swe_agent import load_swe_agent_traj

SCOPE = Scope(user_id="u", agent_id="swe", session_id="s")
TRAJECTORIES = sorted((DATA / "swe-agent").glob("*.traj"))


def _load(path: Path) -> list[dict[str, Any]]:
    return load_swe_agent_traj(require_data(path))


@pytest.mark.data
@pytest.mark.parametrize("path", TRAJECTORIES, ids=lambda p: p.stem[:40])
async def test_compact_and_auto_on_swe_agent_trajectories(path: Path) -> None:
    messages = _load(path)
    archive = KeyValueArchive(MemoryStore())
    config: dict[str, Any] = {"trigger_tokens": 2_000, "max_tool_message_tokens": 400}
    compact = OffloadStrategy(
        config=OffloadConfig(mode="compact", **config),
        execution=ExecutionOptions(mode=Mode.ENFORCE),
        archive=archive,
    )
    outcome = await compact.plan(CompactionRequest(messages, scope=SCOPE))
    expected = expected_offloads(messages, limit=400, keep_recent=1)
    if not expected:
        assert outcome.status is Status.SKIPPED
    else:
        assert outcome.adopted and outcome.plan is not None, outcome.detail
        assert shortened_ids(outcome.plan.messages) == expected
        assert await restore_offloaded(outcome.plan.messages, archive, SCOPE) == messages

    summarizer = RecordingSummarizer()
    auto = OffloadStrategy(
        summarizer,
        config=OffloadConfig(mode="auto", **config),
        execution=ExecutionOptions(mode=Mode.ENFORCE),
        archive=archive,
    )
    outcome = await auto.plan(CompactionRequest(messages, scope=SCOPE))
    if outcome.status is not Status.DECIDED:
        assert (outcome.status, outcome.reason) == (Status.SKIPPED, "BELOW_TRIGGER"), outcome.detail
    else:
        assert outcome.adopted and outcome.plan is not None, outcome.detail
        assert await restore_offloaded(outcome.plan.messages, archive, SCOPE) == messages
        for group in summarizer.groups:
            calls = {b["id"] for m in group for b in m["content"] if b["type"] == "tool_call"}
            results = {b["id"] for m in group for b in m["content"] if b["type"] == "tool_result"}
            assert calls == results


@pytest.mark.data
def test_the_trajectories_are_there() -> None:
    require_data(DATA / "swe-agent")  # skips (fails in CI) rather than passing on an empty folder
    assert len(TRAJECTORIES) >= 10


_block = st.one_of(
    st.builds(lambda n: ("text", n), st.integers(0, 300)),
    st.builds(lambda n: ("call", n), st.integers(0, 5)),
    st.builds(lambda n: ("result", n), st.integers(0, 5)),
)


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.lists(_block, min_size=1, max_size=3), min_size=1, max_size=14),
    roles=st.lists(st.sampled_from(["user", "assistant", "assistant", "system"]), min_size=14, max_size=14),
    threshold=st.integers(1, 400),
    keep=st.integers(0, 3),
)
def test_groups_never_split_a_pair_and_hold_only_free_messages(
    shape: list[list[tuple[str, int]]], roles: list[str], threshold: int, keep: int
) -> None:
    messages: list[dict[str, Any]] = []
    for i, blocks in enumerate(shape):
        content: list[dict[str, Any]] = []
        for kind, n in blocks:
            if kind == "text":
                content.append({"type": "text", "text": "w " * n})
            elif kind == "call":
                content.append(
                    {"type": "tool_call", "id": f"c{n}", "name": "t", "input": "{}", "state": "finished"}
                )
            else:
                content.append(
                    {
                        "type": "tool_result",
                        "id": f"c{n}",
                        "name": "t",
                        "output": "r " * 50,
                        "state": "success",
                    }
                )
        messages.append({"id": f"m{i}", "role": roles[i], "content": content})
    groups = compress_groups(
        messages,
        keep_recent=keep,
        protected_ids=(),
        pinned_ids=(),
        protected_call_ids=(),
        max_group_tokens=threshold,
        count=estimate_tokens,
    )
    seen: set[int] = set()
    previous_stop = 0
    for group in groups:
        assert len(group) >= 1 and group.start >= previous_stop
        previous_stop = group.stop
        for i in group:
            assert i != 0 and i < len(messages) - keep and messages[i]["role"] != "system"
            seen.add(i)
    for call_id in {b["id"] for m in messages for b in m["content"] if b["type"] != "text"}:
        holders = {i for i, m in enumerate(messages) for b in m["content"] if b.get("id") == call_id}
        kinds = sorted(b["type"] for m in messages for b in m["content"] if b.get("id") == call_id)
        inside = [g for g in groups if holders & set(g)]
        if inside:
            assert kinds == ["tool_call", "tool_result"]
            assert len(inside) == 1 and holders <= set(inside[0])
