"""pydantic-ai histories stored as JSON (``ModelMessagesTypeAdapter.dump_json``), the way pydantic-ai's
docs store them: read without pydantic-ai, compacted by the CLI, and loaded back by pydantic-ai to go on
with a real agent run (driven by pydantic-ai's ``FunctionModel``, no network)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests._compact_plans import cli_compact
from tests._provider_rules import check_pydantic_ai
from tracetrim._snapshot import SnapshotError
from tracetrim.formats import detect_format, from_pydantic_ai, from_pydantic_ai_json, to_pydantic_ai_json

READS = 6


def _run() -> list[ModelMessage]:
    """A real agent run: file reads, then an answer."""
    turn = {"n": 0}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn["n"] += 1
        if turn["n"] <= READS:
            return ModelResponse(
                parts=[
                    TextPart(f"reading file {turn['n']}"),
                    ToolCallPart("read_file", {"path": f"src/f{turn['n']}.py"}, tool_call_id=f"c{turn['n']}"),
                ]
            )
        return ModelResponse(parts=[TextPart("the bug is in f2")])

    agent = Agent(FunctionModel(model), system_prompt="You fix bugs.")

    @agent.tool_plain
    def read_file(path: str) -> str:
        return "\n".join(f"line {k} of {path}: code that is long enough to matter" for k in range(60))

    return agent.run_sync("Find the bug in src.").all_messages()


def _stored() -> list[dict[str, Any]]:
    """The run as pydantic-ai stores it."""
    stored: list[dict[str, Any]] = json.loads(ModelMessagesTypeAdapter.dump_json(_run()))
    return stored


def test_the_stored_form_reads_as_the_messages_do_and_writes_back_as_it_was() -> None:
    stored = _stored()
    sent = copy.deepcopy(stored)
    assert detect_format(stored) == "pydantic-ai"
    assert detect_format({"messages": stored}) == "pydantic-ai"
    neutral = from_pydantic_ai_json(stored)
    assert stored == sent, "the caller's messages were mutated"
    assert neutral == from_pydantic_ai(ModelMessagesTypeAdapter.validate_python(stored))
    assert to_pydantic_ai_json(neutral) == stored
    calls = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert calls == [f"c{n}" for n in range(1, READS + 1)]


def test_compacted_by_the_cli_it_loads_and_the_agent_goes_on(tmp_path: Path) -> None:
    """ENFORCE through ``tracetrim compact``: the file pydantic-ai loads back is shorter, its calls
    still answered, and a run continued from it sends the model a valid history."""
    path = tmp_path / "history.json"
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(_run(), indent=2))
    out = cli_compact(path, tmp_path / "archive")
    assert "read as pydantic-ai" in out.stderr
    written = json.loads(out.stdout)
    check_pydantic_ai(written)
    history = ModelMessagesTypeAdapter.validate_json(out.stdout)
    returned = [p for m in history for p in m.parts if p.part_kind == "tool-return"]
    assert sum(len(p.content) for p in returned) < READS * len(returned[0].content), "nothing was compacted"
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("done")])

    assert Agent(FunctionModel(model)).run_sync("go on", message_history=history).output == "done"
    check_pydantic_ai(json.loads(ModelMessagesTypeAdapter.dump_json(seen[0])))


def _two_turns() -> list[dict[str, Any]]:
    part = {"part_kind": "tool-call", "tool_name": "read_file", "id": None, "provider_name": None}
    return [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "go"}]},
        {
            "kind": "response",
            "model_name": "gemini-3-pro",
            "parts": [
                {"part_kind": "text", "content": "reading a"},
                {**part, "args": {"path": "a"}, "tool_call_id": "c1", "provider_details": None},
            ],
        },
        {
            "kind": "request",
            "instructions": "You fix bugs.",
            "parts": [
                {
                    "part_kind": "tool-return",
                    "tool_name": "read_file",
                    "tool_call_id": "c1",
                    "content": "A" * 900,
                },
                {"part_kind": "user-prompt", "content": "and b?"},
            ],
        },
        {
            "kind": "response",
            "model_name": "gemini-3-pro",
            "parts": [
                {"part_kind": "text", "content": "reading b"},
                {
                    **part,
                    "args": {"path": "b"},
                    "tool_call_id": "c2",
                    "provider_details": {"signature": "c2ln"},
                },
            ],
        },
        {
            "kind": "request",
            "parts": [
                {
                    "part_kind": "tool-return",
                    "tool_name": "read_file",
                    "tool_call_id": "c2",
                    "content": "B" * 900,
                }
            ],
        },
        {
            "kind": "response",
            "parts": [
                {"part_kind": "text", "content": "reading c"},
                {**part, "args": {}, "tool_call_id": "c3", "provider_details": {"signature": "c2ln"}},
            ],
        },
        {
            "kind": "request",
            "parts": [
                {"part_kind": "tool-return", "tool_name": "read_file", "tool_call_id": "c3", "content": "C"}
            ],
        },
    ]


def _without(messages: list[dict[str, Any]], gone: set[str]) -> list[dict[str, Any]]:
    """The neutral history with the pairs of ``gone`` removed, as a drop removes them."""
    out = []
    for message in copy.deepcopy(messages):
        message["content"] = [b for b in message["content"] if b.get("id") not in gone]
        if message["content"]:
            out.append(message)
    return out


def test_a_request_that_lost_its_tool_returns_keeps_its_own_fields() -> None:
    written = to_pydantic_ai_json(_without(from_pydantic_ai_json(_two_turns()), {"c1"}))
    check_pydantic_ai(written)
    asked = next(m for m in written if any(p.get("content") == "and b?" for p in m["parts"]))
    assert asked["instructions"] == "You fix bugs."
    assert [p["part_kind"] for p in asked["parts"]] == ["user-prompt"]


def test_responses_a_drop_made_neighbours_join_with_every_part_keeping_its_fields() -> None:
    written = to_pydantic_ai_json(_without(from_pydantic_ai_json(_two_turns()), {"c2"}))
    check_pydantic_ai(written)
    kinds = [m["kind"] for m in written]
    assert kinds == ["request", "response", "request", "response", "request"]
    joined = written[3]
    assert [p.get("content") or p.get("tool_call_id") for p in joined["parts"]] == [
        "reading b",
        "reading c",
        "c3",
    ]
    assert joined["parts"][1:] == _two_turns()[5]["parts"]  # each part as it was sent
    assert joined["model_name"] == "gemini-3-pro"  # the first turn's own fields
    # pairs that stood side by side when sent stay apart: nothing is joined in an unchanged history
    assert to_pydantic_ai_json(from_pydantic_ai_json(_two_turns())) == _two_turns()


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ([{"kind": "reply", "parts": []}], "message 0, field 'kind'"),
        ([{"kind": "request", "parts": {}}], "message 0, field 'parts'"),
        ([{"kind": "request", "parts": [{"content": "x"}]}], "message 0, block 0, field 'part_kind'"),
        (
            [{"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": "f", "args": {}}]}],
            "message 0, block 0, field 'tool_call_id'",
        ),
        (
            [
                {
                    "kind": "response",
                    "parts": [{"part_kind": "tool-call", "tool_name": "f", "tool_call_id": "c", "args": 3}],
                }
            ],
            "message 0, block 0, field 'args'",
        ),
        (["not a message"], "message 0"),
    ],
)
def test_bad_messages_name_their_place(messages: list[Any], where: str) -> None:
    with pytest.raises(SnapshotError) as caught:
        from_pydantic_ai_json(messages)
    assert where in str(caught.value)
