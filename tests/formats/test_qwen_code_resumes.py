"""Qwen Code itself resumes the sessions tracetrim writes back: the real CLI (``@qwen-code/qwen-code``,
pinned in ``tests/js/qwen``) is given a compacted session file and goes on with one more prompt
(``qwen --resume``). The chat-completions request it then sends keeps the API's rules (every
``tool_calls`` entry answered by a ``tool`` message before the next other message, no ``tool`` message
without its call; `tests._provider_rules.check_openai_chat`), every call is as first sent, every result
as first sent or marked by tracetrim, and exactly the calls the file keeps are sent.

Qwen Code talks to a chat-completions stub on 127.0.0.1 (`tests._api_stub`: no model is reachable
here). ``.ci/run`` installs the CLI (`tests._qwen_code_runs.INSTALL`); without it the tests skip outside
CI and fail in CI.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._compact_plans import RESUME_PLANS, written_with
from tests._foreign_histories import foreign_histories, said
from tests._provider_rules import chat_calls, chat_results, check_chat_went_on, check_openai_chat
from tests._qwen_code_runs import CLI, FIXTURE, INSTALL, going_on, moved, resumed, session_qwen_writes
from tests.conftest import service_unavailable
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format, dump_jsonl, parse_history_text

QWEN = HISTORY_FORMATS["qwen-code"]


def _cli() -> None:
    if shutil.which("node") is None or not CLI.exists():
        service_unavailable(f"Qwen Code is not installed ({INSTALL})")


def _lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _kept_calls(records: list[Any]) -> set[str]:
    return {
        part["functionCall"]["id"]
        for r in records
        if isinstance(r.get("message"), dict)
        for part in r["message"]["parts"]
        if "functionCall" in part
    }


@pytest.fixture(scope="module")
def sent_before(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What Qwen Code sends when it resumes the fixture as it was recorded."""
    _cli()
    home = tmp_path_factory.mktemp("qwen-before")
    return resumed(moved(_lines(), home / "work"), home)


@pytest.mark.parametrize("plan", sorted(RESUME_PLANS))
def test_qwen_code_resumes_what_tracetrim_writes(
    plan: str, sent_before: list[dict[str, Any]], tmp_path: Path
) -> None:
    lines = _lines()
    written = written_with("qwen-code", lines, RESUME_PLANS[plan])
    assert (written == lines) == (plan == "as-read")
    after = resumed(moved(written, tmp_path / "work"), tmp_path)
    check_chat_went_on(sent_before, after, _kept_calls(written))
    if plan == "drop-all":  # each dropped call leaves its tombstone in what Qwen Code sends
        dropped = set(chat_calls(sent_before)) - _kept_calls(written)
        assert dropped and json.dumps(after).count("[tracetrim: dropped") == len(dropped)


def test_a_history_from_elsewhere_is_a_session_qwen_code_resumes(tmp_path: Path) -> None:
    """An OpenAI chat history and an AgentScope one written as a Qwen Code session: one session id, every
    record chained to the one before, every call and result in what Qwen Code sends."""
    _cli()
    for name, neutral in foreign_histories().items():
        records = QWEN.write(neutral)["messages"]
        assert len({r["sessionId"] for r in records}) == 1
        assert [r["parentUuid"] for r in records[1:]] == [r["uuid"] for r in records[:-1]]
        home = tmp_path / name
        messages = resumed(moved(records, home / "work"), home)
        check_openai_chat(messages)
        assert set(chat_calls(messages)) == set(said(neutral, "tool_call"))
        assert set(chat_results(messages)) == set(said(neutral, "tool_result"))


def test_a_session_qwen_code_writes_now_reads_and_writes_back_whole(tmp_path: Path) -> None:
    """The pinned CLI, run for the fixture's scripted prompts again: its records read as a Qwen Code
    session, every call and result of both prompts judged, and written back as they were."""
    _cli()
    text = session_qwen_writes(tmp_path)
    records = parse_history_text(text)
    assert detect_format(records) == "qwen-code"
    neutral = QWEN.read(records)
    assert said(neutral, "tool_call") == [f"call_0{k}" for k in range(1, 7)]
    assert dump_jsonl(QWEN.write(neutral)["messages"]) == text


def test_the_fixture_reads_and_writes_back_whole() -> None:
    lines = _lines()
    assert detect_format(parse_history_text(FIXTURE.read_text(encoding="utf-8"))) == "qwen-code"
    assert QWEN.write(QWEN.read(lines))["messages"] == lines


def test_what_a_compression_stands_for_and_other_branches_are_kept_not_judged() -> None:
    """Qwen Code sends a ``chat_compression`` record's ``compressedHistory`` for everything before it,
    and only the path from the last conversation record: records before the compression and records of
    a branch left behind are carried, never judged, and come back where they stood."""
    lines = _lines()
    [first_answer] = [n for n, r in enumerate(lines) if r["type"] == "assistant" and "subtype" not in r][2:3]
    compression = {
        **lines[first_answer],
        "uuid": "c0ffee00-0000-4000-8000-000000000001",
        "parentUuid": lines[first_answer]["uuid"],
        "type": "system",
        "subtype": "chat_compression",
        "systemPayload": {"compressedHistory": [{"role": "user", "parts": [{"text": "summary"}]}]},
    }
    del compression["message"]
    branch = {**lines[1], "uuid": "c0ffee00-0000-4000-8000-000000000002", "parentUuid": lines[0]["uuid"]}
    rest = lines[first_answer + 1 :]
    rest[0] = {**rest[0], "parentUuid": compression["uuid"]}
    session = [*lines[: first_answer + 1], branch, compression, *rest]
    neutral = QWEN.read(session)
    judged = said(neutral, "tool_call")
    assert judged == ["call_04", "call_05", "call_06"]
    assert QWEN.write(neutral)["messages"] == session
    written = written_with("qwen-code", session, RESUME_PLANS["drop-all"])
    assert written[: first_answer + 3] == session[: first_answer + 3] and written != session
    assert {"call_01", "call_02", "call_03"} <= _kept_calls(written)


def test_records_off_the_path_name_their_nearest_ancestor_still_there() -> None:
    """A branch left behind starts at a tool result that a drop took out: it names the record before it."""
    lines = _lines()
    at = next(n for n, r in enumerate(lines) if r["type"] == "tool_result")
    branch = {**lines[1], "uuid": "c0ffee00-0000-4000-8000-000000000003", "parentUuid": lines[at]["uuid"]}
    session = [*lines, branch]
    session[-1], session[-2] = session[-2], session[-1]  # the path still ends at the last answer
    written = written_with("qwen-code", session, RESUME_PLANS["drop-all"])
    uuids = [r["uuid"] for r in written]
    assert lines[at]["uuid"] not in uuids
    [kept_branch] = [r for r in written if r["uuid"] == branch["uuid"]]
    assert kept_branch["parentUuid"] in uuids[: uuids.index(branch["uuid"])]
    assert all(r["parentUuid"] is None or r["parentUuid"] in uuids for r in written)


def test_a_branch_checkpoint_whose_start_went_names_the_nearest_record_still_there() -> None:
    """A ``branch_checkpoint`` names the record its branch starts after; where a drop took that record
    out, it names its nearest ancestor still written, as Qwen Code's own fork moves such a boundary."""
    lines = _lines()
    at = next(n for n, r in enumerate(lines) if r["type"] == "tool_result")
    checkpoint = {
        **{k: v for k, v in lines[-1].items() if k != "message"},
        "uuid": "c0ffee00-0000-4000-8000-000000000004",
        "parentUuid": lines[-1]["uuid"],
        "type": "system",
        "subtype": "branch_checkpoint",
        "systemPayload": {"v": 1, "startExclusiveRecordUuid": lines[at]["uuid"],
                          "assistantRecordUuid": lines[-1]["uuid"]},
    }  # fmt: skip
    session = [*lines, checkpoint]
    assert QWEN.write(QWEN.read(session))["messages"] == session
    written = written_with("qwen-code", session, RESUME_PLANS["drop-all"])
    uuids = [r["uuid"] for r in written]
    assert lines[at]["uuid"] not in uuids
    [kept] = [r for r in written if r["uuid"] == checkpoint["uuid"]]
    start = kept["systemPayload"]["startExclusiveRecordUuid"]
    assert start in uuids[: uuids.index(checkpoint["uuid"])]
    assert uuids.index(start) < at and kept["systemPayload"]["assistantRecordUuid"] in uuids


def test_a_record_used_twice_and_a_system_message_are_refused_naming_them() -> None:
    lines = _lines()
    twice = [*lines, {**lines[-1]}]
    with pytest.raises(tt.SnapshotError, match=r"message 30, field 'uuid': record uuid .* is used twice"):
        QWEN.read(twice)
    with pytest.raises(tt.SnapshotError, match="a Qwen Code session holds no system messages"):
        QWEN.write([{"id": "s", "role": "system", "content": [{"type": "text", "text": "rules"}]}])
    with pytest.raises(tt.SnapshotError, match="message 3: a Qwen Code record needs a string uuid"):
        QWEN.read([*lines[:3], {**lines[3], "uuid": 7}])


def test_restore_gives_back_the_session_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    archive = ["--archive", str(tmp_path / "archive"), *scope]
    args = ["compact", str(FIXTURE), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(FIXTURE.read_text(encoding="utf-8"))
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == FIXTURE.read_bytes()


def test_qwen_code_recalls_a_dropped_result_through_tracetrim_mcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole loop: the session compacted in ENFORCE (its originals archived), Qwen Code resumes it
    with `tracetrim mcp` as an MCP server, its model asks for the first read back by the call id its note
    names, and the next request carries the original result, byte for byte."""
    _cli()
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(FIXTURE), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [original] = [
        p["functionResponse"]["response"]["output"]
        for r in _lines()
        for p in r.get("message", {}).get("parts", [])
        if p.get("functionResponse", {}).get("id") == "call_01"
    ]
    assert original not in json.dumps(written)  # the read was shortened or dropped
    server = {"command": sys.executable, "args": ["-m", "tracetrim", "mcp", *archive]}
    config = json.dumps({"mcpServers": {"tracetrim": server}})
    # Qwen Code defers MCP tools: the model calls them through its tool_call tool, by their full name
    recall = {"name": "mcp__tracetrim__recall_tool_result", "arguments": {"call_id": "call_01"}}
    script = [
        [{"type": "tool_use", "id": "call_r1", "name": "tool_call", "input": recall}],
        [{"type": "text", "text": "Recalled."}],
    ]
    home = tmp_path / "home"
    bodies = going_on(moved(written, home / "work"), home, script, "--mcp-config", config)
    answer = next(m for m in bodies[-1]["messages"] if m.get("tool_call_id") == "call_r1")
    assert [part["text"] for part in answer["content"]] == [original]
