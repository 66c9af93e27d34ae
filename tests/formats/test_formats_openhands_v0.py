"""OpenHands V0 histories beyond the fixture: trajectories saved without the LLM's responses, V0's own
condensation, the actions it never sends as calls, and a response whose calls all went."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import tracetrim as tt
from tests._agent_rules import check_openhands_v0, openhands_v0_messages
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS, detect_format

SHAPE = HISTORY_FORMATS["openhands-v0"]


def _pair(n: int, call: str, output: str, response: dict[str, Any]) -> list[dict[str, Any]]:
    metadata = {"function_name": "execute_bash", "tool_call_id": call, "model_response": response}
    return [
        {"id": n, "source": "agent", "action": "run", "args": {"command": f"cat f{n}.py", "thought": ""},
         "tool_call_metadata": metadata},
        {"id": n + 1, "source": "agent", "observation": "run", "content": output, "extras": {},
         "cause": n, "tool_call_metadata": metadata},
    ]  # fmt: skip


def _response(rid: str, calls: list[str], said: str | None = None) -> dict[str, Any]:
    listed = [
        {"id": c, "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}} for c in calls
    ]
    return {"id": rid, "choices": [{"message": {"content": said, "tool_calls": listed}}]}


def _history(responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "fix the parser"}}
    ]
    for k, response in enumerate(responses):
        events += _pair(len(events), f"call_{k}", f"line of f{k}\n" * 300, response)
    events.append({"id": len(events), "source": "agent", "action": "message", "args": {"content": "done"}})
    return events


def _drop_all(neutral: list[Any]) -> list[Any]:
    compactor = tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(eligible_tools={"execute_bash"}, preserve_recent_messages=1),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    outcome = asyncio.run(compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    return list(outcome.plan.messages)


def test_a_trajectory_saved_without_responses_is_judged_by_its_actions_arguments() -> None:
    """Some exports keep only ``model_response``'s id (OpenHands itself could not resume them): the
    call is then what the action's ``args`` say, and a drop takes the action and its observation
    together."""
    events = _history([{"id": "response-1"}, {"id": "response-2"}])
    neutral = SHAPE.read(events)
    calls = [b for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert [c["input"] for c in calls] == ['{"command": "cat f1.py", "thought": ""}'] + [
        '{"command": "cat f3.py", "thought": ""}'
    ]
    written = SHAPE.write(_drop_all(neutral))["messages"]
    assert [e.get("action") or e["observation"] for e in written] == [
        "message",
        "message",
        "message",
        "message",
    ]
    assert "call_0" in written[1]["args"]["content"] and written[1]["source"] == "agent"
    assert detect_format(written) == "openhands-v0"


def test_what_a_condensation_forgot_and_what_v0_never_sends_as_a_call_stay_in_place() -> None:
    events = _history([_response("r1", ["call_0"]), _response("r2", ["call_1"])])
    events.insert(
        -1, {"id": 90, "source": "agent", "action": "condensation", "args": {"forgotten_event_ids": [1, 2]}}
    )
    finish = {
        "function_name": "finish",
        "tool_call_id": "call_9",
        "model_response": _response("r9", ["call_9"]),
    }
    events.insert(
        -1, {"id": 91, "source": "agent", "action": "finish", "args": {}, "tool_call_metadata": finish}
    )
    sent = copy.deepcopy(events)
    neutral = SHAPE.read(events)
    judged = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    assert judged == {"call_1"}  # call_0 was forgotten, call_9 is a finish (sent as text)
    assert SHAPE.write(neutral)["messages"] == sent
    written = SHAPE.write(_drop_all(neutral))["messages"]
    assert [e for e in written if e.get("id") in (1, 2, 90, 91)] == [
        e for e in sent if e["id"] in (1, 2, 90, 91)
    ]
    check_openhands_v0(written)
    assert events == sent


def test_a_response_whose_calls_all_went_says_what_it_said_as_one_agent_message() -> None:
    response = _response("r1", ["call_0", "call_1"], said="Reading both.")
    events = _history([response, response])
    check_openhands_v0(events)
    written = SHAPE.write(_drop_all(SHAPE.read(events)))["messages"]
    check_openhands_v0(written)
    messages, held = openhands_v0_messages(written)
    assert not held and not any(m.get("tool_calls") for m in messages)
    said = [m["content"] for m in messages if m["role"] == "assistant"]
    assert said[0].startswith("Reading both.\n[tracetrim: ") and "call_0" in said[0] and "call_1" in said[0]
