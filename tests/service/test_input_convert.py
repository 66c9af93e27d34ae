"""Strict input structuring: service bodies, request files and options, every fault named by its path."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tracetrim._input_convert import InputError, structure_input
from tracetrim._validators import (
    FieldTypeError,
    FieldValueError,
    int_in,
    is_number,
    non_empty_string,
    positive_number,
    probability,
)
from tracetrim.cli._errors import CliError
from tracetrim.cli._input import read_history
from tracetrim.compactor._options import REQUEST_FIELDS, RequestFields, config_from_options
from tracetrim.service._errors import ApiError
from tracetrim.service._reme import parse_reme
from tracetrim.service._requests import CompactBody, parse_compact

SCOPE = {"user_id": "u1", "agent_id": "a1", "session_id": "s1"}


def _history() -> list[dict[str, Any]]:
    def pair(call_id: str, path: str) -> list[dict[str, Any]]:
        call = {"type": "tool_call", "id": call_id, "name": "read_file", "input": json.dumps({"path": path})}
        result = {"type": "tool_result", "id": call_id, "name": "read_file", "output": "x" * 50}
        return [call, result]

    return [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "fix the build"}]},
        {"id": "m1", "role": "assistant", "content": pair("c1", "a")},
        {"id": "m2", "role": "user", "content": [{"type": "text", "text": "and b"}]},
        {
            "id": "m3",
            "role": "assistant",
            "content": [{"type": "text", "text": "reading b"}, *pair("c2", "b")],
        },
    ]


def _body(**changes: Any) -> dict[str, Any]:
    return {"messages": _history(), "eligible_tool_names": ["read_file"], **changes}


def _problems(data: Any, cl: type[Any] = CompactBody) -> list[tuple[str, str]]:
    with pytest.raises(InputError) as caught:
        structure_input(data, cl)
    return [(p.path, p.code) for p in caught.value.problems]


def test_a_valid_body_keeps_the_messages_as_sent() -> None:
    data = _body(goal=None, options={"keep_threshold": 0.3}, scope=SCOPE)
    body = structure_input(data, CompactBody)
    assert body.messages is data["messages"]  # passed on, never copied or coerced
    assert body.goal is None and body.eligible_tool_names == ("read_file",)
    assert body.options is not None and body.options.config.keep_threshold == 0.3
    assert body.scope == tt.Scope("u1", "a1", "s1")


@pytest.mark.parametrize(
    ("changes", "path", "code"),
    [
        ({"options": {"keep_threshold": 1.5}}, "options.keep_threshold", "invalid_field"),
        ({"options": {"keep_threshold": True}}, "options.keep_threshold", "invalid_field"),
        ({"options": {"keep_threshold": "0.5"}}, "options.keep_threshold", "invalid_field"),
        ({"options": {"max_concurrency": True}}, "options.max_concurrency", "invalid_field"),
        ({"options": {"max_questions": 2.0}}, "options.max_questions", "invalid_field"),
        ({"options": {"tombstones": "yes"}}, "options.tombstones", "invalid_field"),
        ({"options": {"trigger_tokens": 100}}, "options.target_tokens", "invalid_field"),
        ({"options": {"pinned_message_ids": ["m1", 3]}}, "options.pinned_message_ids[1]", "invalid_field"),
        ({"options": {"budget_s": False}}, "options.budget_s", "invalid_field"),
        ({"options": {"mode": "off"}}, "options.mode", "invalid_field"),
        ({"options": {"keep_treshold": 0.4}}, "options.keep_treshold", "unknown_field"),
        ({"options": {"eligible_tools": ["x"]}}, "options.eligible_tools", "unknown_field"),
        ({"options": "fast"}, "options", "invalid_field"),
        ({"scope": {**SCOPE, "user_id": ""}}, "scope.user_id", "invalid_field"),
        ({"scope": {**SCOPE, "user_id": "u\x00"}}, "scope.user_id", "invalid_field"),
        ({"scope": {**SCOPE, "session_id": None}}, "scope.session_id", "invalid_field"),
        ({"scope": {"user_id": "u", "agent_id": "a"}}, "scope.session_id", "missing_field"),
        ({"scope": {**SCOPE, "tenant": "t"}}, "scope.tenant", "unknown_field"),
        ({"eligible_tool_names": ["read_file", ""]}, "eligible_tool_names[1]", "invalid_field"),
        ({"protected_call_ids": ["c1", 2]}, "protected_call_ids[1]", "invalid_field"),
        ({"goal": 3}, "goal", "invalid_field"),
        ({"messages": "hello"}, "messages", "invalid_field"),
        ({"chat_id": "x"}, "chat_id", "unknown_field"),
    ],
)
def test_each_fault_is_named_by_its_path(changes: dict[str, Any], path: str, code: str) -> None:
    assert _problems(_body(**changes)) == [(path, code)]


def test_a_missing_field_and_a_non_object_body() -> None:
    assert _problems({"eligible_tool_names": []}) == [("messages", "missing_field")]
    assert _problems([1, 2]) == [("", "invalid_field")]


def test_every_fault_is_reported_at_once_the_first_one_leading() -> None:
    data = _body(goal=3, options={"keep_threshold": "high", "preserve_recent_messages": "6"})
    with pytest.raises(InputError) as caught:
        structure_input(data, CompactBody)
    error = caught.value
    paths = [p.path for p in error.problems]
    assert sorted(paths) == ["goal", "options.keep_threshold", "options.preserve_recent_messages"]
    assert error.field == paths[0] and isinstance(error, tt.TracetrimError) and isinstance(error, ValueError)
    text = str(error)
    assert "options.keep_threshold: expected a finite number, got a string ('high')" in text
    assert "goal: expected a string, got a number" in text


def test_unknown_keys_are_listed_with_the_known_ones() -> None:
    with pytest.raises(InputError) as caught:
        structure_input(_body(options={"bogus": 1, "nope": 2}), CompactBody)
    text = str(caught.value)
    assert text.startswith("unknown option(s) bogus, nope in options; known: ")
    assert "keep_threshold" in text and "budget_s" in text and "mode" in text
    with pytest.raises(InputError, match=r"unknown field\(s\) chat_id; known: .*eligible_tool_names"):
        structure_input(_body(chat_id=1), CompactBody)


def test_the_service_answers_422_with_the_path() -> None:
    with pytest.raises(ApiError) as caught:
        parse_compact(_body(options={"discard_threshold": 0.9}), max_budget_s=30)
    assert caught.value.status == 422 and caught.value.field == "options.discard_threshold"
    assert "must not exceed keep_threshold" in caught.value.message
    messages = _history()
    messages[3]["content"][1]["id"] = ""
    with pytest.raises(ApiError) as caught:
        parse_compact(_body(messages=messages), max_budget_s=30)
    assert caught.value.field == "messages[3].content[1].id" and caught.value.code == "invalid_messages"
    with pytest.raises(ApiError) as caught:
        parse_compact([_body()], max_budget_s=30)
    assert caught.value.code == "invalid_body" and caught.value.field is None


def test_reme_options_are_structured_with_their_paths() -> None:
    def field_of(options: dict[str, Any]) -> str | None:
        with pytest.raises(ApiError) as caught:
            parse_reme(_body(options=options), max_budget_s=30, has_archive=False)
        return caught.value.field

    assert field_of({"drop_threshold": True}) == "options.drop_threshold"
    assert field_of({"evidence_chars": 0}) == "options.evidence_chars"
    assert field_of({"drop_calls": "yes"}) == "options.drop_calls"
    assert field_of({"drop_treshold": 0.2}) == "options.drop_treshold"
    call = parse_reme(
        _body(options={"drop_threshold": 0.2, "preview_chars": 41}), max_budget_s=30, has_archive=False
    )
    config = call.call.config
    assert (config.keep_threshold, config.truncate_head_chars, config.truncate_tail_chars) == (0.2, 21, 20)
    assert config.minimum_reduction == 0.0 and config.eligible_tools == frozenset({"read_file"})


def test_options_alone_and_the_request_fields_share_the_converter() -> None:
    config = config_from_options({"keep_threshold": 0.4}, ["read_file"])
    assert config.keep_threshold == 0.4 and config.eligible_tools == frozenset({"read_file"})
    with pytest.raises(InputError, match=r"^options\.max_state_tokens: must be at least 100, got 5$"):
        config_from_options({"max_state_tokens": 5}, [])
    assert {a.name for a in attrs.fields(CompactBody)} >= REQUEST_FIELDS
    fields = structure_input({"protected_message_ids": ["m0"], "options": {}}, RequestFields)
    assert fields.protected_message_ids == ("m0",) and fields.options == tt.CompactorConfig()


def test_a_request_file_names_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"messages": _history(), "options": {"keep_threshold": True}}))
    with pytest.raises(CliError, match=r"request\.json: options\.keep_threshold: expected a finite number"):
        read_history(str(path))
    path.write_text(json.dumps({"messages": _history(), "eligible_tool_names": "read_file"}))
    with pytest.raises(CliError, match=r"eligible_tool_names: expected an array, got a string"):
        read_history(str(path))
    path.write_text(json.dumps({"messages": _history(), "options": {"preserve_recent_messages": 2}}))
    history = read_history(str(path))
    assert history.options is not None and history.options.preserve_recent_messages == 2


@attrs.frozen
class _Checked:
    p: float = attrs.field(default=0.5, validator=probability)
    n: int = attrs.field(default=1, validator=int_in(1, 9))
    s: float = attrs.field(default=1.0, validator=positive_number("seconds"))
    name: str = attrs.field(default="x", validator=non_empty_string)


@pytest.mark.parametrize(
    ("field", "value", "kind", "needle"),
    [
        ("p", True, TypeError, "_Checked.p must be a finite number, got True"),
        ("p", math.nan, TypeError, "finite number"),
        ("p", 1.01, ValueError, "_Checked.p must be within [0, 1], got 1.01"),
        ("n", True, TypeError, "_Checked.n must be an integer"),
        ("n", 2.0, TypeError, "must be an integer"),
        ("n", 10, ValueError, "_Checked.n must be between 1 and 9, got 10"),
        ("s", 0, ValueError, "_Checked.s must be a positive number of seconds, got 0"),
        ("s", math.inf, ValueError, "positive number"),
        ("name", "", ValueError, "_Checked.name must be a non-empty string"),
        ("name", 3, TypeError, "_Checked.name must be a non-empty string"),
    ],
)
def test_the_shared_validators_name_the_field(
    field: str, value: Any, kind: type[Exception], needle: str
) -> None:
    with pytest.raises(kind) as caught:
        _Checked(**{field: value})
    error = caught.value
    assert isinstance(error, FieldValueError) and isinstance(error, tt.TracetrimError)
    assert error.field == field and needle in str(error)
    assert isinstance(error, FieldTypeError) == (kind is TypeError)


def test_is_number_refuses_bools_and_non_finite_values() -> None:
    assert [is_number(v) for v in (0, 0.5, -3, True, math.nan, math.inf, "1", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
    ]
