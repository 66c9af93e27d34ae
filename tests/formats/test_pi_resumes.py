"""pi itself resumes the sessions tracetrim writes back: pi's own session manager (``SessionManager.open``,
``buildSessionContext``) and the conversion it sends through (``convertToLlm``), from
``@mariozechner/pi-coding-agent`` pinned in ``tests/js``, turn a compacted session into the messages pi
sends. There every toolCall is answered by the toolResult after it, no result is without its call,
every call is as first sent, and every call the file keeps is there; what compaction hid stays hidden.

``.ci/run`` installs the package (``npm ci --prefix tests/js``); without it the tests skip outside CI and
fail in CI.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._api_stub import run_agent
from tests._foreign_histories import foreign_histories, said
from tests._provider_rules import check_pi, pi_calls
from tests.conftest import service_unavailable
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS, JsonLines, dump_jsonl, parse_history_text

JS = Path(__file__).parents[1] / "js"
SESSION = Path(__file__).parents[1] / "data" / "agents" / "pi_session.jsonl"
PI = HISTORY_FORMATS["pi"]


def _resume(sessions: dict[str, list[Any]], folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The messages pi sends when it resumes each session of ``sessions`` (by name)."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@mariozechner" / "pi-coding-agent").is_dir():
        service_unavailable("pi-coding-agent is not installed (npm ci --prefix tests/js)")
    paths = {}
    for name, lines in sessions.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text(dump_jsonl(JsonLines(lines)), encoding="utf-8")
    env = {**os.environ, "PI_SESSION_DIR": str(folder)}
    resumed = json.loads(
        run_agent([str(node), str(JS / "pi_resume.mjs"), *map(str, paths.values())], JS, env)
    )
    return {name: resumed[str(path)] for name, path in paths.items()}


def _compacted(lines: list[Any], dropped: tuple[str, ...]) -> list[Any]:
    """``lines`` compacted in ENFORCE: the pairs whose question names end with one of ``dropped``
    (``_t1`` is the first pair judged) dropped, tombstones on; the rest kept."""
    model = ScriptedDecisionModel(lambda name, q, s: 0.0 if name.endswith(dropped) else 0.99)
    compactor = tt.Compactor(
        model,
        config=tt.CompactorConfig(eligible_tools={"read", "bash", "edit"}, minimum_reduction=0.0),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    neutral = PI.read(lines)
    outcome = asyncio.run(compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    written: list[Any] = PI.write(outcome.plan.messages)["messages"]
    return written


def test_pi_resumes_its_own_session_and_compacted_copies(tmp_path: Path) -> None:
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    every = _compacted(lines, ("",))
    some = _compacted(lines, ("_t1", "_t3"))
    resumed = _resume({"sent": lines, "every": every, "some": some}, tmp_path)
    sent = resumed["sent"]
    assert set(pi_calls(sent)) == {f"toolu_01{c}" for c in "ABCDEFG"}
    for name in ("every", "some"):
        check_pi(resumed[name], sent)
        kept = {p["id"] for e in (every if name == "every" else some) for p in _parts(e)}
        assert set(pi_calls(resumed[name])) == kept & set(pi_calls(sent)), name
    assert set(pi_calls(resumed["every"])) == {"toolu_01F", "toolu_01G"}  # the recent ones stay
    assert {"toolu_01F", "toolu_01G"} < set(pi_calls(resumed["some"])) < set(pi_calls(sent))
    # what pi's compaction hid stays hidden, its summary first; what the branch said stays off the path
    for name in ("every", "some"):
        first = resumed[name][0]
        assert first["role"] == "user" and "ledger totals fixed" in json.dumps(first)
        assert "off by one cent after import" not in json.dumps(resumed[name])
        assert "Try the float path" not in json.dumps(resumed[name])
        assert len(resumed[name]) >= 5


def _parts(entry: Any) -> list[dict[str, Any]]:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return (
        [p for p in content if isinstance(p, dict) and p.get("type") == "toolCall"]
        if isinstance(content, list)
        else []
    )


def test_the_tree_stays_whole_where_entries_went() -> None:
    """Every parent a written entry names is written, the path pi resumes from is one chain in file
    order, and the compaction's first kept entry is still there."""
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    written = _compacted(lines, ("",))
    assert len(written) < len(lines)
    ids = [e["id"] for e in written[1:]]
    assert all(e["parentId"] is None or e["parentId"] in ids for e in written[1:])
    assert all(ids.index(e["parentId"]) < ids.index(e["id"]) for e in written[1:] if e["parentId"])
    [compaction] = [e for e in written if e["type"] == "compaction"]
    assert compaction["firstKeptEntryId"] in ids
    assert written[0] == lines[0] and written[-1] == lines[-1]


def test_a_history_from_elsewhere_is_a_session_pi_resumes(tmp_path: Path) -> None:
    """An OpenAI chat history and an AgentScope one written as a pi session: a header, every message
    an entry in one chain, every call and result in what pi sends."""
    histories = foreign_histories()
    sessions = {}
    for name, neutral in histories.items():
        neutral = [m for m in neutral if m["role"] != "system"]  # pi keeps its system prompt apart
        sessions[name] = PI.write(neutral)["messages"]
        assert sessions[name][0]["type"] == "session"
    resumed = _resume(sessions, tmp_path)
    for name, neutral in histories.items():
        messages = resumed[name]
        check_pi(messages, messages)
        assert set(pi_calls(messages)) == set(said(neutral, "tool_call"))
        assert {m["toolCallId"] for m in messages if m["role"] == "toolResult"} == set(
            said(neutral, "tool_result")
        )


def test_a_system_message_is_refused_naming_it() -> None:
    with pytest.raises(tt.SnapshotError, match="a pi session holds no system messages"):
        PI.write([{"id": "s", "role": "system", "content": [{"type": "text", "text": "rules"}]}])


def test_restore_gives_back_the_session_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    archive = ["--archive", str(tmp_path / "archive"), *scope]
    args = ["compact", str(SESSION), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(SESSION.read_text(encoding="utf-8"))
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == SESSION.read_bytes()


def test_a_compaction_keeps_from_the_next_entry_of_its_path_when_its_first_went(tmp_path: Path) -> None:
    """The first entry a pi compaction kept went with its call (its turn joined the next); an entry of
    another branch stands after it in the file. The compaction must name the next entry of the path,
    or pi would send nothing from before it."""

    def entry(kind: str, eid: str, parent: str | None, **fields: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            **fields,
        }

    def call(call_id: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": call_id}}],
            "stopReason": "toolUse",
            "timestamp": 1,
        }

    def result(call_id: str) -> dict[str, Any]:
        text = "\n".join(f"{call_id} line {n}" for n in range(200))
        return {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 1,
        }

    lines: list[Any] = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
        entry("message", "u1", None, message={"role": "user", "content": "read both", "timestamp": 1}),
        entry("message", "a1", "u1", message=call("c1")),
        entry("message", "x1", "u1", message={"role": "user", "content": "another branch", "timestamp": 1}),
        entry("message", "r1", "a1", message=result("c1")),
        entry("message", "a2", "r1", message=call("c2")),
        entry("message", "r2", "a2", message=result("c2")),
        entry("compaction", "k1", "r2", summary="read c1 and c2", firstKeptEntryId="a1", tokensBefore=900),
        entry("message", "u2", "k1", message={"role": "user", "content": "now fix it", "timestamp": 1}),
        entry(
            "message",
            "a3",
            "u2",
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "stopReason": "stop",
                "timestamp": 1,
            },
        ),
    ]
    for n in range(4, 10):  # turns enough after it that the two calls are not among the recent ones
        role = "user" if n % 2 == 0 else "assistant"
        said = {"role": role, "content": [{"type": "text", "text": f"turn {n}"}], "timestamp": 1}
        lines.append(entry("message", f"t{n}", lines[-1]["id"], message=said))
    written = _compacted(lines, ("_t1",))
    [compaction] = [e for e in written if e["type"] == "compaction"]
    assert compaction["firstKeptEntryId"] == "a2"
    resumed = _resume({"written": written}, tmp_path)["written"]
    check_pi(resumed, _resume({"sent": lines}, tmp_path)["sent"])
    assert set(pi_calls(resumed)) == {"c2"} and "another branch" not in json.dumps(resumed)
