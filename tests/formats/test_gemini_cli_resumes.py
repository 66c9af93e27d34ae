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
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._compact_plans import compact
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
    done = subprocess.run(
        [str(node), str(JS / "gemini_cli_resume.mjs"), *map(str, paths.values())],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    resumed = json.loads(done.stdout)
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
