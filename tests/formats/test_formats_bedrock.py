"""The Bedrock Converse converter: exact round trips, bad input named, and compacted histories that keep
Bedrock's documented rules (alternating turns, no empty content, one key a block, toolUse answered in the
next turn, cache points on their own block) and pass botocore's own parameter validation."""

from __future__ import annotations

import copy
from typing import Any

import botocore.session
import botocore.validate
import pytest
from hypothesis import given

from tests import _provider_histories as histories
from tests import _provider_rules as rules
from tests._compact_plans import SETTINGS, compact, plans
from tracetrim._snapshot import SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._bedrock import from_bedrock, is_bedrock_block, to_bedrock

CACHE = {"cachePoint": {"type": "default"}}
SYSTEM = [{"text": "You are a coding agent working in a git checkout."}, CACHE]
# A Strands Agents history as it sends it: parallel calls, reasoning with a signature, a JSON result, an
# error status, an image, cache points after a toolResult and after a text.
MESSAGES: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"text": "The parser test fails; here is the screenshot."},
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Read it, run the tests.", "signature": "c2ln"}}},
            {"text": "Let me look at the parser and run its tests."},
            {"toolUse": {"toolUseId": "tooluse_a1", "name": "read_file", "input": {"path": "src/parser.py"}}},
            {"toolUse": {"toolUseId": "tooluse_b2", "name": "run_tests", "input": {"k": "parser", "n": 2}}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_a1",
                    "content": [{"text": "def parse(tokens):\n    return tokens[:-1]\n"}],
                    "status": "success",
                }
            },
            {
                "toolResult": {
                    "toolUseId": "tooluse_b2",
                    "content": [{"json": {"passed": 41, "failed": 1}}, {"text": "test_parse_all FAILED"}],
                    "status": "error",
                }
            },
            CACHE,
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"text": "The slice drops the last token."},
            CACHE,
            {
                "toolUse": {
                    "toolUseId": "tooluse_c3",
                    "name": "edit_file",
                    "input": {"path": "src/parser.py", "old": "[:-1]", "new": ""},
                }
            },
        ],
    },
    {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_c3", "content": [{"text": "ok"}]}}]},
    {"role": "assistant", "content": [{"text": "Fixed: parse keeps every token now."}]},
    {"role": "user", "content": [{"text": "Thanks. Run the whole suite."}]},
]


def test_a_strands_history_round_trips_exactly() -> None:
    sent = copy.deepcopy((SYSTEM, MESSAGES))
    neutral = from_bedrock(MESSAGES, system=SYSTEM)
    assert sent == (SYSTEM, MESSAGES), "the caller's objects were mutated"
    assert to_bedrock(neutral) == {"system": SYSTEM, "messages": MESSAGES}
    assert to_bedrock(from_bedrock(MESSAGES)) == {"messages": MESSAGES}


def test_the_neutral_form() -> None:
    neutral = from_bedrock(MESSAGES, system=SYSTEM)
    system, task, calls, results = neutral[:4]
    assert system["role"] == "system" and system["content"][0]["text"].startswith("You are")
    assert task["content"][1] == {"type": "raw", "format": "bedrock", "value": MESSAGES[0]["content"][1]}
    assert calls["content"][0] == {
        "type": "thinking",
        "thinking": "Read it, run the tests.",
        "signature": "c2ln",
    }
    assert calls["content"][2]["input"] == '{"path": "src/parser.py"}'
    assert results["role"] == "assistant"
    assert common.format_meta(results, "bedrock") == {"at": 2, "role": "user"}
    first, second = results["content"]
    assert first["name"] == "read_file" and first["state"] == "success"
    assert second["name"] == "run_tests" and second["state"] == "error"
    assert second["output"][0]["type"] == "raw" and second["output"][1]["type"] == "text"
    assert second["tracetrim.bedrock"] == {
        "fields": {"status": "error"},
        "cachePoints": [{"type": "default"}],
    }
    assert neutral[4]["content"][0]["tracetrim.bedrock"] == {"cachePoints": [{"type": "default"}]}


def test_states_and_neutral_histories_write_bedrock_shapes() -> None:
    neutral = from_bedrock(MESSAGES)
    neutral[2]["content"][0]["state"] = "denied"
    neutral[2]["content"][1]["state"] = "success"
    written = to_bedrock(neutral)["messages"][2]["content"]
    assert written[0]["toolResult"]["status"] == "error"
    assert "status" not in written[1]["toolResult"]
    # AgentScope keeps a call and its result in one assistant message: Bedrock needs them in two turns
    mixed = [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "id": "a",
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "c1", "name": "ls", "input": "{}", "state": "finished"},
                {"type": "tool_result", "id": "c1", "name": "ls", "output": "a.py", "state": "success"},
                {"type": "text", "text": "done"},
            ],
        },
    ]
    assert to_bedrock(mixed)["messages"] == [
        {"role": "user", "content": [{"text": "go"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "c1", "name": "ls", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "c1", "content": [{"text": "a.py"}]}}]},
        {"role": "assistant", "content": [{"text": "done"}]},
    ]


@pytest.mark.parametrize(
    ("messages", "where", "match"),
    [
        ([{"role": "user", "content": [{"text": "a", "image": {}}]}], (0, 0, None), "exactly one key"),
        ([{"role": "user", "content": [{"type": "text", "text": "a"}]}], (0, 0, None), "exactly one key"),
        (
            [
                {"role": "user", "content": [{"text": "go"}]},
                {"role": "assistant", "content": [{"toolUse": {"name": "ls", "input": {}}}]},
            ],
            (1, 0, "toolUseId"),
            "toolUseId",
        ),
        ([{"role": "user", "content": "hello"}], (0, None, "content"), "list"),
        ([{"role": "system", "content": [{"text": "a"}]}], (0, None, "role"), "role"),
        (
            [{"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": "x"}}]}],
            (0, 0, "content"),
            "content",
        ),
    ],
)
def test_bad_input_is_named(messages: list[Any], where: tuple[Any, ...], match: str) -> None:
    with pytest.raises(SnapshotError, match=match) as info:
        from_bedrock(messages)
    assert (info.value.message_index, info.value.block_index, info.value.field) == where


def test_a_bad_system_block_is_named() -> None:
    with pytest.raises(SnapshotError, match="exactly one key") as info:
        from_bedrock([], system=[{"text": "a", "cachePoint": {"type": "default"}}])
    assert (info.value.block_index, info.value.field) == (0, "system")


def test_is_bedrock_block() -> None:
    assert is_bedrock_block({"text": "a"}) and is_bedrock_block(CACHE)
    assert is_bedrock_block({"toolResult": {"toolUseId": "t", "content": []}})
    assert not is_bedrock_block({"type": "text", "text": "a"})
    assert not is_bedrock_block({"text": "a", "cachePoint": {}})
    assert not is_bedrock_block({"functionCall": {}}) and not is_bedrock_block("text")


def _emptied() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": "list the files"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "a.py"}]}}, {"text": "and?"}],
        },
        {"role": "assistant", "content": [{"text": "a.py is there"}]},
    ]


def test_a_drop_that_empties_a_turn_joins_its_neighbours() -> None:
    neutral = from_bedrock(_emptied())
    for message in neutral:  # what a dropped pair leaves without tombstones
        message["content"] = [b for b in message["content"] if b["type"] not in ("tool_call", "tool_result")]
    written = to_bedrock(neutral)["messages"]
    assert written == [
        {"role": "user", "content": [{"text": "list the files"}, {"text": "and?"}]},
        {"role": "assistant", "content": [{"text": "a.py is there"}]},
    ]
    rules.check_bedrock(written, _emptied())


def test_turns_of_one_role_sent_side_by_side_stay_as_sent() -> None:
    sent = [
        {"role": "user", "content": [{"text": "one"}]},
        {"role": "user", "content": [{"text": "two"}]},
        {"role": "assistant", "content": [{"text": "three"}]},
    ]
    assert to_bedrock(from_bedrock(sent)) == {"messages": sent}


def test_a_cache_point_goes_with_its_block() -> None:
    sent = [
        {"role": "user", "content": [CACHE, {"text": "go"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}, CACHE, CACHE],
        },
        {"role": "user", "content": [CACHE, {"toolResult": {"toolUseId": "t1", "content": []}}, CACHE]},
        {"role": "assistant", "content": [{"text": "ok"}]},
        {"role": "user", "content": [{"text": "next"}]},
    ]
    neutral = from_bedrock(sent)
    assert to_bedrock(neutral) == {"messages": sent}
    for message in neutral:
        message["content"] = [b for b in message["content"] if b["type"] not in ("tool_call", "tool_result")]
    # the leading breakpoint of the emptied turn would follow "ok" once joined: it goes with its turn
    assert to_bedrock(neutral)["messages"] == [
        {"role": "user", "content": [CACHE, {"text": "go"}]},
        {"role": "assistant", "content": [{"text": "ok"}]},
        {"role": "user", "content": [{"text": "next"}]},
    ]


# --- provider-valid Converse histories, compacted ---------------------------------------------------


def _botocore_errors(request: dict[str, Any]) -> str:
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    report = botocore.validate.ParamValidator().validate({"modelId": "m", **request}, shape)
    return str(report.generate_report()) if report.has_errors() else ""


def _compacted(request: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    sent = copy.deepcopy(request)
    written = to_bedrock(compact(from_bedrock(request["messages"], system=request.get("system")), plan))
    assert request == sent, "the caller's request was mutated"
    return written


@SETTINGS
@given(request=histories.bedrock_requests(), plan=plans)
def test_compacted_histories_keep_bedrocks_rules(request: dict[str, Any], plan: dict[str, Any]) -> None:
    rules.check_bedrock(request["messages"], request["messages"])  # the generator's own histories are valid
    written = _compacted(request, plan)
    rules.check_bedrock(written["messages"], request["messages"])
    assert written.get("system") == request.get("system")


@SETTINGS
@given(request=histories.bedrock_requests(), plan=plans)
def test_compacted_requests_pass_botocores_validator(request: dict[str, Any], plan: dict[str, Any]) -> None:
    assert _botocore_errors(request) == ""
    assert _botocore_errors(_compacted(request, plan)) == ""


def test_the_rules_catch_what_bedrock_refuses() -> None:
    """The checks above can fail: each refusal, written by hand, is caught."""
    sent = _emptied()
    refused = [
        (sent[1:], "first message"),
        ([sent[0], sent[0]], "two user turns"),
        ([*sent[:1], {"role": "assistant", "content": []}], "empty content"),
        ([sent[0], {"role": "assistant", "content": [{"text": "a", "image": {}}]}], "keys"),
        ([sent[0], sent[1], {"role": "user", "content": [{"text": "x"}]}], "answered by"),
        ([sent[0], {"role": "assistant", "content": [{"text": "x"}]}, *sent[2:]], "without a toolUse"),
        ([{"role": "user", "content": [{"text": "list the files"}, CACHE]}], "cache point moved"),
    ]
    for messages, match in refused:
        with pytest.raises(AssertionError, match=match):
            rules.check_bedrock(messages, sent)
    assert "toolUseId" in _botocore_errors({"messages": [{"role": "user", "content": [{"toolUse": {}}]}]})
