"""GitHub Copilot CLI itself goes on from the sessions tracetrim writes back: the real CLI
(``@github/copilot``, pinned in ``tests/js``) is given a compacted ``events.jsonl`` and resumes it with
one more prompt (``copilot -p --resume ID``). The chat-completions request it then sends keeps the API's
rules (every ``tool_calls`` entry answered by a ``tool`` message before the next other message, no
``tool`` message without its call; `tests._provider_rules.check_openai_chat`), every call is as first
sent, every result as first sent or marked by tracetrim, and exactly the calls the file keeps are sent.

Copilot runs offline against a chat-completions stub on 127.0.0.1 (`tests._api_stub`: no model is
reachable here). ``.ci/run`` installs the CLI (``npm ci --prefix tests/js``); without it the tests skip
outside CI and fail in CI.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._compact_plans import RESUME_PLANS, compact
from tests._copilot_runs import (
    CLI,
    FIXTURE,
    going_on,
    session_copilot_compacts,
    session_copilot_delegates,
    session_copilot_writes,
)
from tests._foreign_histories import foreign_histories, said
from tests._provider_rules import (
    chat_calls,
    chat_results,
    check_chat_went_on,
    check_openai_chat,
    copilot_sent,
)
from tests.conftest import service_unavailable
from tracetrim._snapshot import SnapshotError
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format, parse_history_text

COPILOT = HISTORY_FORMATS["copilot-cli"]
CALLS = [f"call_0{k}" for k in range(1, 8)]


def _cli() -> None:
    if shutil.which("node") is None or not CLI.exists():
        service_unavailable("the GitHub Copilot CLI is not installed (npm ci --prefix tests/js)")


def _events() -> list[dict[str, Any]]:
    return list(parse_history_text(FIXTURE.read_text(encoding="utf-8")))


def _written(events: list[dict[str, Any]], plan: dict[str, Any] | None) -> list[dict[str, Any]]:
    neutral = COPILOT.read(events)
    written: list[dict[str, Any]] = COPILOT.write(compact(neutral, plan) if plan else neutral)["messages"]
    return written


def _kept_calls(events: list[dict[str, Any]]) -> set[str]:
    return {
        r["toolCallId"]
        for e in events
        if e["type"] == "assistant.message"
        for r in e["data"].get("toolRequests") or ()
    }


def _chained(events: list[dict[str, Any]]) -> None:
    """Each event names the one before it, as Copilot chains them."""
    assert [e["parentId"] for e in events] == [None, *(e["id"] for e in events[:-1])]


@pytest.fixture(scope="module")
def sent_before(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What Copilot sends when it resumes the fixture as it was recorded."""
    _cli()
    return going_on(_events(), tmp_path_factory.mktemp("copilot-before"))


@pytest.mark.parametrize("plan", sorted(RESUME_PLANS))
def test_copilot_goes_on_from_what_tracetrim_writes(
    plan: str, sent_before: list[dict[str, Any]], tmp_path: Path
) -> None:
    events = _events()
    written = _written(events, RESUME_PLANS[plan])
    assert (written == events) == (plan == "as-read")
    _chained(written)
    after = going_on(written, tmp_path)
    check_chat_went_on(sent_before, after, _kept_calls(written))
    dropped = set(chat_calls(sent_before)) - _kept_calls(written)
    assert bool(dropped) == (plan in ("drop-all", "mixed"))
    for event in written:  # a dropped call's own events go with it
        assert event["data"].get("toolCallId") not in dropped
    if plan == "drop-all":  # each dropped call leaves its tombstone in what Copilot sends
        assert json.dumps(after).count("[tracetrim: dropped") == len(dropped)
    if plan == "shorten-all":
        assert sum("tracetrim" in json.dumps(r) for r in chat_results(after).values()) >= 2  # the long ones


def test_a_session_copilot_writes_now_reads_and_writes_back_whole(tmp_path: Path) -> None:
    """The pinned CLI, run for the fixture's scripted prompts again: its file read as a Copilot CLI
    session, every call of both prompts judged with its result (the missing file's a failed one), and
    written back as it was."""
    _cli()
    events = list(parse_history_text(session_copilot_writes(tmp_path)))
    assert detect_format(events) == "copilot-cli"
    neutral = COPILOT.read(events)
    assert said(neutral, "tool_call") == said(neutral, "tool_result") == CALLS
    states = [b["state"] for m in neutral for b in m["content"] if b["type"] == "tool_result"]
    assert states.count("error") == 1
    assert COPILOT.write(neutral)["messages"] == events


def test_copilot_goes_on_after_its_own_compaction(tmp_path: Path) -> None:
    """A session Copilot compacted itself (twice, in the background, as long outputs filled its prompt
    limit): only the calls after its last compaction are judged, everything up to it stays as it was, and
    compacted by tracetrim, Copilot resumes it with its summary, what it kept from before as it was, and
    exactly the calls tracetrim kept after it."""
    _cli()
    events = session_copilot_compacts(tmp_path / "run")
    last = max(n for n, e in enumerate(events) if e["type"] == "session.compaction_complete")
    assert events[last]["data"]["success"]
    later = [
        r["toolCallId"]
        for e in events[last:]
        if e["type"] == "assistant.message"
        for r in e["data"]["toolRequests"]
    ]
    assert later and said(COPILOT.read(events), "tool_call") == later
    before = going_on(events, tmp_path / "before")
    assert "summarized" in before[1]["content"]
    for plan in ("drop-all", "shorten-all"):
        written = _written(events, RESUME_PLANS[plan])
        assert written[: last + 1] == events[: last + 1]
        _chained(written)
        after = going_on(written, tmp_path / plan)
        assert after[1] == before[1]  # Copilot's own summary
        check_chat_went_on(before, after, _kept_calls(written))
        assert (set(chat_calls(after)) < set(chat_calls(before))) == (plan == "drop-all")


def test_copilot_goes_on_when_a_sub_agents_work_is_in_the_session(tmp_path: Path) -> None:
    """A session in which a sub-agent (the ``task`` tool's ``explore`` agent) viewed a file: its events
    (its prompt, its calls, its report) are never judged and stay in place, and with every pair of the
    main agent dropped, the ``task`` call among them, Copilot resumes it under the chat-completions rules."""
    _cli()
    events = session_copilot_delegates(tmp_path / "run")
    subs = [e for e in events if "agentId" in e]
    assert {e["type"] for e in subs} >= {"user.message", "assistant.message", "tool.execution_complete"}
    assert said(COPILOT.read(events), "tool_call") == ["call_01", "call_02"]
    before = going_on(events, tmp_path / "before")
    written = _written(events, RESUME_PLANS["drop-all"])
    _chained(written)
    assert [{k: v for k, v in e.items() if k != "parentId"} for e in written if "agentId" in e] == [
        {k: v for k, v in e.items() if k != "parentId"} for e in subs
    ]
    after = going_on(written, tmp_path / "after")
    check_chat_went_on(before, after, _kept_calls(written))
    assert not chat_calls(after)


def test_a_message_the_session_did_not_hold_joins_the_chain(
    sent_before: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A message the session held no event for (a summary offload wrote, a note a host added) becomes
    the event Copilot writes for one, chained where it stands (the event after it names it), the same
    each time; Copilot resumes everything before and after it, and the note."""
    neutral = COPILOT.read(_events())
    first = next(n for n, m in enumerate(neutral) if m["role"] == "assistant" and m["content"])
    note = {"id": "note", "role": "user", "content": [{"type": "text", "text": "A note the host added."}]}
    history = [*neutral[:first], note, *neutral[first:]]
    written = COPILOT.write(history)["messages"]
    assert COPILOT.write(history)["messages"] == written
    _chained(written)
    (added,) = [e for e in written if e["data"].get("content") == "A note the host added."]
    assert (
        added["type"] == "user.message"
        and added["timestamp"] == written[written.index(added) - 1]["timestamp"]
    )
    after = going_on(written, tmp_path)
    check_openai_chat(after)
    assert [m for m in after if m.get("content") == "A note the host added."] == [
        {"role": "user", "content": "A note the host added."}
    ]
    assert chat_calls(after) == chat_calls(sent_before)


def test_added_calls_and_results_become_copilots_own_events() -> None:
    """An assistant turn with a call, and its result, that the session did not hold are written as an
    ``assistant.message`` with its ``toolRequests`` and a ``tool.execution_complete``: read back, the same
    call and result, and what Copilot would send from them keeps the chat-completions rules."""
    neutral = COPILOT.read(_events())
    call = {
        "type": "tool_call",
        "id": "call_new",
        "name": "view",
        "input": '{"path": "a.py"}',
        "state": "finished",
    }
    result = {"type": "tool_result", "id": "call_new", "name": "view", "output": "x = 1", "state": "success"}
    added = [
        {"id": "n1", "role": "assistant", "content": [{"type": "text", "text": "One more look."}, call]},
        {"id": "n2", "role": "assistant", "content": [result]},
    ]
    written = COPILOT.write([*neutral, *added])["messages"]
    _chained(written)
    back = COPILOT.read(written)
    assert said(back, "tool_call")[-1] == said(back, "tool_result")[-1] == "call_new"
    assert [b for m in back for b in m["content"] if b.get("id") == "call_new"][1]["output"] == "x = 1"
    check_openai_chat(copilot_sent(written))


def test_the_cli_compacts_a_session_file_and_restores_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(FIXTURE.read_bytes())
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive, "--preserve-recent", "2"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    out = capsys.readouterr()
    assert "read as copilot-cli" in out.err
    compacted = list(parse_history_text(out.out))
    assert len(out.out) < len(path.read_text(encoding="utf-8"))
    assert detect_format(compacted) == "copilot-cli"
    _chained(compacted)
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()


def test_copilot_recalls_a_dropped_result_through_tracetrim_mcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole loop: the session compacted in ENFORCE (its originals archived), Copilot resumes it with
    `tracetrim mcp` as an MCP server, its model asks for the first view back by the call id its note
    names, and the next request carries the original result, byte for byte."""
    _cli()
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(FIXTURE), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = list(parse_history_text(capsys.readouterr().out))
    [original] = [
        e["data"]["result"]["content"]
        for e in _events()
        if e["type"] == "tool.execution_complete" and e["data"]["toolCallId"] == "call_01"
    ]
    assert original not in json.dumps(written)  # the view was shortened or dropped
    server = {"command": sys.executable, "args": ["-m", "tracetrim", "mcp", *archive], "tools": ["*"]}
    config = json.dumps({"mcpServers": {"tracetrim": server}})
    recall = {"type": "tool_use", "id": "call_r1", "name": "tracetrim-recall_tool_result"}  # Copilot's name
    script = [[{**recall, "input": {"call_id": "call_01"}}], [{"type": "text", "text": "Recalled."}]]
    bodies = going_on(written, tmp_path / "home", script, "--additional-mcp-config", config)
    answer = next(m for m in bodies[-1]["messages"] if m.get("tool_call_id") == "call_r1")
    assert answer["content"] == original


def test_only_the_observing_tools_are_judged_by_default() -> None:
    called = set(said(COPILOT.read(_events()), "tool_call", "name"))
    assert called == {"view", "bash", "edit"} and called <= set(COPILOT.default_tools)
    assert not {"task", "skill", "sql", "ask_user", "update_todo"} & set(COPILOT.default_tools)


def test_what_copilot_compacted_or_cleared_is_kept_in_place() -> None:
    """Only what follows Copilot's own last successful compaction (or clear, or truncation) is judged:
    the events before it are kept as they are, whatever the plan."""
    events = _events()
    at = next(n for n, e in enumerate(events) if e["type"] == "session.resume")
    compaction = {
        "type": "session.compaction_complete",
        "data": {"success": True, "summaryContent": "The user asked about calc.py.", "messagesRemoved": 9},
        "id": "c0000000-0000-4000-8000-000000000000",
        "timestamp": events[at]["timestamp"],
        "parentId": events[at - 1]["id"],
    }
    events = [*events[:at], compaction, {**events[at], "parentId": compaction["id"]}, *events[at + 1 :]]
    neutral = COPILOT.read(events)
    assert said(neutral, "tool_call") == CALLS[4:]
    written = _written(events, RESUME_PLANS["drop-all"])
    assert written[: at + 1] == events[: at + 1]
    failed = {**compaction, "data": {"success": False, "error": "timeout"}}
    assert said(COPILOT.read([*events[:at], failed, *events[at + 1 :]]), "tool_call") == CALLS


def test_a_sub_agents_events_are_kept_in_place() -> None:
    events = _events()
    sub = [
        {**e, "agentId": "sub-1"} if e["type"] in ("assistant.message", "tool.execution_complete") else e
        for e in events
    ]
    assert said(COPILOT.read(sub), "tool_call") == []
    assert COPILOT.write(COPILOT.read(sub))["messages"] == sub


def test_a_history_from_elsewhere_is_refused_naming_why() -> None:
    for neutral in foreign_histories().values():
        with pytest.raises(SnapshotError, match="read from a Copilot CLI session"):
            COPILOT.write(neutral)


def test_the_chunks_of_a_response_that_lost_one_are_numbered_again() -> None:
    """Copilot splits one response into chunks at each reasoning boundary (``chunkIndex`` of
    ``chunkCount``); a chunk whose calls all went goes, and the chunks left are numbered 0..n-1 of n."""
    call = {"toolCallId": "call_a", "name": "view", "arguments": {"path": "a.py"}}
    chunk = {"apiCallId": "r1", "chunkCount": 2}
    events = [
        _event("user.message", {"content": "look"}, 0),
        _event("assistant.message", {**chunk, "chunkIndex": 0, "content": "", "toolRequests": [call]}, 1),
        _event(
            "tool.execution_complete",
            {"toolCallId": "call_a", "success": True, "result": {"content": "x"}},
            2,
        ),
        _event("assistant.message", {**chunk, "chunkIndex": 1, "content": "Done.", "toolRequests": []}, 3),
    ]
    events = [{**e, "parentId": events[n - 1]["id"] if n else None} for n, e in enumerate(events)]
    written = _written(events, {**RESUME_PLANS["drop-all"], "tombstones": False})
    said_last = [e["data"] for e in written if e["type"] == "assistant.message"]
    assert [(d["content"], d["chunkIndex"], d["chunkCount"]) for d in said_last] == [("Done.", 0, 1)]
    _chained(written)


def _event(kind: str, data: Any, n: int = 0) -> dict[str, Any]:
    return {"type": kind, "data": data, "id": f"e{n}", "timestamp": "t", "parentId": None}


@pytest.mark.parametrize(
    ("events", "where"),
    [
        ([{"type": "user.message", "data": {}}], "message 0"),
        ([_event("user.message", {"content": 3})], "content must be a string"),
        ([_event("assistant.message", {"content": "", "toolRequests": {}})], "toolRequests must be a list"),
        ([_event("assistant.message", {"content": "", "toolRequests": [{"toolCallId": "", "name": "x"}]})],
         "id must not be empty"),
        ([_event("assistant.message", {"content": "", "toolRequests": [{"toolCallId": "c"}]})], "name"),
    ],
)  # fmt: skip
def test_bad_events_are_named(events: list[Any], where: str) -> None:
    with pytest.raises(SnapshotError, match=where):
        COPILOT.read(events)
