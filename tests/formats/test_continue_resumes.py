"""Continue itself goes on from the sessions tracetrim writes back: the real Continue CLI
(``@continuedev/cli``, pinned in ``tests/js``) is given a compacted session file and forks it with one
more prompt (``cn -p --fork ID``). The chat-completions request it then sends keeps the API's rules
(every ``tool_calls`` entry answered by a ``tool`` message before the next other message, no ``tool``
message without its call; `tests._provider_rules.check_openai_chat`), every call is as first sent, every
result as first sent or marked by tracetrim, and exactly the calls the file keeps are sent.

Continue talks to a chat-completions stub on 127.0.0.1 (`tests._api_stub`: no model is reachable here).
``.ci/run`` installs the CLI (``npm ci --prefix tests/js``); without it the tests skip outside CI and
fail in CI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._compact_plans import RESUME_PLANS, write_back
from tests._continue_runs import CLI, FIXTURE, going_on, session_cn_writes
from tests._foreign_histories import foreign_histories, said
from tests._provider_histories import older_continue_history
from tests._provider_rules import chat_calls, chat_results, check_chat_went_on, check_openai_chat
from tests.conftest import service_unavailable
from tracetrim._snapshot import SnapshotError
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format

CONTINUE = HISTORY_FORMATS["continue"]


def _cli() -> None:
    if shutil.which("node") is None or not CLI.exists():
        service_unavailable("the Continue CLI is not installed (npm ci --prefix tests/js)")


def _session() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return document


def _kept_calls(document: dict[str, Any]) -> set[str]:
    return {c["id"] for item in document["history"] for c in item["message"].get("toolCalls") or ()}


@pytest.fixture(scope="module")
def sent_before(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What Continue sends when it forks the fixture as it was recorded."""
    _cli()
    return going_on(_session(), tmp_path_factory.mktemp("continue-before"))


@pytest.mark.parametrize("plan", sorted(RESUME_PLANS))
def test_continue_goes_on_from_what_tracetrim_writes(
    plan: str, sent_before: list[dict[str, Any]], tmp_path: Path
) -> None:
    session = _session()
    settings = RESUME_PLANS[plan]
    written = write_back("continue", session, settings) if settings is not None else session
    assert (written == session) == (plan == "as-read")
    assert list(written) == list(session)  # sessionId, title, workspaceDirectory, history, usage
    after = going_on(written, tmp_path)
    check_chat_went_on(sent_before, after, _kept_calls(written))
    if plan == "drop-all":  # each dropped call leaves its tombstone in what Continue sends
        dropped = set(chat_calls(sent_before)) - _kept_calls(written)
        assert dropped and json.dumps(after).count("[tracetrim: dropped") == len(dropped)
    if plan == "shorten-all":
        assert sum("tracetrim" in json.dumps(r) for r in chat_results(after).values()) >= 2  # the long ones


@pytest.mark.parametrize("plan", ["drop-all", "shorten-all", "mixed"])
def test_continue_goes_on_from_older_sessions_tracetrim_writes(
    plan: str, sent_before: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Results kept as ``tool`` items are judged as results: a dropped call takes its item (and its
    item's ``toolCallState``) with it, a shortened one is shortened there."""
    session = _session()
    session = {**session, "history": older_continue_history(session["history"])}
    # the same request as the new shape (the system prompt names the folder Continue ran in)
    assert going_on(session, tmp_path / "before")[1:] == sent_before[1:]
    neutral = CONTINUE.read(*CONTINUE.split(session))
    assert said(neutral, "tool_call") == said(neutral, "tool_result") == [f"call_0{k}" for k in range(1, 8)]
    written = write_back("continue", session, RESUME_PLANS[plan])
    after = going_on(written, tmp_path / "after")
    check_openai_chat(after)
    kept = _kept_calls(written)
    assert set(chat_calls(after)) == set(chat_results(after)) == kept
    assert (kept < set(chat_calls(sent_before))) == (plan != "shorten-all")
    for item in written["history"]:
        single = item.get("toolCallState")
        assert single is None or single["toolCallId"] in kept
    if plan == "shorten-all":
        assert "tracetrim" in json.dumps([r for r in chat_results(after).values()])


def test_a_history_from_elsewhere_is_a_session_continue_goes_on_from(tmp_path: Path) -> None:
    """An OpenAI chat history and an AgentScope one written as a Continue session: every call and result
    in what Continue sends."""
    _cli()
    for name, neutral in foreign_histories().items():
        history = CONTINUE.write(neutral)["messages"]
        document = {"sessionId": f"00000000-0000-4000-8000-00000000000{len(name)}", "title": name,
                    "workspaceDirectory": str(tmp_path / name / "work"), "history": history}  # fmt: skip
        assert detect_format(document) == "continue"
        messages = going_on(document, tmp_path / name)
        check_openai_chat(messages)
        assert set(chat_calls(messages)) == set(said(neutral, "tool_call"))
        assert set(chat_results(messages)) == set(said(neutral, "tool_result"))


def test_a_session_continue_writes_now_reads_and_writes_back_whole(tmp_path: Path) -> None:
    """The pinned CLI, run for the fixture's scripted prompts again: its file read as a Continue session,
    every call of both prompts judged with its result, and written back as it was."""
    _cli()
    text = session_cn_writes(tmp_path)
    document = json.loads(text)
    assert detect_format(document) == "continue"
    neutral = CONTINUE.read(*CONTINUE.split(document))
    assert said(neutral, "tool_call") == said(neutral, "tool_result") == [f"call_0{k}" for k in range(1, 8)]
    assert [b["state"] for m in neutral for b in m["content"] if b["type"] == "tool_result"].count(
        "error"
    ) == 1
    assert CONTINUE.write_document(neutral) == document


def test_the_cli_compacts_a_session_file_in_place_and_restores_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "session.json"
    path.write_bytes(FIXTURE.read_bytes())
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive, "--preserve-recent", "2"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    out = capsys.readouterr()
    assert "read as continue" in out.err
    compacted = json.loads(out.out)
    assert list(compacted) == list(_session()) and len(out.out) < len(path.read_text(encoding="utf-8"))
    assert detect_format(compacted) == "continue"
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()


def test_only_the_observing_tools_are_judged_by_default() -> None:
    neutral = CONTINUE.read(*CONTINUE.split(_session()))
    called = set(said(neutral, "tool_call", "name"))
    assert called == {"Read", "List", "Bash", "Edit"} and called <= set(CONTINUE.default_tools)
    assert not {"AskQuestion", "Checklist", "Skills", "Exit"} & set(CONTINUE.default_tools)


def test_an_empty_session_and_other_histories_are_told_apart() -> None:
    assert (
        detect_format({"sessionId": "s", "title": "t", "workspaceDirectory": "/w", "history": []})
        == "continue"
    )
    swe = {"history": [{"role": "user", "content": "fix it"}], "trajectory": []}
    assert detect_format(swe) == "swe-agent"


def _called(call: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "toolCalls": [call]}


def _item(message: Any) -> dict[str, Any]:
    return {"message": message, "contextItems": []}


def _called(call: dict[str, Any]) -> dict[str, Any]:
    return _item({"role": "assistant", "content": "", "toolCalls": [call]})


@pytest.mark.parametrize(
    ("history", "where"),
    [
        ([_item("hi")], "message 0"),
        ([_item({"role": "user", "content": 3})], "content must be a string"),
        ([_item({"role": "assistant", "content": "", "toolCalls": {}})], "toolCalls must be a list"),
        ([_called({"id": "", "function": {"name": "x"}})], "id must not be empty"),
        ([_called({"id": "c", "function": {"name": "x", "arguments": {}}})], "arguments must be a string"),
    ],
)
def test_bad_items_are_named(history: list[Any], where: str) -> None:
    with pytest.raises(SnapshotError, match=where):
        CONTINUE.read(history)
