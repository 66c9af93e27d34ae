"""The framework-free core of the adapters: import isolation, the pairing guard, marker recovery."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

import tracetrim as tt
import tracetrim.harness_adapter as ha
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter._pairing import pairing_problem
from tracetrim.harness_adapter._run import CompactingAdapter

FRAMEWORKS = ("agentscope", "langchain", "langchain_core", "langgraph", "pydantic_ai", "agents")


def test_importing_tracetrim_imports_no_framework() -> None:
    code = (
        "import sys, tracetrim, tracetrim.harness_adapter, tracetrim.formats\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_unknown_lazy_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = ha.NoSuchAdapter


def _call(call_id: str, path: str) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call_id,
        "name": "read_file",
        "input": f'{{"path": "{path}"}}',
        "state": "finished",
    }


def _history() -> list[dict[str, Any]]:
    big = "x" * 3000
    return [
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "read both files"}]},
        {
            "id": "a1",
            "role": "assistant",
            "content": [
                _call("c1", "a"),
                {"type": "tool_result", "id": "c1", "name": "read_file", "output": big, "state": "success"},
                _call("c2", "b"),
                {"type": "tool_result", "id": "c2", "name": "read_file", "output": big, "state": "success"},
            ],
        },
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "thanks"}]},
        {"id": "a2", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]


class Broken:
    """A strategy that loses a result but keeps its call, and says it archived and adopted that."""

    async def plan(self, request: tt.CompactionRequest) -> tt.Outcome:
        messages = copy.deepcopy(list(request.messages))
        del messages[1]["content"][1]
        stats = tt.PlanStats(messages_before=4, messages_after=4, chars_before=9000, chars_after=6000)
        plan = tt.Plan(messages=messages, decisions=(), stats=stats, archive_ref="0" * 64)
        return tt.Outcome(status=tt.Status.DECIDED, reason=tt.Reason.ARCHIVED_PROPOSAL, plan=plan)

    async def compact(self, request: tt.CompactionRequest) -> list[dict[str, Any]] | None:
        outcome = await self.plan(request)
        return outcome.plan.messages if outcome.plan is not None else None


class CompactOnly:
    """A strategy without ``plan``: adapters cannot tell what it did, so they refuse it."""

    async def compact(self, request: tt.CompactionRequest) -> list[dict[str, Any]] | None:
        return None


async def test_a_history_that_splits_a_pair_is_rejected() -> None:
    history = _history()
    result = await ha.compact_history(Broken(), history, scope=None)
    assert result.planned and result.messages is None
    assert history == _history()


async def test_a_strategy_without_plan_is_refused_by_name() -> None:
    with pytest.raises(tt.TracetrimError, match="CompactionStrategy"):
        await ha.compact_history(CompactOnly(), _history(), scope=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="plan"):  # at construction, before any history is seen
        CompactingAdapter(CompactOnly())  # type: ignore[arg-type]


def test_pairing_problem_cases() -> None:
    history = _history()
    assert pairing_problem(history, history) is None
    without_pair = copy.deepcopy(history)
    del without_pair[1]["content"][0:2]
    assert pairing_problem(history, without_pair) is None
    reordered = [history[0], history[2], history[1], history[3]]
    assert pairing_problem(history, reordered) is not None
    invented = [*history, {"id": "new", "role": "user", "content": []}]
    assert pairing_problem(history, invented) is not None


async def test_markers_lost_by_a_converter_are_recovered() -> None:
    scope = tt.Scope("u", "a", "s")
    compactor = tt.Compactor(
        ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1)}, default=(0.9, 0.9)),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=1),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    result = await ha.compact_history(compactor, _history(), scope=scope)
    assert result.messages is not None and result.archive_ref
    marked = result.messages[1]["content"][1]
    assert marked["metadata"]["tracetrim"]["archive_ref"] == result.archive_ref
    stripped = copy.deepcopy(result.messages)
    del stripped[1]["content"][1]["metadata"]  # what a format without block metadata hands back
    assert ha.restore_markers(stripped) == result.messages
    # A second pass leaves the shortened result alone instead of shortening it again.
    again = await ha.compact_history(compactor, stripped, scope=scope)
    assert again.messages is None


def test_a_compactor_is_a_compaction_strategy() -> None:
    assert isinstance(tt.Compactor(), ha.CompactionStrategy)
