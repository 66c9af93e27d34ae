"""The trail a dropped pair leaves: a tombstone in its call's place, recallable, removed by rehydrate."""

from __future__ import annotations

import copy
import tempfile
from typing import Any

import tracetrim as tt
from tests._histories import tool_history
from tracetrim import Action
from tracetrim._json import canonical_json
from tracetrim._marker import TOMBSTONE_PREFIX, is_tombstone, tombstone_call_id
from tracetrim.archive import FileArchive, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

SCOPE = tt.Scope(user_id="u", agent_id="a", session_id="s")


def _drop_all(**config: Any) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(
            eligible_tools={"read_file"}, minimum_reduction=0.0, **{"tombstones": True, **config}
        ),
    )


def _tombstones(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(tombstone_call_id(b)): b for m in messages for b in m["content"] if is_tombstone(b)}


async def test_a_dropped_pair_leaves_one_line_where_its_call_stood() -> None:
    messages = tool_history(3)
    plan = (await _drop_all().plan(tt.CompactionRequest(messages))).plan
    assert plan is not None
    assert [d.action for d in plan.decisions[:3]] == [Action.DROP_CALL] * 3
    stones = _tombstones(plan.messages)
    assert sorted(stones) == ["c1", "c2", "c3"]
    first = plan.messages[1]
    assert [b["type"] for b in first["content"]] == ["text", "text"]  # the thought, then the tombstone
    text = first["content"][1]["text"]
    assert text.startswith(TOMBSTONE_PREFIX) and "\n" not in text
    assert text == "[tracetrim: dropped read_file call c1 (c1.py); not archived]"
    # No tool block of a dropped pair survives, so nothing is orphaned; the decision counts the stone.
    assert not any(b.get("id") == "c1" for m in plan.messages for b in m["content"] if "id" in b)
    assert plan.decisions[0].chars_after == len(canonical_json(first["content"][1]))


async def test_without_tombstones_a_dropped_pair_leaves_no_trace() -> None:
    messages = tool_history(3)
    plan = (await _drop_all(tombstones=False).plan(tt.CompactionRequest(messages))).plan
    assert plan is not None
    assert _tombstones(plan.messages) == {}
    assert [b["type"] for b in plan.messages[1]["content"]] == ["text"]


async def test_a_long_input_is_cut_to_a_gist_and_a_second_pass_never_judges_a_tombstone() -> None:
    messages = tool_history(3)
    messages[1]["content"][1]["input"] = '{"command": "' + "cat <<'EOF'\\n" + "x" * 5000 + '"}'
    compactor = _drop_all()
    plan = (await compactor.plan(tt.CompactionRequest(messages))).plan
    assert plan is not None
    stone = _tombstones(plan.messages)["c1"]
    assert len(stone["text"]) < 150 and "…" in stone["text"] and "cat <<'EOF'" in stone["text"]
    again = (await compactor.plan(tt.CompactionRequest(plan.messages))).plan
    assert again is not None
    assert {d.call_id for d in again.decisions} == set()  # only tombstones and text are left
    assert _tombstones(again.messages) == _tombstones(plan.messages)


async def test_the_recall_tool_restores_a_tombstoned_result_and_rehydrate_removes_the_stone() -> None:
    messages = tool_history(3)
    original = copy.deepcopy(messages)
    with tempfile.TemporaryDirectory() as folder:
        archive = FileArchive(folder)
        compactor = tt.Compactor(
            ScriptedDecisionModel({}, default=0.0),
            config=tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0, tombstones=True),
            execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
            archive=archive,
        )
        outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
        assert outcome.adopted and outcome.plan is not None
        compacted = outcome.plan.messages
        stone = _tombstones(compacted)["c2"]
        assert stone["text"].endswith("; recall_tool_result(c2) restores it]")
        assert stone["metadata"]["tracetrim"] == {"action": "drop_call", "call_id": "c2"}

        answer = await RecallTool(archive, SCOPE).answer("c2")
        assert "line 0 of c2: some file content here" in answer

        later = [*compacted, {"id": "u9", "role": "user", "content": [{"type": "text", "text": "go on"}]}]
        back = rehydrate(later, original)
        assert back == [*original, later[-1]]
        partly = rehydrate(later, original, ["c2"])
        assert sorted(_tombstones(partly)) == ["c1", "c3"]
        assert any(b.get("id") == "c2" for m in partly for b in m["content"] if b["type"] == "tool_result")


def test_a_tombstone_is_known_by_its_text_where_a_format_dropped_its_metadata() -> None:
    note = f"{TOMBSTONE_PREFIX}bash call c7 (ls -la); not archived]"
    block = {"type": "text", "text": note}
    assert is_tombstone(block) and tombstone_call_id(block) == "c7"
    assert not is_tombstone({"type": "text", "text": "[tracetrim: dropped the ball]"})
