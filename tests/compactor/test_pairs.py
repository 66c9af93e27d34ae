"""Pairing and protection: which pairs a model may judge, and why the others are kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests._histories import assistant, call, result, text, tool_history, user
from tracetrim._marker import shortened_note
from tracetrim._snapshot import validate_messages
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages


def _pairs(
    messages: list[dict[str, Any]],
    *,
    eligible: set[str] | None = None,
    recent: int = 2,
    protected_ids: tuple[str, ...] = (),
    pinned: tuple[str, ...] = (),
    protected_calls: tuple[str, ...] = (),
) -> dict[str, Pair]:
    messages = validate_messages(messages)
    protected = protected_messages(
        messages, preserve_recent=recent, protected_ids=protected_ids, pinned_ids=pinned
    )
    found = find_pairs(
        messages,
        eligible_tools=eligible or {"read_file"},
        protected=protected,
        protected_call_ids=protected_calls,
    )
    return {p.call_id: p for p in found}


def _with(*middle: dict[str, Any]) -> list[dict[str, Any]]:
    """Task message, the given messages, then two recent messages."""
    return [user("m0", "task"), *middle, user("r1", "recent"), assistant("r2", text("ok"))]


def test_plain_pair_is_candidate_with_ordered_keys() -> None:
    pairs = _pairs(
        _with(
            assistant("a1", call("c1"), result("c1")),
            assistant("a2", call("c2")),
            assistant("a3", result("c2")),
        )
    )
    assert [(p.key, p.candidate) for p in pairs.values()] == [("t1", True), ("t2", True)]
    assert pairs["c2"].call_at == (2, 0) and pairs["c2"].result_at == (3, 0)


@pytest.mark.parametrize(
    ("middle", "reason"),
    [
        ([assistant("a1", call("c1"), result("c1"), call("c1"), result("c1"))], "duplicate_id"),
        ([assistant("a1", call("c1"), result("c1")), assistant("a2", result("c1"))], "duplicate_id"),
        ([assistant("a1", call("c1"))], "no_result"),
        ([assistant("a1", result("c1"))], "no_call"),
        ([assistant("a1", result("c1")), assistant("a2", call("c1"))], "result_before_call"),
        ([assistant("a1", result("c1"), call("c1"))], "result_before_call"),
        ([assistant("a1", call("c1", raw="not json"), result("c1"))], "input_not_json_object"),
        ([assistant("a1", call("c1", raw="[1, 2]"), result("c1"))], "input_not_json_object"),
        ([assistant("a1", call("c1", raw='{"x": NaN}'), result("c1"))], "input_not_json_object"),
        ([assistant("a1", call("c1", raw='{"x": Infinity}'), result("c1"))], "input_not_json_object"),
        ([assistant("a1", call("c1", state="pending"), result("c1"))], "call_not_finished"),
        (
            [assistant("a1", {k: v for k, v in call("c1").items() if k != "state"}, result("c1"))],
            "call_not_finished",
        ),
        ([assistant("a1", call("c1"), result("c1", state="error"))], "result_not_success"),
        ([assistant("a1", call("c1"), result("c1", state="running"))], "result_not_success"),
        ([assistant("a1", call("c1"), result("c1", state="interrupted"))], "result_not_success"),
        ([assistant("a1", call("c1"), result("c1", state="denied"))], "result_not_success"),
        ([assistant("a1", call("c1"), result("c1", name="search_code"))], "name_mismatch"),
        (
            [assistant("a1", call("c1"), result("c1", output=[{"type": "data", "source": {}}]))],
            "non_text_output",
        ),
        (
            [
                assistant(
                    "a1", call("c1"), result("c1", output=[{"type": "text", "text": "a"}, {"type": "image"}])
                )
            ],
            "non_text_output",
        ),
        (
            [assistant("a1", call("c1", name="write_file"), result("c1", name="write_file"))],
            "tool_not_eligible",
        ),
        (
            [
                assistant(
                    "a1", call("c1"), {**result("c1"), "metadata": {"tracetrim": {"action": "drop_result"}}}
                )
            ],
            "already_shortened",
        ),
    ],
)
def test_guards(middle: list[dict[str, Any]], reason: str) -> None:
    pairs = _pairs(_with(*middle))
    assert pairs["c1"].reason == reason
    assert not pairs["c1"].candidate


def test_text_only_list_output_is_candidate() -> None:
    output = [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]
    pairs = _pairs(_with(assistant("a1", call("c1"), result("c1", output=output))))
    assert pairs["c1"].candidate and pairs["c1"].result_text == "part one\npart two"


def test_nothing_is_eligible_by_default() -> None:
    messages = validate_messages(tool_history(2))
    found = find_pairs(messages, eligible_tools=frozenset(), protected={}, protected_call_ids=())
    assert {p.reason for p in found} == {"tool_not_eligible"}


@pytest.mark.parametrize(
    ("messages", "kwargs", "reason"),
    [
        (
            [assistant("a0", call("c1"), result("c1")), user("u", "x"), user("r1", "y"), user("r2", "z")],
            {},
            "first_message",
        ),
        (_with({"id": "s", "role": "system", "content": [call("c1"), result("c1")]}), {}, "system_message"),
        ([user("m0", "t"), assistant("a1", call("c1"), result("c1")), user("r2", "z")], {}, "recent_message"),
        (_with(assistant("a1", call("c1"), result("c1"))), {"protected_ids": ("a1",)}, "protected_message"),
        (_with(assistant("a1", call("c1"), result("c1"))), {"pinned": ("a1",)}, "pinned_message"),
        (
            _with(assistant("a1", call("c1"), result("c1"), metadata={"tracetrim.pinned": True})),
            {},
            "pinned_message",
        ),
        (
            _with(assistant("a1", call("c1"), result("c1"), metadata={"jev": {"context": {"pinned": True}}})),
            {},
            "pinned_message",
        ),
        (_with(assistant("a1", call("c1"), result("c1"))), {"protected_calls": ("c1",)}, "protected_call"),
    ],
)
def test_protection_rules(messages: list[dict[str, Any]], kwargs: dict[str, Any], reason: str) -> None:
    assert _pairs(messages, **kwargs)["c1"].reason == reason


def test_protection_of_either_endpoint_protects_the_pair() -> None:
    middle = [assistant("a1", call("c1")), assistant("a2", result("c1"))]
    assert _pairs(_with(*middle), protected_ids=("a2",))["c1"].reason == "protected_message"
    assert _pairs(_with(*middle), protected_ids=("a1",))["c1"].reason == "protected_message"


def test_pinned_false_does_not_protect() -> None:
    middle = assistant("a1", call("c1"), result("c1"), metadata={"tracetrim.pinned": False})
    assert _pairs(_with(middle))["c1"].candidate


def test_recent_window_counts_messages() -> None:
    messages = tool_history(4, tail=0)
    pairs = _pairs(messages, recent=2)
    assert [p.candidate for p in pairs.values()] == [True, True, False, False]


def test_a_result_quoting_the_note_is_judged_and_one_ending_in_a_note_is_already_shortened() -> None:
    """Formats without block metadata carry only the note's text; a result that merely quotes it (a
    page or a source file about tracetrim) is not one tracetrim shortened, and stays a candidate."""
    note = shortened_note("read_file", "c1", 5000, 700, "ab" * 32)
    quoting = f"docs say notes look like:\n{note}\nand that is all"
    pairs = _pairs(_with(assistant("a1", call("c1"), result("c1", output=quoting))))
    assert pairs["c1"].candidate and pairs["c1"].reason == ""
    shortened = _pairs(_with(assistant("a1", call("c1"), result("c1", output=f"head\n{note}"))))
    assert shortened["c1"].reason == "already_shortened"
