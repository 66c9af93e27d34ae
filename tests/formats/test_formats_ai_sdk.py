"""Vercel AI SDK messages (v5 ``ModelMessage`` and v4 ``CoreMessage``): read and written back exactly,
calls paired by ``toolCallId``, result outputs as text, and bad input named."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tracetrim._snapshot import SnapshotError
from tracetrim.formats import HISTORY_FORMATS, detect_format, from_ai_sdk, to_ai_sdk

_LONG = "src/parser.py:1: def parse(tokens):\n" * 120


def _v5() -> list[dict[str, Any]]:
    """What ``generateText`` returns as ``response.messages`` in v5, with a system prompt before it."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "Fix the parser."}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "reasoning",
                    "text": "Read first.",
                    "providerOptions": {"anthropic": {"signature": "c2ln"}},
                },
                {"type": "text", "text": "Reading the parser."},
                {
                    "type": "tool-call",
                    "toolCallId": "call_1",
                    "toolName": "readFile",
                    "input": {"path": "parser.py"},
                },
                {"type": "tool-call", "toolCallId": "call_2", "toolName": "grep", "input": {"q": "parse"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_1",
                    "toolName": "readFile",
                    "output": {"type": "text", "value": _LONG},
                },
                {
                    "type": "tool-result",
                    "toolCallId": "call_2",
                    "toolName": "grep",
                    "output": {"type": "json", "value": {"hits": ["parser.py:3"] * 40}},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "call_3", "toolName": "runTests", "input": {}}],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_3",
                    "toolName": "runTests",
                    "output": {"type": "error-text", "value": "1 failed"},
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed the off-by-one."}]},
    ]


def _v4() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "list the repo"},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "ls", "args": {}}],
        },
        {
            "role": "tool",
            "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "ls", "result": _LONG}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "t2", "toolName": "ls", "args": {"d": 1}}],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "t2",
                    "toolName": "ls",
                    "result": {"n": 3},
                    "isError": False,
                }
            ],
        },
        {"role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize("messages", [_v5(), _v4()], ids=["v5", "v4"])
def test_messages_are_told_by_shape_and_written_back_exactly(messages: list[dict[str, Any]]) -> None:
    sent = copy.deepcopy(messages)
    assert detect_format(messages) == "ai-sdk"
    assert detect_format({"messages": messages}) == "ai-sdk"
    written = HISTORY_FORMATS["ai-sdk"].write_messages(from_ai_sdk(messages))
    assert json.dumps(written) == json.dumps(messages)  # values and key order
    assert messages == sent


def test_a_tool_message_of_no_parts_is_still_told_as_the_ai_sdks() -> None:
    """A tool message whose content is a list and that has no ``tool_call_id`` is the AI SDK's (OpenAI
    chat puts an id on every tool message): told so even when a drop left it, and the file, no part of
    the SDK's own (found by ``benchmarks/fuzz.py --formats --seed 7008``)."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "[tracetrim: dropped read call c1]"}]},
        {"role": "tool", "content": []},
    ]
    assert detect_format(messages) == "ai-sdk"
    assert HISTORY_FORMATS["ai-sdk"].write_messages(from_ai_sdk(messages)) == messages
    assert detect_format([messages[0], {"role": "tool", "tool_call_id": "c1", "content": []}]) == "openai"


def test_results_read_as_text_and_pair_by_call_id() -> None:
    neutral = from_ai_sdk(_v5())
    results = {b["id"]: b for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert results["call_1"]["output"] == _LONG and results["call_1"]["state"] == "success"
    assert json.loads(results["call_2"]["output"]) == {"hits": ["parser.py:3"] * 40}
    assert results["call_3"]["state"] == "error"
    assert any(b["type"] == "thinking" for m in neutral for b in m["content"])


def test_a_shortened_result_is_written_as_text_output() -> None:
    for version, messages in (("v5", _v5()), ("v4", _v4())):
        neutral = from_ai_sdk(messages)
        block = next(b for m in neutral for b in m["content"] if b["type"] == "tool_result")
        block["output"] = "src/parser.py:1: def parse(tokens):\n[tracetrim: shortened]"
        written = to_ai_sdk(neutral)["messages"]
        part = next(p for m in written if m["role"] == "tool" for p in m["content"])
        if version == "v5":
            assert part["output"] == {"type": "text", "value": block["output"]}
        else:
            assert part["result"] == block["output"]


def test_a_removal_that_brings_two_assistant_turns_together_joins_them() -> None:
    neutral = from_ai_sdk(_v5())
    tool = next(
        m for m in neutral if any(b["type"] == "tool_result" and b["id"] == "call_3" for b in m["content"])
    )
    call = next(
        m for m in neutral if any(b["type"] == "tool_call" and b["id"] == "call_3" for b in m["content"])
    )
    call["content"] = [{"type": "text", "text": "[tracetrim: runTests call_3 was removed]"}]
    written = to_ai_sdk([m for m in neutral if m is not tool])["messages"]
    assert [m["role"] for m in written] == ["system", "user", "assistant", "tool", "assistant"]
    assert [p["text"] for p in written[-1]["content"]] == [
        "[tracetrim: runTests call_3 was removed]",
        "Fixed the off-by-one.",
    ]


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([{"role": "bot", "content": "x"}], r"message 0.*role must be one of"),
        ([{"role": "user", "content": 3}], r"message 0.*content must be text or a list"),
        (
            [{"role": "tool", "content": [{"type": "tool-result", "toolName": "x", "output": {}}]}],
            r"block 0.*toolCallId",
        ),
        (
            [{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "output": "x"}]}],
            r"block 0.*output",
        ),
        ([{"role": "assistant", "content": [7]}], r"message 0, block 0.*must be an object"),
    ],
)
def test_bad_messages_name_the_place(messages: list[Any], says: str) -> None:
    with pytest.raises(SnapshotError, match=says):
        from_ai_sdk(messages)


@pytest.mark.parametrize("both", [False, True], ids=["first", "both"])
def test_a_call_reasoning_led_to_among_others_keeps_its_place(both: bool) -> None:
    """A turn from an OpenAI Responses model: its reasoning and both calls carry their item ids, and
    OpenAI refuses the second call without the reasoning, and the reasoning without the first call. A
    drop of the first alone keeps it with a stub result; a drop of both takes the turn's reasoning too."""
    from tests._compact_plans import write_back

    openai = {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "ZW5j"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Read both."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "Both files.", "providerOptions": openai},
                *(
                    {
                        "type": "tool-call",
                        "toolCallId": f"c{n}",
                        "toolName": "readFile",
                        "input": {"path": f"{n}.py"},
                        "providerOptions": {"openai": {"itemId": f"fc_{n}"}},
                    }
                    for n in (1, 2)
                ),
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": f"c{n}",
                    "toolName": "readFile",
                    "output": {"type": "text", "value": _LONG},
                }
                for n in (1, 2)
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Both read."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks."}]},
    ]
    # the scripted judge takes the actions by pair key: t1 (c1) the second, t2 (c2) the first
    plan = {"actions": ["drop_call" if both else "keep", "drop_call"], "tombstones": False, "recent": 2}
    written = write_back("ai-sdk", {"messages": messages}, plan)["messages"]
    turn = written[1]["content"]
    if both:  # the turn went whole: the next assistant turn follows the user's
        assert [m["role"] for m in written] == ["user", "assistant", "user"]
        assert [p["type"] for p in turn] == ["text"]
        return
    assert [(p["type"], p.get("toolCallId")) for p in turn] == [
        ("reasoning", None),
        ("tool-call", "c1"),
        ("tool-call", "c2"),
    ]
    first, second = written[2]["content"]
    assert "recall it by call id" in first["output"]["value"] and second["output"]["value"] == _LONG
