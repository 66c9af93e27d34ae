"""Codex itself writes a rollout and resumes the one tracetrim writes back: the real CLI (``@openai/codex``,
pinned in ``tests/js``) runs a scripted task (real commands on real files), then ``codex exec resume`` on
the compacted rollout, and the Responses request it then sends
holds every ``function_call`` answered by its ``function_call_output`` later on, no output without its
call, every ``reasoning`` item followed by the item it came with, every call and output as first sent
(or, for outputs, marked shortened), and every call the file keeps.

The CLI talks to a stub of the Responses API on 127.0.0.1 (`tests._api_stub`: the real API is not
reachable here). ``.ci/run`` installs the CLI (``npm ci --prefix tests/js``); without it the tests skip
outside CI and fail in CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests._api_stub import api_stub, run_agent
from tests._compact_plans import RESUME_PLANS, written_with
from tests._foreign_histories import foreign_histories, said
from tests.conftest import service_unavailable
from tracetrim.formats import HISTORY_FORMATS, JsonLines, detect_format, dump_jsonl, parse_history_text

CLI = Path(__file__).parents[1] / "js" / "node_modules" / ".bin" / "codex"
ROLLOUT = Path(__file__).parents[1] / "data" / "agents" / "codex_rollout.jsonl"


def _cli() -> Path:
    if not CLI.exists():
        service_unavailable("Codex is not installed (npm ci --prefix tests/js)")
    return CLI


def _codex(home: Path, work: Path, stub: Any, *args: str) -> None:
    """Run ``codex exec ARGS`` in ``work`` against ``stub``, with ``home`` as its ``CODEX_HOME``."""
    host, port = stub.server_address[:2]
    provider = {
        "name": '"stub"',
        "base_url": f'"http://{host!s}:{port}/v1"',
        "wire_api": '"responses"',
        "env_key": '"OPENAI_API_KEY"',
    }
    settings = [f"model_providers.stub.{k}={v}" for k, v in provider.items()]
    config = [arg for s in ["model_provider=stub", "model=gpt-5.1-codex", *settings] for arg in ("-c", s)]
    env = {"PATH": os.environ.get("PATH", ""), "CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-stub"}
    run_agent([str(_cli()), "exec", *config, "--skip-git-repo-check", *args], work, env)


def _resume(lines: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    """The input items Codex sends when it resumes the rollout ``lines`` (in a fresh ``CODEX_HOME``)."""
    _cli()
    session = next(e["payload"]["id"] for e in lines if e.get("type") == "session_meta")
    day = home / "sessions" / "2025" / "10" / "02"
    day.mkdir(parents=True)
    (day / f"rollout-2025-10-02T10-00-00-{session}.jsonl").write_text(dump_jsonl(JsonLines(lines)), "utf-8")
    work = home / "work"
    work.mkdir()
    with api_stub() as stub:
        _codex(home, work, stub, "resume", session, "go on")
        requests = [r["body"] for r in stub.requests if r["path"].endswith("/responses")]
    assert requests, "Codex sent no request"
    items: list[dict[str, Any]] = requests[-1]["input"]
    return items


def _check(items: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    """The Responses API's pairing rules on what Codex sent, and every call and output as first sent."""
    calls = {i["call_id"]: i for i in sent if i.get("type") == "function_call"}
    outputs = {i["call_id"]: i for i in sent if i.get("type") == "function_call_output"}
    made: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            assert item == calls[item["call_id"]], ("a call not as sent", item["call_id"])
            made.add(item["call_id"])
            later = [i["call_id"] for i in items[k + 1 :] if i.get("type") == "function_call_output"]
            assert item["call_id"] in later, ("a call without its output", item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in made, ("an output without its call", item["call_id"])
            assert item == outputs[item["call_id"]] or "tracetrim" in json.dumps(item), (
                "an output not as sent"
            )
        elif kind == "reasoning":
            assert items[k + 1].get("type") not in ("reasoning", None), ("reasoning without its item", k)


def _resumed_whole(lines: list[dict[str, Any]], written: list[dict[str, Any]], home: Path) -> None:
    """Codex resumes ``lines`` and ``written`` (their compaction) validly, every call the file keeps
    reaching the request, and the lines besides the response items kept as they were."""
    sent = _resume(lines, home / "before")
    after = _resume(written, home / "after")
    _check(sent, sent)
    _check(after, sent)
    before = {i["call_id"] for i in sent if i.get("type") == "function_call"}
    items = [e["payload"] for e in written if e.get("type") == "response_item"]
    in_file = {i["call_id"] for i in items if i.get("type") == "function_call"}
    assert {i["call_id"] for i in after if i.get("type") == "function_call"} == before & in_file
    others = [e for e in written if e.get("type") != "response_item"]
    assert others == [e for e in lines if e.get("type") != "response_item"]


@pytest.mark.parametrize("plan", sorted(RESUME_PLANS))
def test_codex_resumes_what_tracetrim_writes(plan: str, tmp_path: Path) -> None:
    lines = parse_history_text(ROLLOUT.read_text(encoding="utf-8"))
    written = written_with("codex", lines, RESUME_PLANS[plan])
    assert (written == lines) == (plan == "as-read")
    _resumed_whole(lines, written, tmp_path)


def _exec(call_id: str, cmd: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": "exec_command", "input": {"cmd": cmd}}]


def _rollout_codex_writes(home: Path) -> list[dict[str, Any]]:
    """The rollout Codex itself writes for a scripted task: it runs three commands on real files (their
    outputs as its ``exec_command`` gives them), then answers."""
    work = home / "work"
    (work / "dates").mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(150))
    (work / "dates" / "parse.py").write_text("def parse_date(text):\n    return text\n" + helpers, "utf-8")
    script = [
        _exec("call_1", "cat dates/parse.py"),
        _exec("call_2", "ls -la dates && seq 1 300"),
        _exec("call_3", "grep -n helper_1 dates/parse.py"),
        [{"type": "text", "text": "parse_date is a stub."}],
    ]
    with api_stub(script) as stub:
        _codex(home, work, stub, "--sandbox", "danger-full-access", "what does parse_date do?")
    (rollout,) = (home / "sessions").rglob("rollout-*.jsonl")
    lines: list[dict[str, Any]] = parse_history_text(rollout.read_text(encoding="utf-8"))
    return lines


@pytest.mark.parametrize("plan", sorted(p for p in RESUME_PLANS if p != "as-read"))
def test_a_rollout_codex_wrote_compacts_and_resumes(plan: str, tmp_path: Path) -> None:
    """Today's rollouts hold more than response items (world state, token records, item events): they
    are kept in place, and the compacted rollout resumes."""
    lines = _rollout_codex_writes(tmp_path / "run")
    assert detect_format(lines) == "codex"
    shape = HISTORY_FORMATS["codex"]
    neutral = shape.read(lines)
    assert shape.write(neutral)["messages"] == lines
    assert {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"} == {
        "call_1",
        "call_2",
        "call_3",
    }
    written = written_with("codex", lines, RESUME_PLANS[plan])
    assert written != lines
    _resumed_whole(lines, written, tmp_path)


@pytest.mark.parametrize("source", ["openai", "agentscope"])
def test_a_history_from_another_format_resumes_whole(source: str, tmp_path: Path) -> None:
    """Written as a Codex rollout, a history from elsewhere starts with the ``session_meta`` Codex needs
    and says every text in the content parts codex-rs reads: the request Codex sends on resume holds
    every call, output and text, in order, each output after its call."""
    history = foreign_histories()[source]
    written = list(HISTORY_FORMATS["codex"].write(history)["messages"])
    assert HISTORY_FORMATS["codex"].write(history)["messages"] == written  # the same id each time
    items = _resume(written, tmp_path)
    _check(items, items)
    assert [i["call_id"] for i in items if i.get("type") == "function_call"] == said(history, "tool_call")
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert outputs == said(history, "tool_result")
    texts = [p.get("text") for i in items if i.get("type") == "message" for p in i["content"]]
    assert all(text in texts for text in said(history, "text", "text"))
