"""The Ollama chat format: id-less calls paired with results by order and tool name, written back as sent."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests._provider_rules import check_ollama
from tracetrim import SnapshotError
from tracetrim.formats import detect_format, from_ollama, to_ollama


def _history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Weather in Paris and Toronto?"},
        {
            "role": "assistant",
            "content": "",
            "thinking": "two cities: two calls",
            "tool_calls": [
                {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}},
                {"function": {"index": 1, "name": "get_time", "arguments": {"city": "Toronto"}}},
            ],
        },
        # answered out of order: tool_name says which call each answers
        {"role": "tool", "content": "10:42", "tool_name": "get_time"},
        {"role": "tool", "content": "22 degrees, sunny", "tool_name": "get_weather"},
        {"role": "assistant", "content": "Sunny in Paris; it is 10:42 in Toronto."},
    ]


def test_ollama_is_told_apart_from_openai_chat() -> None:
    assert detect_format(_history()) == "ollama"
    assert detect_format({"model": "qwen3", "messages": _history(), "options": {"num_ctx": 8192}}) == "ollama"
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "y"}]  # fmt: skip
    assert detect_format(chat) == "openai"
    # OpenAI chat requires an id on every tool message: a text tool message without one is Ollama's,
    # even where every call's arguments are a string (what a drop can leave of an Ollama history).
    bare = [*chat[:2], {"role": "tool", "content": "y"}]
    assert detect_format(bare) == "ollama"
    assert to_ollama(from_ollama(bare)) == bare
    # The AI SDK's tool messages hold parts, and name their calls inside them.
    parts = [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "f", "output": {"type": "text", "value": "y"}}
    ]
    assert detect_format([chat[0], {"role": "tool", "content": parts}]) == "ai-sdk"
    # A call kept as it was sent (no name, so never judged) still tells Ollama by its arguments object,
    # after a drop took every call that had a name and every tool message (found by benchmarks/fuzz.py).
    kept = [chat[0], {"role": "assistant", "tool_calls": [{"function": {"arguments": {"a": 1}}, "id": "c2"}]}]
    assert detect_format(kept) == "ollama"
    assert to_ollama(from_ollama(kept)) == kept
    # A call whose id is not a string is refused, as OpenAI chat refuses it (found by the fuzzer: once
    # a drop took the call that told Ollama, the file read back as OpenAI chat and was refused then).
    odd = [
        chat[0],
        {"role": "assistant", "tool_calls": [{"id": {}, "function": {"name": "f", "arguments": {}}}]},
    ]
    with pytest.raises(
        SnapshotError, match=r"message 1, field 'tool_calls': a tool call id must be a string"
    ):
        from_ollama(odd)


def test_results_pair_by_tool_name_and_ids_are_never_written() -> None:
    sent = _history()
    neutral = from_ollama(sent)
    assert sent == _history(), "the caller's messages were mutated"
    calls = {b["name"]: b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    results = {b["name"]: b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert calls == results and json.loads(
        next(b["input"] for m in neutral for b in m["content"] if b.get("name") == "get_weather")
    ) == {"city": "Paris"}
    assert to_ollama(neutral) == sent  # unchanged: exactly what was read, no invented id


def test_dropping_one_call_of_a_turn_drops_its_result_and_keeps_the_order() -> None:
    neutral = copy.deepcopy(from_ollama(_history()))
    gone = next(b["id"] for m in neutral for b in m["content"] if b.get("name") == "get_weather")
    for message in neutral:
        message["content"] = [b for b in message["content"] if b.get("id") != gone]
    written = to_ollama([m for m in neutral if m["content"]])
    check_ollama(written)
    assert [c["function"]["name"] for c in written[1]["tool_calls"]] == ["get_time"]
    assert written[1]["thinking"] == "two cities: two calls"
    assert [m.get("tool_name") for m in written if m["role"] == "tool"] == ["get_time"]


def test_a_call_id_the_server_gave_is_kept_and_a_stray_result_is_carried() -> None:
    sent = [
        {"role": "user", "content": "go"},
        {"role": "tool", "content": "left over from before", "tool_name": "ls"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_7", "function": {"name": "ls", "arguments": {}}}],
        },
        {"role": "tool", "content": "a.py", "tool_name": "ls"},
    ]
    neutral = from_ollama(sent)
    assert [b["type"] for b in neutral[1]["content"]] == ["raw"]  # answers nothing: never judged
    assert neutral[3]["content"][0] == {
        "type": "tool_result", "id": "call_7", "name": "ls", "output": "a.py", "state": "success"
    }  # fmt: skip
    assert to_ollama(neutral) == sent
