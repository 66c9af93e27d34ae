"""Restoring what the real planner archived: rehydrate and the recall tool on planner output."""

from __future__ import annotations

import copy
from typing import Any

import tracetrim as tt
from tests._histories import assistant, text, user
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

SCOPE = tt.Scope("u", "a", "s")


async def _enforced(scenario: dict[str, Any], archive: KeyValueArchive) -> tt.Outcome:
    labels = scenario["labels"]
    table = {cid: (0.05, 0.05) for cid in labels["irrelevant"] + labels["superseded"]}
    table |= {cid: (0.9, 0.1) for cid in labels["needed"]}
    config = tt.CompactorConfig(
        eligible_tools=scenario["eligible_tool_names"], **scenario["options"], excerpt_chars=0
    )  # the first round's head-only cuts, whose shape these tests know (test_excerpt.py: the excerpt)
    compactor = tt.Compactor(
        ScriptedDecisionModel.by_call_id(table, default=(0.95, 0.95)),
        config=config,
        archive=archive,
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
    )
    return await compactor.plan(
        tt.CompactionRequest(
            scenario["messages"],
            scenario["goal"],
            scenario["next_action"],
            scope=SCOPE,
            protected_message_ids=scenario["protected_message_ids"],
            protected_call_ids=scenario["protected_call_ids"],
        )
    )


async def test_rehydrating_every_call_gives_the_original_plus_what_came_since(
    scenario: dict[str, Any],
) -> None:
    archive = KeyValueArchive(MemoryStore())
    original = copy.deepcopy(scenario["messages"])
    outcome = await _enforced(scenario, archive)
    assert outcome.plan is not None and outcome.adopted
    changed = [d.call_id for d in outcome.plan.decisions if d.action is not tt.Action.KEEP]
    assert changed, "the plan should have shortened or dropped something"
    appended = [user("later-1", "one more thing"), assistant("later-2", text("on it"))]
    current = [*outcome.plan.messages, *appended]
    archived = await archive.restore(SCOPE, outcome.plan.archive_ref)
    assert rehydrate(current, archived) == original + appended
    assert rehydrate(current, archived, changed) == original + appended


async def test_recall_tool_returns_the_full_result_a_marker_names(scenario: dict[str, Any]) -> None:
    archive = KeyValueArchive(MemoryStore())
    outcome = await _enforced(scenario, archive)
    assert outcome.plan is not None
    shortened = [d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_RESULT]
    assert shortened
    originals = {b["id"]: b for m in scenario["messages"] for b in m["content"] if b["type"] == "tool_result"}
    recall = RecallTool(archive, SCOPE)
    for call_id in shortened:
        full = originals[call_id]["output"]
        expected = full if isinstance(full, str) else "\n".join(part["text"] for part in full)
        assert await recall(call_id, outcome.plan.archive_ref) == expected
        assert await recall(call_id) == expected
