"""Round-trip, real-data and error tests for the format converters in `tracetrim.formats`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import DATA, require_data
from tracetrim import formats
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.formats._swe_agent import load_swe_agent_traj

# --- a strategy for valid neutral histories ---------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_inputs = st.dictionaries(_text, _json_value, max_size=3).map(lambda d: json.dumps(d, ensure_ascii=False))
_names = st.sampled_from(["read_file", "search_code", "run_tests", "list_dir"])
_marker = st.builds(
    lambda ref, chars: {"action": "drop_result", "archive_ref": ref, "original_chars": chars},
    st.sampled_from(["", "0" * 64, "ab" * 32]),
    st.integers(0, 10**6),
)
# A tool_result's metadata: absent, empty, tracetrim's shortened-result marker, other keys, or both.
_result_metadata = st.none() | st.builds(
    lambda marker, other: ({"tracetrim": marker} if marker is not None else {}) | other,
    st.none() | _marker,
    st.dictionaries(_text.filter(lambda k: k != "tracetrim"), _json_value, max_size=2),
)


@st.composite
def neutral_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Histories an agent writes: system?, user, then assistant steps with calls and their results."""
    messages: list[dict[str, Any]] = []
    counter = iter(range(10_000))
    if draw(st.booleans()):
        messages.append({"id": "m-sys", "role": "system", "content": [{"type": "text", "text": draw(_text)}]})
    for _ in range(draw(st.integers(1, 3))):
        messages.append(
            {"id": f"m{next(counter)}", "role": "user", "content": [{"type": "text", "text": draw(_text)}]}
        )
        for _ in range(draw(st.integers(0, 3))):
            content: list[dict[str, Any]] = []
            if draw(st.booleans()):
                content.append({"type": "thinking", "thinking": draw(_text)})
            if draw(st.booleans()):
                content.append({"type": "text", "text": draw(_text)})
            results = []
            for _ in range(draw(st.integers(0, 2))):
                call_id = f"call_{next(counter)}"
                name = draw(_names)
                content.append(
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": name,
                        "input": draw(_inputs),
                        "state": "finished",
                    }
                )
                result = {
                    "type": "tool_result",
                    "id": call_id,
                    "name": name,
                    "output": draw(st.text(max_size=30)),
                    "state": draw(st.sampled_from(["success", "error"])),
                }
                metadata = draw(_result_metadata)
                if metadata is not None:
                    result["metadata"] = metadata
                results.append(result)
            separate = bool(results) and draw(st.booleans())
            if not separate:
                content.extend(results)
            if content:
                messages.append({"id": f"m{next(counter)}", "role": "assistant", "content": content})
            if separate:
                messages.append({"id": f"m{next(counter)}", "role": "assistant", "content": results})
        if draw(st.booleans()):
            messages.append(
                {
                    "id": f"m{next(counter)}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": draw(_text)}],
                }
            )
    return messages


def project(messages: list[dict[str, Any]], *, thinking: bool, error_flag: bool) -> list[tuple[Any, ...]]:
    """What a format must keep: text by role, thinking, calls and results in order."""
    events: list[tuple[Any, ...]] = []
    for message in messages:
        for block in message["content"]:
            kind = block["type"]
            if kind == "text":
                events.append(("text", message["role"], block["text"]))
            elif kind == "thinking" and thinking:
                events.append(("thinking", block["thinking"]))
            elif kind == "tool_call":
                events.append(("call", block["id"], block["name"], json.loads(block["input"])))
            elif kind == "tool_result":
                state = block["state"] if error_flag else "success"
                events.append(("result", block["id"], block["name"], block["output"], state))
    return events


def result_metadata(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each tool result's id and block ``metadata`` (None when absent), in order."""
    return [
        (block["id"], block.get("metadata"))
        for message in messages
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


def _anthropic_from(x: dict[str, Any]) -> list[dict[str, Any]]:
    return formats.from_anthropic(x["messages"], system=x.get("system"))


FORMATS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], list[dict[str, Any]]], bool, bool]] = {
    # name: (to, from, carries thinking, carries an error flag)
    "openai_chat": (formats.to_openai_chat, formats.from_openai_chat, False, False),
    "openai_responses": (formats.to_openai_responses, formats.from_openai_responses, True, False),
    "anthropic": (formats.to_anthropic, _anthropic_from, True, True),
    "langchain": (formats.to_langchain, formats.from_langchain, True, True),
    "pydantic_ai": (formats.to_pydantic_ai, formats.from_pydantic_ai, True, True),
}
# Formats with a place for a tool result's metadata that is never sent to a model. OpenAI chat, OpenAI
# Responses and Anthropic have none (an extra key would be sent and rejected), so the adapters re-derive
# tracetrim's marker from the result text there (`tracetrim.harness_adapter.restore_markers`).
CARRIES_RESULT_METADATA = frozenset({"langchain", "pydantic_ai"})

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(FORMATS))
@_SETTINGS
@given(history=neutral_histories())
def test_neutral_round_trip_keeps_what_the_format_carries(name: str, history: list[dict[str, Any]]) -> None:
    to, back, thinking, error_flag = FORMATS[name]
    before = copy.deepcopy(history)
    converted = to(history)
    assert history == before, "the caller's messages were mutated"
    again = back(converted)
    validate_messages(again)
    assert project(again, thinking=thinking, error_flag=error_flag) == project(
        history, thinking=thinking, error_flag=error_flag
    )
    if name in CARRIES_RESULT_METADATA:
        assert result_metadata(again) == result_metadata(history)
    else:
        assert all(metadata is None for _, metadata in result_metadata(again))


@pytest.mark.parametrize("name", sorted(FORMATS))
@_SETTINGS
@given(history=neutral_histories())
def test_format_round_trip_is_identity(name: str, history: list[dict[str, Any]]) -> None:
    to, back, _, _ = FORMATS[name]
    native = to(history)
    snapshot = copy.deepcopy(native) if name not in ("langchain", "pydantic_ai") else None
    neutral = back(native)
    if snapshot is not None:
        assert native == snapshot, "the caller's messages were mutated"
    assert to(neutral) == native
    # A second pass gives the same neutral form: invented ids are deterministic.
    assert back(to(neutral)) == neutral


# --- fixed examples of each format, with fields the neutral form lacks ------------------------------


def test_openai_chat_example() -> None:
    chat = [
        {"role": "developer", "content": "be brief"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:x"}},
            ],
            "name": "ann",
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
            "refusal": None,
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}
            ],
        },
    ]
    neutral = formats.from_openai_chat(chat)
    validate_messages(neutral)
    assert [m["role"] for m in neutral] == ["system", "user", "assistant", "assistant", "assistant"]
    assert neutral[3]["content"][0] == {
        "type": "tool_result",
        "id": "c1",
        "name": "f",
        "output": [{"type": "text", "text": "out"}],
        "state": "success",
    }
    assert neutral[4]["content"][0]["state"] == "pending"  # no result yet
    assert formats.to_openai_chat(neutral) == chat


def test_openai_chat_splits_calls_and_results_in_one_message() -> None:
    neutral = [
        {
            "id": "m1",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm"},
                {"type": "text", "text": "reading"},
                {"type": "tool_call", "id": "c1", "name": "read_file", "input": "{}", "state": "finished"},
                {"type": "tool_result", "id": "c1", "name": "read_file", "output": "x", "state": "success"},
                {"type": "text", "text": "done"},
            ],
        }
    ]
    assert formats.to_openai_chat(neutral) == [
        {
            "role": "assistant",
            "content": "reading",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "assistant", "content": "done"},
    ]


def test_openai_responses_keeps_reasoning_in_front_of_its_call() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "think"}],
            "encrypted_content": "enc",
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "c1",
            "name": "f",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "res"},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "done", "annotations": []}],
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    neutral = formats.from_openai_responses(items)
    validate_messages(neutral)
    assert neutral[1]["id"] == "fc_1"
    assert [b["type"] for b in neutral[1]["content"]] == ["thinking", "tool_call"]
    assert formats.to_openai_responses(neutral) == items


def test_anthropic_example() -> None:
    system = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    request: dict[str, Any] = {
        "system": system,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "xyz"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": [1, 2]}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
                    {"type": "text", "text": "and also"},
                ],
            },
        ],
    }
    neutral = formats.from_anthropic(request["messages"], system=request["system"])
    validate_messages(neutral)
    result = neutral[3]["content"][0]
    assert (neutral[3]["role"], result["name"], result["state"]) == ("assistant", "f", "error")
    assert neutral[2]["content"][1] == {"type": "thinking", "thinking": "", "redacted_thinking_data": "xyz"}
    assert formats.to_anthropic(neutral) == request


def test_anthropic_rejects_a_late_system_message() -> None:
    neutral = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "system", "content": [{"type": "text", "text": "late"}]},
    ]
    with pytest.raises(SnapshotError, match="message 1") as info:
        formats.to_anthropic(neutral)
    assert info.value.field == "role"


def test_langchain_example_keeps_ids_and_fields() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = [
        SystemMessage("sys", id="s1"),
        HumanMessage("hi", id="h1"),
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "hm", "signature": "x"},
                {"type": "text", "text": "ok"},
            ],
            tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}, {"name": "g", "args": {}, "id": None}],
            id="a1",
            response_metadata={"model_name": "m"},
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage("res", tool_call_id="c1", id="t1"),
        ToolMessage("bad", tool_call_id="c9", status="error", name="g", artifact={"k": 1}),
        AIMessage("done"),
    ]
    neutral = formats.from_langchain(messages)
    validate_messages(neutral)
    assert [m["id"] for m in neutral[:4]] == ["s1", "h1", "a1", "t1"]
    assert neutral[4]["content"][0]["state"] == "error"
    assert formats.to_langchain(neutral) == messages


def test_pydantic_ai_example() -> None:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    messages = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart("hi")]),
        ModelResponse(
            parts=[
                ThinkingPart("hm", signature="s"),
                TextPart("ok"),
                ToolCallPart("f", {"a": 1}, "c1"),
                ToolCallPart("g", '{"b": 2}', "c2"),
            ],
            model_name="m",
        ),
        ModelRequest(
            parts=[ToolReturnPart("f", {"x": 1}, "c1"), ToolReturnPart("g", "boom", "c2", outcome="failed")]
        ),
        ModelResponse(parts=[TextPart("done")]),
    ]
    neutral = formats.from_pydantic_ai(messages)
    validate_messages(neutral)
    assert [m["role"] for m in neutral] == ["system", "user", "assistant", "assistant", "assistant"]
    assert [b["state"] for b in neutral[3]["content"]] == ["success", "error"]
    assert neutral[2]["content"][3]["input"] == '{"b": 2}'
    assert formats.to_pydantic_ai(neutral) == messages


_SHORTENED = {"tracetrim": {"action": "drop_result", "archive_ref": "ab" * 32, "original_chars": 4000}}


def _shortened_history() -> list[dict[str, Any]]:
    return [
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "read it"}]},
        {
            "id": "a1",
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "c1", "name": "read_file", "input": "{}", "state": "finished"}
            ],
        },
        {
            "id": "t1",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_result",
                    "id": "c1",
                    "name": "read_file",
                    "output": "head [tracetrim: ...]",
                    "state": "success",
                    "metadata": {**_SHORTENED, "source": "disk"},
                }
            ],
        },
    ]


def test_langchain_tool_message_keeps_result_metadata_through_a_checkpoint() -> None:
    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    history = _shortened_history()
    messages = formats.to_langchain(history)
    tool = messages[-1]
    assert isinstance(tool, ToolMessage)
    assert tool.response_metadata == {"tracetrim.block_metadata": {**_SHORTENED, "source": "disk"}}
    serde = JsonPlusSerializer()
    stored = [serde.loads_typed(serde.dumps_typed(m)) for m in messages]
    assert stored == messages
    assert formats.from_langchain(stored)[-1] == formats.from_langchain(messages)[-1]
    assert (
        formats.from_langchain(stored)[-1]["content"][0]["metadata"] == history[-1]["content"][0]["metadata"]
    )
    # The host's own response_metadata stays beside it, and neither leaks into the other.
    native = ToolMessage(
        "x", tool_call_id="c1", id="t2", response_metadata={"k": 1, "tracetrim.block_metadata": _SHORTENED}
    )
    neutral = formats.from_langchain([native])
    assert neutral[0]["content"][0]["metadata"] == _SHORTENED
    assert neutral[0]["metadata"]["tracetrim.langchain"]["extra"] == {"response_metadata": {"k": 1}}
    assert formats.to_langchain(neutral) == [native]


def test_pydantic_ai_tool_return_keeps_result_metadata() -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, ToolReturnPart

    history = _shortened_history()
    messages = formats.to_pydantic_ai(history)
    request = messages[-1]
    assert isinstance(request, ModelRequest) and isinstance(request.parts[0], ToolReturnPart)
    assert request.parts[0].metadata == {**_SHORTENED, "source": "disk"}
    stored = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))
    assert (
        formats.from_pydantic_ai(stored)[-1]["content"][0]["metadata"]
        == history[-1]["content"][0]["metadata"]
    )
    # Metadata that is not an object stays the part's own field.
    odd = ModelRequest(parts=[ToolReturnPart("f", "x", "c9", metadata=["not", "an", "object"])])
    neutral = formats.from_pydantic_ai([odd])
    assert "metadata" not in neutral[0]["content"][0]
    assert formats.to_pydantic_ai(neutral) == [odd]


def test_formats_without_a_place_for_result_metadata_drop_it() -> None:
    history = _shortened_history()
    chat = formats.to_openai_chat(history)
    items = formats.to_openai_responses(history)
    assert chat[-1] == {"role": "tool", "tool_call_id": "c1", "content": "head [tracetrim: ...]"}
    assert items[-1] == {"type": "function_call_output", "call_id": "c1", "output": "head [tracetrim: ...]"}


# --- real data -------------------------------------------------------------------------------------


@pytest.mark.data
def test_tau_bench_trajectories_round_trip_identically() -> None:
    path = require_data(DATA / "tau-bench" / "gpt-4o-airline.json")
    with open(path, encoding="utf-8") as handle:
        tasks = json.load(handle)
    pairs = 0
    for task in tasks[:40]:
        traj = task["traj"]
        neutral = formats.from_openai_chat(traj)
        validate_messages(neutral)
        pairs += sum(b["type"] == "tool_result" for m in neutral for b in m["content"])
        assert formats.to_openai_chat(neutral) == traj
    assert pairs > 100


@pytest.mark.data
def test_swe_agent_histories_convert() -> None:
    paths = sorted((DATA / "swe-agent").glob("*.traj"))
    if not paths:
        require_data(DATA / "swe-agent" / "function_calling_simple.traj")
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            history = json.load(handle)["history"]
        neutral = formats.from_swe_agent_history(history)
        validate_messages(neutral)
        calls = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
        results = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"}
        assert results and results <= calls, path.name
    function_calling = [p for p in paths if "function_calling" in p.name]
    assert function_calling
    history = json.loads(function_calling[0].read_text(encoding="utf-8"))["history"]
    # The function-calling variant is OpenAI chat plus SWE-agent keys and `tool_call_ids`.
    chat = [
        {k: v for k, v in m.items() if k in ("role", "content", "tool_calls")}
        | ({"tool_call_id": m["tool_call_ids"][0]} if m["role"] == "tool" else {})
        for m in history
    ]
    assert formats.to_openai_chat(formats.from_openai_chat(chat)) == chat


def test_load_swe_agent_traj_reads_the_history_of_a_file(tmp_path: Path) -> None:
    history = [
        {"role": "system", "content": "you are an agent"},
        {"role": "assistant", "content": "look\n```\nls -a\n```", "thought": "look", "action": "ls -a\n"},
        {"role": "user", "content": "README.md"},
    ]
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"history": history, "trajectory": []}), encoding="utf-8")
    assert load_swe_agent_traj(path) == formats.from_swe_agent_history(history)
    assert load_swe_agent_traj(str(path), synthesize_calls=False) == formats.from_swe_agent_history(
        history, synthesize_calls=False
    )
    path.write_text(json.dumps({"trajectory": []}), encoding="utf-8")
    with pytest.raises(SnapshotError, match="history"):
        load_swe_agent_traj(path)


# --- errors and isolation --------------------------------------------------------------------------


def test_errors_name_message_block_and_field() -> None:
    bad_input = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "x"},
                {"type": "tool_call", "id": "c1", "name": "f", "input": "[1]", "state": "finished"},
            ],
        }
    ]
    with pytest.raises(SnapshotError) as info:
        formats.to_anthropic(bad_input)
    assert (info.value.message_index, info.value.block_index, info.value.field) == (0, 1, "input")
    with pytest.raises(SnapshotError, match="message 1") as info:
        formats.from_openai_chat([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}])
    assert info.value.field == "tool_call_id"
    with pytest.raises(SnapshotError) as info:
        formats.to_openai_chat([{"role": "user", "content": [{"type": "data", "source": {}}]}])
    assert (info.value.message_index, info.value.block_index, info.value.field) == (0, 0, "type")
    with pytest.raises(SnapshotError):
        formats.from_langchain([{"role": "user"}])
    with pytest.raises(SnapshotError):
        formats.to_openai_responses(
            [{"role": "user", "content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{}"}]}]
        )


def test_importing_formats_does_not_import_the_frameworks() -> None:
    code = (
        "import sys, tracetrim, tracetrim.formats; "
        "assert 'langchain_core' not in sys.modules and 'pydantic_ai' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
