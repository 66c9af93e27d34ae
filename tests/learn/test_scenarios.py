"""The labelled scenarios end to end with scripted answers that follow the labels."""

from __future__ import annotations

import copy
from typing import Any

import tracetrim as tt
from tests.conftest import load_scenario
from tracetrim._json import canonical_json
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel

LABEL_ANSWERS = {
    "critical": (0.95, 0.95),
    "needed": (0.9, 0.1),
    "irrelevant": (0.05, 0.05),
    "superseded": (0.1, 0.05),
    "protected": (0.05, 0.05),
}


def _model(labels: dict[str, list[str]]) -> ScriptedDecisionModel:
    table = {cid: LABEL_ANSWERS[label] for label, ids in labels.items() for cid in ids}
    return ScriptedDecisionModel.by_call_id(table)


def _blocks(messages: list[dict[str, Any]], call_id: str) -> list[str]:
    return [canonical_json(b) for m in messages for b in m["content"] if b.get("id") == call_id]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


async def test_payment_retry_seed_shape() -> None:
    scenario = load_scenario("payment_retry")
    messages = scenario["messages"]
    original = copy.deepcopy(messages)
    labels = scenario["labels"]
    config = tt.CompactorConfig(
        eligible_tools=scenario["eligible_tool_names"], **scenario["options"], excerpt_chars=0
    )  # the first round's head-only cuts, whose shape these tests know (test_excerpt.py: the excerpt)
    scope = tt.Scope("demo", "agent", "payment_retry")
    archive = KeyValueArchive(MemoryStore())
    compactor = tt.Compactor(
        _model(labels), config=config, archive=archive, execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE)
    )
    outcome = await compactor.plan(
        tt.CompactionRequest(
            messages,
            scenario["goal"],
            scenario["next_action"],
            scope=scope,
            protected_message_ids=scenario["protected_message_ids"],
            protected_call_ids=scenario["protected_call_ids"],
        )
    )
    assert (outcome.status, outcome.reason) == (tt.Status.DECIDED, "ARCHIVED_PROPOSAL")
    assert outcome.plan is not None
    by_id = {d.call_id: d for d in outcome.plan.decisions}
    for cid in labels["irrelevant"] + labels["superseded"]:
        assert by_id[cid].action is tt.Action.DROP_CALL, cid
        assert _blocks(outcome.plan.messages, cid) == []
    for cid in labels["critical"]:
        assert by_id[cid].action is tt.Action.KEEP and by_id[cid].reason == "needed_result"
        assert _blocks(outcome.plan.messages, cid) == _blocks(original, cid)
    for cid in labels["needed"]:
        assert by_id[cid].action is tt.Action.DROP_RESULT
    for cid in labels["protected"]:
        assert by_id[cid].keep_call is None, f"{cid} should never reach the model"
        assert _blocks(outcome.plan.messages, cid) == _blocks(original, cid)
    proposal_text = "\n".join(_strings(outcome.plan.messages))
    assert [s for s in scenario["must_contain"] if s not in proposal_text] == []
    assert outcome.plan.stats.chars_after < outcome.plan.stats.chars_before
    assert messages == original
    assert await archive.restore(scope, outcome.plan.archive_ref) == original


async def test_both_scenarios_protect_what_rules_protect_whatever_the_model_says(
    scenario: dict[str, Any],
) -> None:
    labels = scenario["labels"]
    config = tt.CompactorConfig(
        eligible_tools=scenario["eligible_tool_names"], **scenario["options"], excerpt_chars=0
    )  # the first round's head-only cuts, whose shape these tests know (test_excerpt.py: the excerpt)
    compactor = tt.Compactor(ScriptedDecisionModel({}, default=0.0), config=config)
    outcome = await compactor.plan(
        tt.CompactionRequest(
            scenario["messages"],
            scenario["goal"],
            scenario["next_action"],
            protected_message_ids=scenario["protected_message_ids"],
            protected_call_ids=scenario["protected_call_ids"],
        )
    )
    assert outcome.plan is not None
    for cid in labels["protected"]:
        assert _blocks(outcome.plan.messages, cid) == _blocks(scenario["messages"], cid), cid
    dropped = {d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_CALL}
    assert dropped == set(labels["critical"] + labels["needed"] + labels["irrelevant"] + labels["superseded"])
