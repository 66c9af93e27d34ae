"""Restoring histories whose ids repeat (issue 15, defect 2): tau-bench reuses ids; restores must not care."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tracetrim as tt
from tests._histories import tool_history, user
from tests._offload_support import RecordingSummarizer
from tests.conftest import load_scenario
from tracetrim.archive import KeyValueArchive, MemoryStore, rehydrate
from tracetrim.compactor._offload import OffloadConfig, OffloadStrategy
from tracetrim.decision import ScriptedDecisionModel

SCOPE = tt.Scope("u", "a", "s")
ID_PATTERNS = [["same"], ["a", "b"], ["x", "y", "x", "z"]]


def _reuse_ids(messages: list[dict[str, Any]], ids: list[str]) -> list[dict[str, Any]]:
    return [{**m, "id": ids[n % len(ids)]} for n, m in enumerate(copy.deepcopy(messages))]


@pytest.mark.parametrize("ids", ID_PATTERNS)
@pytest.mark.parametrize("p_call", [0.0, 1.0])  # every pair dropped, or every result shortened
async def test_planner_output_rehydrates_with_repeated_message_ids(ids: list[str], p_call: float) -> None:
    messages = _reuse_ids(tool_history(6), ids)
    archive = KeyValueArchive(MemoryStore())
    compactor = tt.Compactor(
        ScriptedDecisionModel(lambda name, q, s: p_call if name.startswith("call") else 0.0),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    archived = await archive.restore(SCOPE, outcome.plan.archive_ref)
    later = user(ids[0], "and now?")
    assert rehydrate([*outcome.plan.messages, later], archived) == [*messages, later]
    if p_call:
        assert await tt.restore_offloaded([*outcome.plan.messages, later], archive, SCOPE) == [
            *messages,
            later,
        ]


@pytest.mark.parametrize("ids", ID_PATTERNS)
@pytest.mark.parametrize("name", ["payment_retry", "replication_incident"])
async def test_offload_restore_with_repeated_message_ids(ids: list[str], name: str) -> None:
    scenario = load_scenario(name)
    messages = _reuse_ids(scenario["messages"], ids)
    archive = KeyValueArchive(MemoryStore())
    strategy = OffloadStrategy(
        RecordingSummarizer(),
        config=OffloadConfig(
            mode="auto",
            trigger_tokens=2_000,
            max_tool_message_tokens=300,
            compact_ratio_threshold=0.0,
            group_token_threshold=800,
        ),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    outcome = await strategy.plan(tt.CompactionRequest(messages, goal=scenario["goal"], scope=SCOPE))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    later = user(ids[0], "and now?")
    restored = await tt.restore_offloaded([*outcome.plan.messages, later], archive, SCOPE)
    assert restored == [*messages, later]
