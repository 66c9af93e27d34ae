"""Gemini CLI session files (the JSON file, and the JSONL log it appends since 0.5x): read and written
back exactly, calls and results from ``toolCalls``, shown-only records carried in place, and what a plan
writes back still resumable (``tests._provider_rules``)."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests import _provider_rules as rules
from tests._compact_plans import write_back
from tests._hang_guard import finishes
from tracetrim._snapshot import SnapshotError
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import (
    HISTORY_FORMATS,
    detect_format,
    from_gemini_cli,
    parse_history_text,
    to_gemini_cli,
)
from tracetrim.formats._gemini_cli import fold_log

SESSION_FORMAT = HISTORY_FORMATS["gemini-cli"]


def _call(
    call_id: str, name: str, args: dict[str, Any], output: str, status: str = "success"
) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": name,
        "args": args,
        "result": [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}],
        "status": status,
        "timestamp": "2026-12-05T10:00:02.000Z",
        "displayName": name,
        "description": "",
        "resultDisplay": output[:40],
        "renderOutputAsMarkdown": True,
    }


def _session() -> dict[str, Any]:
    """A session as gemini-cli-core's ChatRecordingService writes it."""
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}
    shot = {"functionResponse": {"id": "shot-3", "name": "screenshot", "response": {"output": "png"}}}
    return {
        "sessionId": "f86f5318-f47b-4433-85f8-ec9d9a417f8e",
        "projectHash": "79b6fa86e3c0d31765c7e3c6de511a7b96342a2e947135d5db396e49e27020cd",
        "startTime": "2026-12-05T10:00:00.000Z",
        "lastUpdated": "2026-12-05T10:09:00.000Z",
        "messages": [
            {
                "id": "u1",
                "timestamp": "2026-12-05T10:00:00.000Z",
                "type": "user",
                "content": "Fix the parser.",
            },
            {
                "id": "g1",
                "timestamp": "2026-12-05T10:00:01.000Z",
                "type": "gemini",
                "content": "",
                "toolCalls": [
                    _call(
                        "read_file-1", "read_file", {"absolute_path": "/r/parser.py"}, "def parse():\n" * 300
                    ),
                    _call(
                        "run_shell_command-2", "run_shell_command", {"command": "pytest"}, "1 failed\n" * 40
                    ),
                ],
                "thoughts": [{"subject": "Reading", "description": "Look first.", "timestamp": "t"}],
                "tokens": {"input": 900, "output": 40, "cached": 0, "thoughts": 12, "tool": 0, "total": 952},
                "model": "gemini-2.5-pro",
            },
            {
                "id": "i1",
                "timestamp": "2026-12-05T10:00:03.000Z",
                "type": "info",
                "content": "Model switched.",
            },
            {
                "id": "g2",
                "timestamp": "2026-12-05T10:00:04.000Z",
                "type": "gemini",
                "content": "Taking a screenshot.",
                "toolCalls": [
                    {**_call("shot-3", "screenshot", {}, "png"), "result": [shot, image]},
                    _call("glob-4", "glob", {"pattern": "*.py"}, "Tool call cancelled by user.", "cancelled"),
                ],
                "model": "gemini-2.5-pro",
            },
            {
                "id": "g3",
                "timestamp": "2026-12-05T10:00:05.000Z",
                "type": "gemini",
                "content": "The parser drops its last token; fixed.",
                "model": "gemini-2.5-pro",
            },
        ],
    }


def test_a_session_is_told_by_shape_and_written_back_exactly() -> None:
    session = _session()
    sent = copy.deepcopy(session)
    assert detect_format(session) == "gemini-cli"
    assert detect_format(session["messages"]) == "gemini-cli"
    back = SESSION_FORMAT.write_messages(SESSION_FORMAT.read(session["messages"]))
    assert json.dumps(back) == json.dumps(session["messages"])  # values and key order
    assert session == sent


def test_calls_and_results_come_from_tool_calls() -> None:
    neutral = from_gemini_cli(_session()["messages"])
    blocks = {b["id"]: b for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert blocks["read_file-1"]["output"] == "def parse():\n" * 300
    assert blocks["read_file-1"]["state"] == "success"
    assert blocks["run_shell_command-2"]["state"] == "success"
    assert blocks["shot-3"]["output"][0]["type"] == "raw"  # an image beside the response: not text
    assert blocks["glob-4"]["state"] == "interrupted"  # never a candidate
    assert [m["id"] for m in neutral if m["role"] != "system"] == ["u1", "g1", "g2", "g3"]


def test_a_shortened_result_is_written_into_its_function_response() -> None:
    neutral = from_gemini_cli(_session()["messages"])
    block = next(b for b in neutral[1]["content"] if b["type"] == "tool_result")
    block["output"] = "def parse():\n[tracetrim: shortened]"
    written = to_gemini_cli(neutral)
    call = written[1]["toolCalls"][0]
    assert call["result"] == [
        {
            "functionResponse": {
                "id": "read_file-1",
                "name": "read_file",
                "response": {"output": "def parse():\n[tracetrim: shortened]"},
            }
        }
    ]
    assert call["resultDisplay"] == _session()["messages"][1]["toolCalls"][0]["resultDisplay"]


def test_a_record_whose_calls_all_went_joins_the_next_gemini_record() -> None:
    session = _session()
    plan = {"actions": ["keep", "drop_call", "drop_call", "keep"], "tombstones": True, "recent": 1}
    rules.check_gemini_cli(session["messages"], session["messages"])
    written = write_back("gemini-cli", session, plan)
    rules.check_gemini_cli(written["messages"], session["messages"])
    assert [r["id"] for r in written["messages"]] == ["u1", "i1", "g2", "g3"]
    assert written["messages"][2]["content"].startswith("[tracetrim:")  # g1's tombstone, then g2's text
    assert written["messages"][2]["content"].endswith("Taking a screenshot.")


def test_the_cli_compacts_a_session_file_in_place_of_its_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "session-2026-12-05T10-00-f86f5318.json"
    path.write_text(json.dumps(_session(), indent=2), encoding="utf-8")
    argv = ["compact", str(path), "--eligible-tools", "read_file", "--minimum-reduction", "0"]
    argv += ["--preserve-recent", "1", "--emit", "history", "--mode", "enforce"]
    argv += ["--archive", f"file:{tmp_path / 'archive'}", "--user", "u", "--agent", "a", "--session", "s"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "read as gemini-cli" in captured.err
    written = json.loads(captured.out)
    assert {k: v for k, v in written.items() if k != "messages"} == {
        k: v for k, v in _session().items() if k != "messages"
    }
    rules.check_gemini_cli(written["messages"], _session()["messages"])
    assert len(json.dumps(written)) < len(json.dumps(_session()))


@pytest.mark.parametrize(
    ("records", "says"),
    [
        (
            [{"type": "gemini", "content": "x", "toolCalls": [{"name": "f", "args": {}}]}],
            r"message 0, block 0.*id",
        ),
        (
            [{"type": "gemini", "content": "x", "toolCalls": {"id": "a"}}],
            r"message 0.*toolCalls must be a list",
        ),
        ([{"type": "user", "content": "x", "toolCalls": []}], r"message 0.*toolCalls"),
        ([{"type": "gemini", "content": 7}], r"message 0.*content must be text"),
        ([{"type": "model", "content": "x"}], r"message 0.*type must be one of"),
    ],
)
def test_bad_records_name_the_place(records: list[Any], says: str) -> None:
    with pytest.raises(SnapshotError, match=says):
        from_gemini_cli(records)


AGENTS = Path(__file__).parents[1] / "data" / "agents"


def _log() -> Any:
    return parse_history_text((AGENTS / "gemini_cli_session.jsonl").read_text(encoding="utf-8"))


def test_a_session_log_reads_as_the_session_it_folds_to() -> None:
    """The log the CLI appends (``session-*.jsonl``) folds as its loader folds it: a later line with a
    record's id replaces it in place, a ``$set`` of ``messages`` replaces them all, ``$rewindTo`` cuts."""
    lines = _log()
    assert detect_format(lines) == "gemini-cli"
    metadata, records = fold_log(lines)
    assert metadata["summary"] == "Fix parse_date for Z suffixes" and "messages" not in metadata
    assert len({r["id"] for r in records}) == len(records)
    written = SESSION_FORMAT.write(SESSION_FORMAT.read(lines))["messages"]
    assert written == [metadata, *records]
    assert fold_log(written) == (metadata, records)
    rewound = [*lines, {"$rewindTo": records[-3]["id"]}]
    assert fold_log(rewound)[1] == records[:-3]
    assert fold_log([*lines, {"$rewindTo": "no-such-record"}])[1] == []
    again = [*rewound, records[-2], records[-1], {"$rewindTo": records[-2]["id"]}]
    assert fold_log(again)[1] == records[:-3]


def test_a_log_of_many_rewinds_folds_in_one_pass() -> None:
    """Each ``$rewindTo`` once listed every record: 60,000 records each rewound once took minutes."""
    finishes(
        "from tracetrim.formats._gemini_cli import fold_log\n"
        "meta = {'sessionId': 's', 'projectHash': 'p', 'startTime': 't', 'lastUpdated': 't'}\n"
        "def record(name):\n"
        "    return {'id': name, 'type': 'user', 'content': 'x', 'timestamp': 't'}\n"
        "lines = [meta] + [record(f'r{n}') for n in range(60_000)]\n"
        "for n in range(60_000):\n"
        "    lines += [record(f'x{n}'), {'$rewindTo': f'x{n}'}]\n"
        "assert len(fold_log(lines)[1]) == 60_000\n"
    )


def test_a_call_that_goes_takes_its_parts_and_leaves_its_signature() -> None:
    """A synced record holds its turn's parts: dropping the turn's first call takes its
    ``functionCall`` part and its ``functionResponse`` parts, and the signature Gemini 3 wants on a
    turn's first call moves to the call left; what the CLI resumes keeps Gemini's rules."""
    lines = _log()
    first = "read_file-1764496800001-a1"
    model = ScriptedDecisionModel(lambda name, q, s: 0.0 if name.endswith("_t1") else 0.9)
    compactor = tt.Compactor(
        model,
        config=tt.CompactorConfig(eligible_tools={"read_file", "run_shell_command", "glob"}),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    neutral = SESSION_FORMAT.read(lines)
    outcome = asyncio.run(compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    written = SESSION_FORMAT.write(outcome.plan.messages)["messages"]
    parts = [p for r in written for p in (r.get("content") if isinstance(r.get("content"), list) else [])]
    parts += [p for r in written for c in r.get("toolCalls", []) for p in c.get("result") or []]
    named = {(p.get("functionCall") or p.get("functionResponse") or {}).get("id") for p in parts}
    assert first not in named  # its call and every response to it went (a tombstone names it)
    turn = next(r for r in written if r.get("toolCalls") and isinstance(r["content"], list))
    calls = [p for p in turn["content"] if "functionCall" in p]
    assert [p["functionCall"]["id"] for p in calls] == ["run_shell_command-1764496800002-b2"]
    assert calls[0]["thoughtSignature"] == "c2lnbmF0dXJlLW9mLXRoZS1maXJzdC1jYWxs"
    # What the CLI resumes (the responses of a synced turn come twice, as the CLI itself sends them):
    # every call answered by the user turn after its model turn, no response without its call.
    contents = rules.gemini_cli_resumed(fold_log(written)[1])["contents"]
    made: set[str] = set()
    for k, content in enumerate(contents):
        ids = [p["functionCall"]["id"] for p in content["parts"] if "functionCall" in p]
        made.update(ids)
        answers = [p["functionResponse"]["id"] for p in content["parts"] if "functionResponse" in p]
        assert set(answers) <= made, f"content {k}: a response without its call"
        if ids:
            following = contents[k + 1]["parts"]
            assert set(ids) <= {p["functionResponse"]["id"] for p in following if "functionResponse" in p}
