"""Gemini ``contents``: read and written back exactly (REST camelCase and the SDK's snake_case), calls
paired by id or in order, and what a plan writes back valid for Gemini (``tests._provider_rules``)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google.genai import types

from tests import _provider_rules as rules
from tests._compact_plans import write_back
from tracetrim._snapshot import SnapshotError
from tracetrim.formats import HISTORY_FORMATS, detect_format, from_gemini, to_gemini

GEMINI = HISTORY_FORMATS["gemini"]


def _body() -> dict[str, Any]:
    """A REST request with what a Gemini 3 agent sends: thought parts, a signed first call of a parallel
    pair without ids, an id'd call with a structured response, an error, an image and code parts."""
    return {
        "model": "gemini-3-pro-preview",
        "contents": [
            {"role": "user", "parts": [{"text": "Fix the failing parser test."}]},
            {
                "role": "model",
                "parts": [
                    {"text": "I should read both files.", "thought": True},
                    {
                        "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
                        "thoughtSignature": "c2lnQQ==",
                    },
                    {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "A\n" * 300}}},
                    {"functionResponse": {"name": "read_file", "response": {"output": "B\n" * 200}}},
                ],
            },
            {
                "role": "model",
                "parts": [{"functionCall": {"id": "c9", "name": "grep", "args": {"q": "parse"}}}],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c9", "name": "grep", "response": {"hits": ["a.py:3"] * 80}}}
                ],
            },
            {"role": "model", "parts": [{"functionCall": {"name": "run_tests"}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "run_tests", "response": {"error": "timeout"}}}],
            },
            {
                "role": "model",
                "parts": [
                    {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                    {"text": "The parser drops the last token."},
                ],
            },
            {
                "role": "user",
                "parts": [{"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}],
            },
        ],
        "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
        "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "grep"}, {"name": "run_tests"}]}],
        "generationConfig": {"temperature": 0},
    }


def _read(body: dict[str, Any]) -> list[dict[str, Any]]:
    return GEMINI.read(body["contents"], {k: v for k, v in body.items() if k != "contents"})


def test_a_request_reads_and_writes_back_exactly_in_its_key_order() -> None:
    body = _body()
    sent = copy.deepcopy(body)
    assert detect_format(body) == "gemini"
    back = GEMINI.write_document(GEMINI.read(body["contents"], body))
    assert json.dumps(back) == json.dumps(body)  # same values and same key order
    assert body == sent


def test_calls_pair_by_id_or_in_order_and_results_read_as_text() -> None:
    neutral = _read(_body())
    blocks = [b for m in neutral for b in m["content"]]
    calls = [b for b in blocks if b["type"] == "tool_call"]
    results = {b["id"]: b for b in blocks if b["type"] == "tool_result"}
    assert [c["name"] for c in calls] == ["read_file", "read_file", "grep", "run_tests"]
    assert all(c["id"] in results for c in calls)
    first, second = (results[c["id"]]["output"] for c in calls[:2])
    assert (first, second) == ("A\n" * 300, "B\n" * 200)  # parallel calls answered in their order
    assert json.loads(results["c9"]["output"]) == {"hits": ["a.py:3"] * 80}
    assert results[calls[3]["id"]]["state"] == "error"
    system = next(m for m in neutral if m["role"] == "system" and m["content"])
    assert system["content"] == [{"type": "text", "text": "You are a coding agent."}]
    assert any(b["type"] == "thinking" for b in blocks)


def test_the_sdk_snake_case_form_round_trips_and_stays_an_sdk_content() -> None:
    contents = [
        types.Content(role="user", parts=[types.Part(text="list the repo")]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(name="ls", args={"path": "."}), thought_signature=b"sig"
                )
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(name="ls", response={"output": "x\n" * 400})
                )
            ],
        ),
        types.Content(role="model", parts=[types.Part(text="done")]),
    ]
    dumped = [c.model_dump(mode="json", exclude_none=True) for c in contents]
    assert detect_format(dumped) == "gemini"
    neutral = from_gemini(dumped)
    assert to_gemini(neutral)["messages"] == dumped
    neutral[2]["content"][0]["output"] = "x\n[shortened]"
    written = to_gemini(neutral)["messages"]
    assert written[2]["parts"][0]["function_response"]["response"] == {"output": "x\n[shortened]"}
    assert [types.Content.model_validate(c) for c in written][1].parts[0].thought_signature == b"sig"


def test_a_shortened_structured_response_is_written_under_output() -> None:
    neutral = _read(_body())
    grep = next(b for m in neutral for b in m["content"] if b["type"] == "tool_result" and b["id"] == "c9")
    grep["output"] = '{"hits": ["a.py:3", ... [tracetrim: shortened]'
    written = to_gemini(neutral)["messages"]
    assert written[4]["parts"][0]["functionResponse"] == {
        "name": "grep",
        "response": {"output": grep["output"]},
        "id": "c9",
    }


def test_dropping_a_signed_call_keeps_the_turn_signed_and_the_turns_alternating() -> None:
    body = _body()
    plan = {"actions": ["keep", "drop_call", "keep", "keep"], "tombstones": False, "recent": 1}
    written = write_back("gemini", body, plan)
    rules.check_gemini(written, body)
    turn = next(c for c in written["contents"] if any("functionCall" in p for p in c["parts"]))
    assert turn["parts"][1]["functionCall"]["args"] == {"path": "b.py"}
    assert turn["parts"][1]["thoughtSignature"] == "c2lnQQ=="  # moved from the dropped first call


def test_a_turn_emptied_by_a_drop_joins_its_neighbours() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "x" * 900}}}]},
        {"role": "model", "parts": [{"text": "next"}]},
        {"role": "user", "parts": [{"text": "and?"}]},
    ]
    neutral = from_gemini(contents)
    kept = [m for m in neutral if not any(b["type"] in ("tool_call", "tool_result") for b in m["content"])]
    written = to_gemini(kept)["messages"]
    assert written == [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "next"}]},
        {"role": "user", "parts": [{"text": "and?"}]},
    ]
    kept = [m for m in neutral if m is not neutral[3]]  # the model turn between two user turns goes
    assert [c["role"] for c in to_gemini(kept)["messages"]] == ["user", "model", "user"]
    # two user turns sent side by side stay as sent
    assert to_gemini(from_gemini(contents[3:] + contents[4:]))["messages"] == contents[3:] + contents[4:]


@pytest.mark.parametrize(
    ("contents", "says"),
    [
        ([{"role": "assistant", "parts": [{"text": "x"}]}], r"message 0.*role.*'user' or 'model'"),
        ([{"role": "user", "parts": "x"}], r"message 0.*parts must be a list"),
        ([{"role": "model", "parts": [{"functionCall": {"args": {}}}]}], r"message 0, block 0.*name"),
        ([{"role": "model", "parts": [{"functionCall": {"name": "f", "args": [1]}}]}], r"block 0.*args"),
        (
            [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "x"}}]}],
            r"block 0.*response",
        ),
        (["text"], r"message 0.*a content must be an object"),
    ],
)
def test_bad_contents_name_the_place(contents: list[Any], says: str) -> None:
    with pytest.raises(SnapshotError, match=says):
        from_gemini(contents)


def test_pydantic_ai_messages_are_not_taken_for_gemini() -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart

    dumped = ModelMessagesTypeAdapter.dump_python([ModelRequest(parts=[UserPromptPart("hi")])], mode="json")
    assert detect_format(dumped) != "gemini"
