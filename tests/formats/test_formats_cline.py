"""Cline task histories: Cline names the messages of its file by index (its truncation range, checkpoints
and context edits), so a compacted file keeps every message and block where it stood, a drop leaves the
call and a stub result, and a plan that would move a message is refused; a compacted file restores byte for
byte.

The fixture follows Cline's task storage and tool-result code (see tests/data/agents/README.md); what
Cline sends under its truncation range is `tests._provider_rules.cline_sent`, written from its source.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests import _provider_rules as rules
from tests._compact_plans import compact
from tests._offload_support import RecordingSummarizer
from tracetrim import SnapshotError
from tracetrim._marker import keeps_its_place
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format, from_anthropic
from tracetrim.formats._carrier import split_carriers
from tracetrim.formats._cline import deleted_range

CLINE = HISTORY_FORMATS["cline"]
DATA = Path(__file__).parents[1] / "data" / "agents"
DROP_ALL = {"actions": ["drop_call"], "tombstones": True, "recent": 1}


def _history(name: str = "cline_history.json") -> list[dict[str, Any]]:
    """A fixture: the run with native tool calls, or (``cline_history_text_tools.json``) the XML one."""
    data: list[dict[str, Any]] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return data


def test_detected_by_what_cline_writes() -> None:
    items = _history()
    assert detect_format(items) == "cline"
    plain = [{k: v for k, v in m.items() if k not in ("modelInfo", "metrics", "ts")} for m in items]
    assert detect_format(plain) == "cline"  # the environment details it sends in every user turn
    bare = [
        {**m, "content": [b for b in m["content"] if "<environment_details>" not in b.get("text", "")]}
        for m in plain
    ]
    assert detect_format(bare) == "anthropic"
    fields = [{**m, "content": [b for b in m["content"] if b["type"] != "text"] or "x"} for m in items]
    assert detect_format(fields) == "cline"  # modelInfo and metrics alone tell it too
    chat = [*plain[:1], {"role": "assistant", "content": "", "tool_calls": []}]
    assert detect_format(chat) == "openai"  # chat-completions messages with Cline's details are not its file
    # a request Cline sent (a proxy's log) is a request, not the file Cline indexes
    assert detect_format({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": plain}) == "anthropic"


def test_every_call_is_read_to_keep_its_place() -> None:
    neutral = CLINE.read(_history())
    calls = [b for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert len(calls) == 8 and all(keeps_its_place(b) for b in calls)


def test_a_drop_keeps_every_message_and_block_and_leaves_a_stub_that_names_the_call() -> None:
    items = _history()
    sent = copy.deepcopy(items)
    written = CLINE.write(compact(CLINE.read(items), DROP_ALL))["messages"]
    assert items == sent
    assert len(written) == len(sent)
    for before, after in zip(sent, written, strict=True):
        assert {k: v for k, v in after.items() if k != "content"} == {
            k: v for k, v in before.items() if k != "content"
        }
        assert [b["type"] for b in after["content"]] == [b["type"] for b in before["content"]]
        for old, new in zip(before["content"], after["content"], strict=True):
            if old["type"] != "tool_result":
                assert new == old  # calls, thinking, the task, the environment details: as they were
    stubs = {
        b["tool_use_id"]: b["content"]
        for m in written
        for b in m["content"]
        if b["type"] == "tool_result" and "was removed; recall it by call id" in b["content"]
    }
    assert "toolu_01A7kq" in stubs and "toolu_01A7kq" in stubs["toolu_01A7kq"]
    assert "toolu_01H8jc" not in stubs  # the last message is preserved
    # whatever truncation range Cline holds, it sends the same turns as before
    for end in (3, 5, 9):
        shape = [(m["role"], len(m["content"])) for m in rules.cline_sent(written, [2, end])]
        assert shape == [(m["role"], len(m["content"])) for m in rules.cline_sent(sent, [2, end])]
    rules.check_anthropic({"model": "m", "max_tokens": 1, "messages": rules.cline_sent(written, None)})


def test_a_history_whose_messages_or_blocks_moved_is_refused() -> None:
    neutral = CLINE.read(_history())
    with pytest.raises(SnapshotError, match=r"message 3.*every message in its place.*stood at 4"):
        CLINE.write(neutral[:3] + neutral[4:])
    fewer = copy.deepcopy(neutral)
    fewer[1]["content"] = fewer[1]["content"][1:]  # the thinking block gone
    with pytest.raises(SnapshotError, match=r"message 1.*held 3 blocks, now 2"):
        CLINE.write(fewer)
    with pytest.raises(SnapshotError, match="no system messages"):
        CLINE.write([{"id": "s", "role": "system", "content": [{"type": "text", "text": "rules"}]}])


def test_a_history_from_elsewhere_is_written_as_a_new_cline_file() -> None:
    """Nothing names a new file's messages yet: a history read from another format is written as it is."""
    plain = [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}]},
    ]
    assert CLINE.write(from_anthropic(plain))["messages"] == plain


def test_summaries_in_place_of_messages_cannot_be_written_back() -> None:
    """The offload strategy's compress mode replaces groups of messages with a summary: Cline would then
    read other messages at the indices it holds, so the writer refuses the result (use compact mode)."""
    neutral = CLINE.read(_history())
    strategy = tt.OffloadStrategy(
        RecordingSummarizer(),
        config=tt.OffloadConfig(
            mode="compress", trigger_tokens=100, compress_keep_recent_count=2, group_token_threshold=800
        ),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    outcome = asyncio.run(strategy.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))))
    assert outcome.plan is not None and len(outcome.plan.messages) < len(neutral)
    with pytest.raises(SnapshotError, match="every message in its place"):
        CLINE.write(outcome.plan.messages)


@pytest.mark.parametrize("name", ["cline_history.json", "cline_history_text_tools.json"])
def test_restore_gives_back_the_file_sent(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cline writes its history with ``JSON.stringify``; a compacted file's original comes back byte for
    byte, and the compacted file keeps Cline's compact layout. With no ``--eligible-tools`` Cline's tools
    that observe the world are eligible."""
    items = _history(name)
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(items, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(path.read_text(encoding="utf-8"))
    assert detect_format(json.loads(written)) == "cline" and '","content":' in written
    assert len(json.loads(written)) == len(items)
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()


def _text_tools() -> list[dict[str, Any]]:
    return _history("cline_history_text_tools.json")


def test_calls_in_the_assistants_text_are_read_with_their_results() -> None:
    """Without native tool calling Cline's model writes each call as XML and Cline answers under a header:
    in the result's own block, or (older versions) in a block of its own before it."""
    neutral = CLINE.read(_text_tools())
    calls = {b["id"]: b for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    results = {b["id"]: b for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert calls.keys() == results.keys()
    assert [c["name"] for c in calls.values()] == [
        "read_file",
        "read_file",
        "execute_command",
        "search_files",
        "ask_followup_question",
        "replace_in_file",
        "execute_command",
    ]
    assert json.loads(calls["cline-2"]["input"]) == {"path": "tests/test_cart.py"}
    assert results["cline-2"]["output"].startswith("from decimal import Decimal")  # the header's own block
    assert results["cline-4"]["output"].startswith('"""A shopping cart')  # after the header, in its block
    assert all(keeps_its_place(c) for c in calls.values())
    # the error Cline sends after a turn without a call, and the last call (not answered yet), are text
    assert "cline-8" not in calls and "cline-17" not in calls


def test_a_header_without_its_call_just_before_is_text() -> None:
    items = _text_tools()[:3]
    items[1] = {"role": "assistant", "content": [{"type": "text", "text": "I will read it."}]}
    assert not any(b["type"] == "tool_result" for m in CLINE.read(items) for b in m["content"])


def test_a_dropped_text_protocol_result_leaves_its_header_and_a_stub_that_names_the_call() -> None:
    items = _text_tools()
    written = CLINE.write(compact(CLINE.read(items), DROP_ALL))["messages"]
    assert [m["role"] for m in written] == [m["role"] for m in items]
    assert [m for m in written if m["role"] == "assistant"] == [m for m in items if m["role"] == "assistant"]
    assert written[2]["content"][0] == items[2]["content"][0]  # a header of its own stays
    assert written[2]["content"][1]["text"].startswith("[tracetrim: the result of read_file call cline-2 ")
    assert written[4]["content"][0]["text"].startswith(
        "[read_file for 'src/cart.py'] Result:\n[tracetrim: the result of read_file call cline-4 "
    )
    assert written[8] == items[8]  # Cline's error text is not a result
    again = CLINE.read(written)  # read again, a stub is a result already shortened, under the same call id
    stub = next(b for m in again for b in m["content"] if b["type"] == "tool_result" and b["id"] == "cline-4")
    assert "was removed; recall it by call id" in stub["output"]


RANGE = "conversationHistoryDeletedRange"


def test_the_messages_cline_no_longer_sends_are_kept_as_they_are_and_never_judged() -> None:
    """Read with the task's truncation range, the messages it hides ride in place and only those Cline
    sends are judged: the first pair, and everything after the range."""
    items = _history()
    neutral = CLINE.read(items, {RANGE: [2, 9]})
    carried, live = split_carriers(neutral, "cline")
    assert [m for run in carried for m in run] == items[2:10]
    results = [b["id"] for m in live for b in m["content"] if b["type"] == "tool_result"]
    # the range ends on a call (Cline cuts after an assistant turn): its result, sent, answers no call
    assert results == ["toolu_01E1zn", "toolu_01F6vb", "toolu_01G3hd", "toolu_01H8jc"]
    written = CLINE.write(compact(neutral, DROP_ALL))["messages"]
    assert len(written) == len(items) and written[:10] == items[:10]
    assert "toolu_01F6vb (" in json.dumps(written[12])  # a stub, after the range
    assert CLINE.write(neutral)["messages"] == items
    text_tools = _text_tools()  # a range ending on a turn whose call the next sent turn answers
    neutral = CLINE.read(text_tools, {RANGE: [2, 5]})
    assert "cline-6" not in {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    assert "cline-10" in {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}


def test_a_range_that_is_not_two_indexes_is_refused_naming_the_field() -> None:
    for bad in ([2], "2-9", [2, "9"], [2, True]):
        with pytest.raises(SnapshotError, match=rf"field '{RANGE}'.*two message indexes"):
            CLINE.read(_history(), {RANGE: bad})
    assert CLINE.write(CLINE.read(_history(), {RANGE: [2, 400]}))["messages"] == _history()


def test_the_range_in_force_is_the_last_ui_messages() -> None:
    ui = [{"ts": 1, "type": "say"}, {"ts": 2, RANGE: [2, 5]}, {"ts": 3, RANGE: [2, 9]}, {"ts": 4}]
    assert deleted_range(ui) == [2, 9]
    assert deleted_range(ui[:1]) is None and deleted_range({"not": "a list"}) is None


def test_compact_reads_the_range_from_the_ui_messages_beside_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _history()
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    (tmp_path / "ui_messages.json").write_text(json.dumps([{"ts": 1, RANGE: [2, 5]}]), encoding="utf-8")
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", "--archive", str(tmp_path / "archive"), *scope]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    out, err = capsys.readouterr()
    assert "truncation range [2, 5] (ui_messages.json) kept as it is" in err
    written = json.loads(out)
    assert written[:6] == items[:6] and written != items
    (tmp_path / "ui_messages.json").write_text("[{", encoding="utf-8")  # unreadable: every message judged
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    out, err = capsys.readouterr()
    assert "ui_messages.json: not read" in err and json.loads(out)[2] != items[2]


def test_a_history_on_stdin_reads_no_ui_messages_from_the_working_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ui_messages.json").write_text(json.dumps([{RANGE: [2, 9]}]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(_history()).encode())))
    assert main(["compact", "-", "--minimum-reduction", "0", "--keep-threshold", "1"]) == 0
    assert "truncation range" not in capsys.readouterr().err
