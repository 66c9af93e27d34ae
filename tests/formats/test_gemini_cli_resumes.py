"""Gemini CLI itself resumes the sessions tracetrim writes back: gemini-cli-core's own loader and converter
(``@google/gemini-cli-core``, pinned in ``tests/js``) turn a compacted session log into the history the
CLI sends, and there every call is answered in the turn after it, no response is without its call,
every call is as first sent, a turn whose first call was signed still has a signed first call, and
every call the file keeps is there.

(The CLI itself sends a synced turn's responses twice, once from each record holding them; the checks
are the ones that hold for the session as the CLI wrote it.) ``.ci/run`` installs the package (``npm ci
--prefix tests/js``); without it the tests skip outside CI and fail in CI.
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
from tests._api_stub import api_stub, run_agent
from tests._compact_plans import compact
from tests._foreign_histories import foreign_histories, said
from tests.conftest import service_unavailable
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS, JsonLines, dump_jsonl, parse_history_text

JS = Path(__file__).parents[1] / "js"
SESSION = Path(__file__).parents[1] / "data" / "agents" / "gemini_cli_session.jsonl"
SHAPE = HISTORY_FORMATS["gemini-cli"]


def _resume(logs: dict[str, list[dict[str, Any]]], folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The turns Gemini CLI resumes from each session log of ``logs`` (by name)."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@google" / "gemini-cli-core").is_dir():
        service_unavailable("gemini-cli-core is not installed (npm ci --prefix tests/js)")
    paths = {}
    for name, lines in logs.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text(dump_jsonl(JsonLines(lines)), encoding="utf-8")
    printed = run_agent(
        [str(node), str(JS / "gemini_cli_resume.mjs"), *map(str, paths.values())], JS, os.environ
    )
    resumed = json.loads(printed)
    return {name: resumed[str(path)] for name, path in paths.items()}


def _parts(turns: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [p for turn in turns for p in turn["parts"] if kind in p]


def _check(turns: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    calls = {p["functionCall"]["id"]: p["functionCall"] for p in _parts(sent, "functionCall")}
    signed = {
        turn["parts"][k]["functionCall"]["id"]
        for turn in sent
        for k in [next((k for k, p in enumerate(turn["parts"]) if "functionCall" in p), None)]
        if k is not None and "thoughtSignature" in turn["parts"][k]
    }
    made: set[str] = set()
    for k, turn in enumerate(turns):
        ids = [p["functionCall"]["id"] for p in turn["parts"] if "functionCall" in p]
        for part in turn["parts"]:
            if "functionCall" in part:
                assert part["functionCall"] == calls[part["functionCall"]["id"]], "a call not as sent"
            if "functionResponse" in part:
                assert part["functionResponse"]["id"] in made | set(ids), "a response without its call"
        made.update(ids)
        if ids:
            answers = {p["functionResponse"]["id"] for p in turns[k + 1]["parts"] if "functionResponse" in p}
            assert set(ids) <= answers, ("calls not answered in the next turn", ids)
            first = next(p for p in turn["parts"] if "functionCall" in p)
            was = next(
                p for s in sent for p in s["parts"] if "functionCall" in p and p["functionCall"]["id"] in ids
            )
            if any(i in signed for i in ids) or "thoughtSignature" in was:
                assert "thoughtSignature" in first, "a signed turn's first call lost its signature"


def _drop_first_call(neutral: list[Any]) -> list[Any]:
    """Only the signed turn's first call goes: its signature must move to the call left."""
    model = ScriptedDecisionModel(lambda name, q, s: 0.0 if name.endswith("_t1") else 0.9)
    compactor = tt.Compactor(
        model,
        config=tt.CompactorConfig(eligible_tools={"read_file", "run_shell_command"}, minimum_reduction=0.0),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    outcome = asyncio.run(compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    return list(outcome.plan.messages)


PLANS: dict[str, Any] = {
    "drop-all": {"actions": ["drop_call"], "tombstones": True, "recent": 1},
    "shorten-all": {"actions": ["drop_result"], "tombstones": True, "recent": 1},
    "mixed": {"actions": ["drop_call", "keep", "drop_result"], "tombstones": False, "recent": 2},
    "drop-first-call": _drop_first_call,
}


def test_gemini_cli_resumes_what_tracetrim_writes(tmp_path: Path) -> None:
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    logs = {"as-read": SHAPE.write(SHAPE.read(lines))["messages"], "sent": lines}
    for name, plan in PLANS.items():
        neutral = SHAPE.read(lines)
        logs[name] = SHAPE.write(plan(neutral) if callable(plan) else compact(neutral, plan))["messages"]
    resumed = _resume(logs, tmp_path)
    sent = resumed.pop("sent")
    assert resumed.pop("as-read") == sent  # the folded log resumes as the log itself
    before = {p["functionCall"]["id"] for p in _parts(sent, "functionCall")}
    for name, turns in resumed.items():
        _check(turns, sent)
        kept = {c["id"] for r in logs[name] if isinstance(r, dict) for c in r.get("toolCalls", [])}
        assert {p["functionCall"]["id"] for p in _parts(turns, "functionCall")} == before & kept, name
        if name != "shorten-all":
            assert before & kept < before, name  # something went
    moved = next(t for t in resumed["drop-first-call"] if _parts([t], "functionCall"))
    assert "thoughtSignature" in next(p for p in moved["parts"] if "functionCall" in p)


def test_a_call_left_without_its_responses_would_be_caught(tmp_path: Path) -> None:
    """The check can fail: a log whose synced calls lost their responses is refused."""
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    broken = []
    for line in lines:
        if isinstance(line.get("$set"), dict) and "messages" in line["$set"]:
            kept = [m for m in line["$set"]["messages"] if not str(m["id"]).endswith("_response")]
            bare = [{**m, "toolCalls": [{**c, "result": []} for c in m.get("toolCalls", [])]} for m in kept]
            line = {"$set": {**line["$set"], "messages": bare}}
        broken.append(line)
    resumed = _resume({"broken": broken, "sent": lines}, tmp_path)
    with pytest.raises(AssertionError, match="not answered"):
        _check(resumed["broken"], resumed["sent"])


@pytest.mark.parametrize("source", ["openai", "agentscope"])
def test_a_history_from_another_format_resumes_whole(source: str, tmp_path: Path) -> None:
    """Written as a Gemini CLI session, a history from elsewhere is a log the CLI loads (a metadata
    line, each record with an id) and resumes whole: every call answered in the turn after it, every
    call and result there in order."""
    history = foreign_histories()[source]
    written = list(SHAPE.write(history)["messages"])
    assert SHAPE.write(history)["messages"] == written  # the same ids each time
    turns = _resume({"foreign": written}, tmp_path)["foreign"]
    assert turns is not None, "the CLI did not load the session"
    _check(turns, turns)
    assert [p["functionCall"]["id"] for p in _parts(turns, "functionCall")] == said(history, "tool_call")
    answered = [p["functionResponse"]["id"] for p in _parts(turns, "functionResponse")]
    assert answered == said(history, "tool_result")


GEMINI = JS / "node_modules" / ".bin" / "gemini"
_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"disableAutoUpdate": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def _gemini(home: Path, work: Path, script: list[list[dict[str, Any]]], *args: str) -> list[dict[str, Any]]:
    """Run the Gemini CLI with ``args`` in ``work`` (its home ``home``) against a stub of the Gemini API
    answering from ``script``; the contents of the last request its agent loop sent."""
    if not GEMINI.exists():
        service_unavailable("the Gemini CLI is not installed (npm ci --prefix tests/js)")
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(_SETTINGS), encoding="utf-8")
    with api_stub(script) as stub:
        host, port = stub.server_address[:2]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "GEMINI_API_KEY": "stub",
            "GOOGLE_GEMINI_BASE_URL": f"http://{host!s}:{port}",
        }
        run_agent([str(GEMINI), *args, "--yolo", "-m", "gemini-2.5-pro"], work, env)
        requests = [r["body"] for r in stub.requests if r["body"].get("tools")]
    assert requests, "the Gemini CLI sent no request"
    contents: list[dict[str, Any]] = requests[-1]["contents"]
    return contents


def _use(name: str, **given: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": name, "name": name, "input": given}]


def _session_the_cli_writes(home: Path) -> tuple[list[dict[str, Any]], Path]:
    """The session log the Gemini CLI itself writes for a scripted task on real files: it reads a
    module, then lists the folder and globs it in one turn, then answers."""
    work = home / "work"
    (work / "dates").mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(150))
    (work / "dates" / "parse.py").write_text("def parse_date(text):\n    return text\n" + helpers, "utf-8")
    script = [
        [
            {"type": "text", "text": "Reading the parser."},
            *_use("read_file", file_path=str(work / "dates" / "parse.py")),
        ],
        [*_use("run_shell_command", command="ls -la dates && seq 1 300"), *_use("glob", pattern="**/*.py")],
        [{"type": "text", "text": "parse_date is a stub."}],
    ]
    _gemini(home, work, script, "-p", "what does parse_date do?")
    (log,) = (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    return parse_history_text(log.read_text(encoding="utf-8")), log


def _resumed(lines: list[dict[str, Any]], home: Path, log: Path) -> list[dict[str, Any]]:
    """The contents the Gemini CLI sends when it resumes ``lines`` as its latest session."""
    for old in log.parent.glob("session-*.jsonl"):
        old.unlink()
    log.write_text(dump_jsonl(JsonLines(lines)), encoding="utf-8")
    return _gemini(
        home, home / "work", [[{"type": "text", "text": "ok"}]], "--resume", "latest", "-p", "go on"
    )


def _sent_id(recorded: str) -> str:
    return recorded.split("__", 1)[1] if "__" in recorded else recorded


@pytest.mark.parametrize("plan", ["drop-all", "shorten-all", "mixed"])
def test_a_session_the_gemini_cli_wrote_compacts_and_resumes(plan: str, tmp_path: Path) -> None:
    """The CLI records the turn that sent a tool's responses, and resumes it: a shortened result is
    shortened there too, and a dropped call's responses go from it."""
    lines, log = _session_the_cli_writes(tmp_path)
    assert SHAPE.write(SHAPE.read(lines))["messages"] != [] and len(SHAPE.read(lines)) > 3
    neutral = SHAPE.read(lines)
    written = SHAPE.write(compact(neutral, PLANS[plan]))["messages"]
    sent = _resumed(lines, tmp_path, log)
    after = _resumed(written, tmp_path, log)
    _check(sent, sent)
    _check(after, sent)
    # the CLI records a call as "<tool>__<id>" and sends it as "<id>"
    kept = {_sent_id(c["id"]) for r in written if isinstance(r, dict) for c in r.get("toolCalls", [])}
    before = {p["functionCall"]["id"] for p in _parts(sent, "functionCall")}
    assert {p["functionCall"]["id"] for p in _parts(after, "functionCall")} == before & kept
    shortened = {
        _sent_id(c["id"])
        for r in written
        if isinstance(r, dict)
        for c in r.get("toolCalls", [])
        if "tracetrim" in json.dumps(c.get("result"))
    }
    for part in _parts(after, "functionResponse"):
        if part["functionResponse"]["id"] in shortened:  # every copy the CLI sends
            assert "tracetrim" in json.dumps(part), part["functionResponse"]["id"]
    if plan == "shorten-all":
        assert shortened
