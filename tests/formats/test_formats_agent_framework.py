"""Microsoft Agent Framework messages (``Message.to_dict()``): read and written back exactly, calls paired
by ``call_id``, reasoning kept with what it led to, and what goes back checked the way Agent Framework's
own OpenAI clients and the Responses API check it.

The fixtures are what a real ``Agent``'s session kept after a run, as its message list and as the whole
serialized ``AgentSession`` (`tests._agent_framework_runs`).
"""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from tests.conftest import require_module

require_module("agent_framework", "pip install -e '.[test]'")
require_module("agent_framework_openai", "pip install -e '.[test]'")

import itertools

from agent_framework import AgentSession, ChatResponse, Message

import tracetrim as tt
from tests import _provider_histories as histories
from tests._agent_framework_runs import (
    FIXTURE,
    SESSION_FIXTURE,
    ScriptedClient,
    chat_messages,
    responses_input,
    run_agent,
    session_document,
    session_messages,
)
from tests._compact_plans import SETTINGS, compact, plans
from tests._provider_rules import check_openai_chat, check_responses
from tracetrim._marker import REASONED_CALL_KEY
from tracetrim._snapshot import SnapshotError
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import (
    HISTORY_FORMATS,
    FormatError,
    detect_format,
    from_agent_framework,
    to_agent_framework,
)

FMT = HISTORY_FORMATS["agent-framework"]


def _fixture() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return messages


def _shape(messages: list[dict[str, Any]]) -> list[Any]:
    """Roles, content types and call ids: what a run writes, less the ids it draws at random."""
    return [(m["role"], [(c["type"], c.get("call_id")) for c in m["contents"]]) for m in messages]


async def _compacted(
    messages: list[dict[str, Any]], answers: dict[str, tuple[float, float]], **config: Any
) -> Any:
    compactor = tt.Compactor(
        ScriptedDecisionModel.by_call_id(answers, default=(0.95, 0.95)),
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "run"}, preserve_recent_messages=1, minimum_reduction=0, **config
        ),
    )
    outcome = await compactor.plan(tt.CompactionRequest(from_agent_framework(messages)))
    assert outcome.plan is not None, outcome.detail
    return to_agent_framework(outcome.plan.messages)["messages"], outcome.plan


async def test_the_installed_framework_writes_what_the_fixture_holds() -> None:
    assert _shape(await session_messages()) == _shape(_fixture())


def test_told_by_shape_and_never_taken_for_responses_items() -> None:
    messages = _fixture()
    assert all(m["type"] == "message" for m in messages)  # the Responses items' type too
    assert detect_format(messages) == "agent-framework"
    assert detect_format({"messages": messages}) == "agent-framework"


def test_read_and_written_back_exactly() -> None:
    messages = _fixture()
    before = copy.deepcopy(messages)
    neutral = FMT.read(messages)
    assert messages == before  # the caller's dicts are not changed
    assert to_agent_framework(neutral)["messages"] == messages
    calls = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    results = [b for m in neutral for b in m["content"] if b["type"] == "tool_result"]
    assert calls == [r["id"] for r in results] == [f"call_{n}" for n in range(1, 9)]
    assert {r["name"] for r in results} == {"read_file", "run"}
    assert [r["state"] for r in results].count("error") == 1  # call_4 raised


def test_the_call_reasoning_led_to_among_others_keeps_its_place() -> None:
    neutral = FMT.read(_fixture())
    marked = {
        b["id"]: b["metadata"][REASONED_CALL_KEY]
        for m in neutral
        for b in m["content"]
        if (b.get("metadata") or {}).get(REASONED_CALL_KEY)
    }
    assert marked == {"call_2": ["call_2", "call_3"]}  # rs_05 and rs_07 led to one call each


@pytest.mark.parametrize("both", [False, True], ids=["one-of-two", "both"])
@pytest.mark.parametrize("tombstones", [True, False])
async def test_what_goes_back_is_what_the_openai_clients_send_validly(tombstones: bool, both: bool) -> None:
    """rs_02 led to call_2 and call_3: call_2 goes only with call_3 (a drop of call_2 alone leaves it
    with a stub result); rs_05 led to call_5 alone and goes with it."""
    messages = _fixture()
    drop = (0.05, 0.05)
    answers = {"call_1": drop, "call_2": drop, "call_5": drop, "call_6": (0.9, 0.05)}
    if both:
        answers["call_3"] = drop
    written, plan = await _compacted(messages, answers, tombstones=tombstones)
    actions = {d.call_id: d.action.value for d in plan.decisions}
    assert actions["call_2"] == "drop_call" and actions["call_6"] == "drop_result"
    [Message.from_dict(m) for m in written]  # Agent Framework takes every message back
    sent, items = responses_input(messages), responses_input(written)
    check_responses(items, sent, types=False)
    kinds = {(i.get("type"), i.get("id") or i.get("call_id")) for i in items}
    turn = {("reasoning", "rs_02"), ("function_call", "fc_call_2"), ("function_call", "fc_call_3")}
    assert (turn & kinds == set()) if both else (turn <= kinds)
    assert ("reasoning", "rs_05") not in kinds and ("function_call", "fc_call_5") not in kinds
    check_openai_chat(chat_messages(written))
    text = json.dumps(written)
    assert ("recall it by call id" in text) is not both  # call_2's stub result
    assert ("dropped read_file call call_1" in text) is tombstones
    assert [m["role"] for m in written].count("assistant") < [m["role"] for m in messages].count("assistant")
    roles = [m["role"] for m in written]
    assert all(a != b or a == "tool" for a, b in itertools.pairwise(roles))


async def test_a_changed_message_is_renamed_and_loses_the_frameworks_annotation() -> None:
    messages = _fixture()
    for n, message in enumerate(messages):
        message["message_id"] = f"msg_{n}"
        message["additional_properties"]["_group"] = {
            "id": f"group_msg_{n}",
            "kind": "user",
            "token_count": 9,
        }
    written, _ = await _compacted(messages, {"call_6": (0.9, 0.05)})
    by_id = {m["message_id"]: m for m in written}
    assert "msg_10" not in by_id  # call_6's result was shortened
    (renamed,) = [m for m in written if m["message_id"].startswith("msg_10~tt")]
    assert "_group" not in renamed["additional_properties"]
    assert by_id["msg_8"] == messages[8]  # what did not change is as it was, annotation and all


async def test_a_shortened_result_reads_back_as_already_shortened() -> None:
    written, _ = await _compacted(_fixture(), {"call_6": (0.9, 0.05)})
    again = from_agent_framework(written)
    compactor = tt.Compactor(
        ScriptedDecisionModel.by_call_id({}, default=(0.9, 0.05)),
        config=tt.CompactorConfig(eligible_tools={"read_file", "run"}, preserve_recent_messages=1),
    )
    outcome = await compactor.plan(tt.CompactionRequest(again))
    assert outcome.plan is not None
    reasons = {d.call_id: d.reason for d in outcome.plan.decisions}
    assert reasons["call_6"] == "already_shortened"


async def test_messages_the_frameworks_compaction_excluded_stay_in_place_unjudged() -> None:
    messages = _fixture()
    for message in messages[1:3]:
        message["additional_properties"]["_excluded"] = True
    neutral = from_agent_framework(messages)
    assert "call_1" not in json.dumps([b for m in neutral for b in m["content"]])
    written, plan = await _compacted(messages, {"call_2": (0.05, 0.05), "call_3": (0.05, 0.05)})
    assert "call_1" not in {d.call_id for d in plan.decisions}
    assert written[1:3] == messages[1:3]


def test_a_history_from_elsewhere_is_written_as_framework_messages() -> None:
    neutral = HISTORY_FORMATS["openai"].read(
        [
            {"role": "user", "content": "Read a.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        ]
    )
    written = to_agent_framework(neutral)["messages"]
    restored = [Message.from_dict(m) for m in written]
    assert [m.role for m in restored] == ["user", "assistant", "tool"]
    assert restored[1].contents[0].arguments == {"path": "a.py"}
    assert restored[2].contents[0].result == "print(1)"


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ([{"role": "user", "contents": "hi"}], "message 0"),
        ([{"role": "robot", "contents": []}], "message 0"),
        ([{"role": "user", "contents": [3]}], "message 0, block 0"),
        (
            [{"role": "assistant", "contents": [{"type": "function_call", "call_id": "c1", "name": 5}]}],
            "message 0",
        ),
    ],
)
def test_bad_messages_are_named(messages: list[Any], where: str) -> None:
    with pytest.raises(SnapshotError, match=where):
        FMT.read(messages)


def test_the_cli_compacts_and_restores_the_bytes_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "messages.json"
    path.write_bytes(FIXTURE.read_bytes())
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive, "--eligible-tools", "read_file,run"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(path.read_text(encoding="utf-8"))
    compacted = json.loads(written)
    assert detect_format(compacted) == "agent-framework"
    [Message.from_dict(m) for m in compacted]
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()


@SETTINGS
@given(messages=histories.agent_framework_messages(), plan=plans)
def test_what_goes_back_after_any_plan_is_what_the_openai_clients_send_validly(
    messages: list[dict[str, Any]], plan: dict[str, Any]
) -> None:
    """Whatever a plan keeps, shortens or drops: Agent Framework takes every message back, its own
    Responses client replays the history (it refuses reasoning it cannot replay) and the Responses API's
    rules hold for it against what was sent, its chat-completions client's messages answer every call in
    order, and no two assistant turns stand side by side."""
    written = to_agent_framework(compact(from_agent_framework(messages), plan))["messages"]
    [Message.from_dict(m) for m in written]
    check_responses(responses_input(written), responses_input(messages), types=False)
    check_openai_chat(chat_messages(written))
    roles = [m["role"] for m in written]
    assert all(a != b or a != "assistant" for a, b in itertools.pairwise(roles))


def _session() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SESSION_FIXTURE.read_text(encoding="utf-8"))
    return document


async def test_the_installed_framework_writes_what_the_session_fixture_holds() -> None:
    written, kept = await session_document(), _session()
    assert list(written) == list(kept) and list(written["state"]) == list(kept["state"]) == ["in_memory"]
    assert _shape(written["state"]["in_memory"]["messages"]) == _shape(kept["state"]["in_memory"]["messages"])


def test_a_session_is_read_where_the_framework_keeps_its_history() -> None:
    session = _session()
    assert detect_format(session) == "agent-framework"
    assert FMT.holder(session) is session["state"]["in_memory"]
    # a history provider with its own source id keeps its messages under that key
    custom = {**session, "state": {"notes": {"n": 1}, "mine": session["state"]["in_memory"]}}
    assert detect_format(custom) == "agent-framework"
    assert FMT.holder(custom) is session["state"]["in_memory"]
    replaced = FMT.with_holder(custom, {"messages": []})
    assert replaced == {**custom, "state": {"notes": {"n": 1}, "mine": {"messages": []}}}
    assert list(replaced) == list(custom) and custom["state"]["mine"]["messages"]  # nothing mutated
    # a "session" whose state holds no Agent Framework messages is not taken for one
    with pytest.raises(FormatError, match="keys type, state"):
        detect_format({"type": "session", "state": {"x": {"messages": [{"role": "user"}]}}})


def test_a_session_with_two_histories_and_no_default_is_refused_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session()
    history = session["state"]["in_memory"]
    path = tmp_path / "session.json"
    path.write_text(json.dumps({**session, "state": {"a": history, "b": history}}), encoding="utf-8")
    assert main(["compact", str(path), "--eligible-tools", "read_file,run"]) == 2
    err = capsys.readouterr().err
    assert "2 message histories" in err and "'a', 'b'" in err and "session.json" in err


def test_a_compacted_session_file_loads_and_the_agent_goes_on_from_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole session file, compacted in ENFORCE by the CLI, is one ``AgentSession.from_dict`` loads;
    an agent run on it sends the compacted history, which Agent Framework's OpenAI clients and our
    provider rules take; ``restore --format sent`` gives back the file's bytes."""
    path = tmp_path / "session.json"
    path.write_bytes(SESSION_FIXTURE.read_bytes())
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive, "--eligible-tools", "read_file,run"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    compacted = json.loads(written)
    original = _session()
    assert len(written) < len(path.read_text(encoding="utf-8")) * 0.6
    assert {k: v for k, v in compacted.items() if k != "state"} == {
        k: v for k, v in original.items() if k != "state"
    }
    assert detect_format(compacted) == "agent-framework"
    session = AgentSession.from_dict(compacted)
    client = ScriptedClient([ChatResponse(messages=[Message("assistant", ["Done."])])])
    _, _, response = asyncio.run(run_agent(client, session=session))  # the CLI runs its own loop
    assert response.text == "Done."
    [request] = client.requests
    kept = compacted["state"]["in_memory"]["messages"]
    # the session's history as kept (Agent Framework marks where it loaded each from), then the new turn
    assert [m["contents"] for m in request[: len(kept)]] == [m["contents"] for m in kept]
    assert request[-1]["contents"][0]["text"] == "Find why test_helper_7 fails."
    sent = responses_input(original["state"]["in_memory"]["messages"])
    check_responses(responses_input(request), sent, types=False)
    check_openai_chat(chat_messages(request))
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()
