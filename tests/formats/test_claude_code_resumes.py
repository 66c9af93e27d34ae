"""Claude Code itself writes a session and resumes the one tracetrim writes back: the real CLI
(``@anthropic-ai/claude-code``, pinned in ``tests/js``) runs a scripted task (reading, listing, searching
real files), then ``claude -p --resume`` on the compacted session, and the request it then sends
holds every ``tool_use`` answered by its ``tool_result`` in the next user message, no result without its
call, and every call and result as the session sent them (or, for results, marked shortened).

The CLI talks to a stub of the Messages API on 127.0.0.1 (`tests._api_stub`: the real API is not
reachable here). ``.ci/run`` installs the CLI (``npm ci --prefix tests/js``); without it the tests skip
outside CI and fail in CI.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._api_stub import api_stub, run_agent
from tests._compact_plans import RESUME_PLANS, written_with
from tests._foreign_histories import foreign_histories, said
from tests.conftest import service_unavailable
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, JsonLines, detect_format, dump_jsonl, parse_history_text

CLI = Path(__file__).parents[1] / "js" / "node_modules" / ".bin" / "claude"
SESSION = Path(__file__).parents[1] / "data" / "agents" / "claude_code_session.jsonl"


def _env(home: Path, stub: Any) -> dict[str, str]:
    host, port = stub.server_address[:2]
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": f"http://{host!s}:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-stub",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }


def _cli() -> Path:
    if not CLI.exists():
        service_unavailable("Claude Code is not installed (npm ci --prefix tests/js)")
    return CLI


def _resume(lines: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    """The messages Claude Code sends when it resumes the session ``lines`` (in a fresh home)."""
    cli = _cli()
    entry = next(e for e in lines if "sessionId" in e)
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    # Claude Code keeps a session under its working directory's name, "/" and "." written as "-".
    project = home / ".claude" / "projects" / str(work).replace("/", "-").replace(".", "-")
    project.mkdir(parents=True)
    moved = [{**e, "cwd": str(work)} if "cwd" in e else e for e in lines]
    (project / f"{entry['sessionId']}.jsonl").write_text(dump_jsonl(JsonLines(moved)), encoding="utf-8")
    with api_stub() as stub:
        argv = [str(cli), "-p", "go on", "--resume", entry["sessionId"], "--max-turns", "1"]
        printed = run_agent([*argv, "--output-format", "json"], work, _env(home, stub))
        requests = [r["body"] for r in stub.requests if r["body"].get("messages")]
    assert json.loads(printed)["is_error"] is False
    assert requests, "Claude Code sent no request"
    messages: list[dict[str, Any]] = requests[-1]["messages"]
    return messages


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message["content"]
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in _blocks(message, "text")]


def _check(messages: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    """Anthropic's pairing rule on what Claude Code sent, and every call and result as first sent."""
    calls = {b["id"]: b for m in sent for b in _blocks(m, "tool_use")}
    results = {b["tool_use_id"]: b for m in sent for b in _blocks(m, "tool_result")}
    for i, message in enumerate(messages):
        uses = [b["id"] for b in _blocks(message, "tool_use")]
        if uses:
            answered = [b["tool_use_id"] for b in _blocks(messages[i + 1], "tool_result")]
            assert messages[i + 1]["role"] == "user" and set(uses) <= set(answered), (i, uses, answered)
        for block in _blocks(message, "tool_result"):
            made = [b["id"] for b in _blocks(messages[i - 1], "tool_use")]
            assert block["tool_use_id"] in made, (i, "a result without its call", block["tool_use_id"])
            strip = {k: v for k, v in block.items() if k != "cache_control"}
            first = {k: v for k, v in results[block["tool_use_id"]].items() if k != "cache_control"}
            assert strip == first or "tracetrim" in json.dumps(strip), (i, "a result not as sent")
        for block in _blocks(message, "tool_use"):
            assert {k: v for k, v in block.items() if k != "cache_control"} == {
                k: v for k, v in calls[block["id"]].items() if k != "cache_control"
            }


def _resumed_whole(lines: list[dict[str, Any]], written: list[dict[str, Any]], home: Path) -> None:
    """Claude Code resumes ``lines`` and ``written`` (their compaction) validly, and follows the
    parentUuid chain back from the last entry: a broken link would silently cut the history there, so
    every call the file keeps reaches the request, and the task is still the first thing said."""
    sent = _resume(lines, home / "before")
    after = _resume(written, home / "after")
    _check(sent, sent)
    _check(after, sent)
    before = {b["id"] for m in sent for b in _blocks(m, "tool_use")}
    in_file = {
        b["id"]
        for e in written
        if isinstance(e.get("message"), dict)
        for b in _blocks(e["message"], "tool_use")
    }
    assert {b["id"] for m in after for b in _blocks(m, "tool_use")} == before & in_file
    assert _texts(after[0]) == _texts(sent[0])
    uuids = {e["uuid"] for e in written if "uuid" in e}
    assert all(e.get("parentUuid") in uuids for e in written if e.get("parentUuid") is not None)


@pytest.mark.parametrize("plan", sorted(RESUME_PLANS))
def test_claude_code_resumes_what_tracetrim_writes(plan: str, tmp_path: Path) -> None:
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    written = written_with("claude-code", lines, RESUME_PLANS[plan])
    assert (written == lines) == (plan == "as-read")
    _resumed_whole(lines, written, tmp_path)


def _tool(call_id: str, name: str, **given: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": given}]


def _session_claude_code_writes(home: Path) -> list[dict[str, Any]]:
    """The session Claude Code itself writes for a scripted task on real files: it reads a module, lists
    a folder and searches it, then answers."""
    cli = _cli()
    work = home / "work"
    (work / "dates").mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(150))
    parse = work / "dates" / "parse.py"
    parse.write_text("def parse_date(text):\n    return text\n" + helpers, encoding="utf-8")
    script = [
        [
            {"type": "text", "text": "Let me read the parser first."},
            *_tool("toolu_01R", "Read", file_path=str(parse)),
        ],
        _tool("toolu_02B", "Bash", command=f"ls -la {work / 'dates'} && seq 1 300", description="List"),
        _tool("toolu_03G", "Grep", pattern="def helper_1", path=str(work / "dates"), output_mode="content"),
        [{"type": "text", "text": "parse_date is a stub."}],
    ]
    with api_stub(script) as stub:
        argv = [str(cli), "-p", "what does parse_date do?", "--allowedTools", "Read Bash Grep"]
        run_agent([*argv, "--output-format", "json"], work, _env(home, stub))
    (session,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    lines: list[dict[str, Any]] = parse_history_text(session.read_text(encoding="utf-8"))
    return lines


@pytest.mark.parametrize("plan", sorted(p for p in RESUME_PLANS if p != "as-read"))
def test_a_session_claude_code_wrote_compacts_and_resumes(plan: str, tmp_path: Path) -> None:
    """Today's sessions hold more than messages (attachments in the parentUuid chain, request records,
    cost and queue lines): they are kept in place, and the compacted session resumes."""
    lines = _session_claude_code_writes(tmp_path / "run")
    assert detect_format(lines) == "claude-code"
    shape = HISTORY_FORMATS["claude-code"]
    neutral = shape.read(lines)
    assert shape.write(neutral)["messages"] == lines
    calls = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    assert calls == {"toolu_01R", "toolu_02B", "toolu_03G"}
    written = written_with("claude-code", lines, RESUME_PLANS[plan])
    assert written != lines
    _resumed_whole(lines, written, tmp_path)


@pytest.mark.parametrize("source", ["openai", "agentscope"])
def test_a_history_from_another_format_resumes_whole(source: str, tmp_path: Path) -> None:
    """Written as a Claude Code session, a history from elsewhere is one ``parentUuid`` chain the CLI
    follows back from the last entry: the request it sends on resume holds every call and result, each
    result answering the call just before it, and every text, in order."""
    history = foreign_histories()[source]
    written = list(HISTORY_FORMATS["claude-code"].write(history)["messages"])
    assert HISTORY_FORMATS["claude-code"].write(history)["messages"] == written  # the same ids each time
    sent = _resume(written, tmp_path)
    _check(sent, sent)
    assert [b["id"] for m in sent for b in _blocks(m, "tool_use")] == said(history, "tool_call")
    assert [b["tool_use_id"] for m in sent for b in _blocks(m, "tool_result")] == said(history, "tool_result")
    texts = [t for m in sent for t in _texts(m)]
    assert all(text in texts for text in said(history, "text", "text"))


def test_an_entry_written_for_a_message_that_had_none_joins_the_chain(tmp_path: Path) -> None:
    """A message the session held no entry for (a summary offload wrote, a note a host added), in the
    middle of a session Claude Code wrote, is chained where it stands: the entry after it names it as
    its parent, and Claude Code resumes everything before and after it."""
    lines = parse_history_text(SESSION.read_text(encoding="utf-8"))
    shape = HISTORY_FORMATS["claude-code"]
    neutral = shape.read(lines)
    first = next(n for n, m in enumerate(neutral) if m["role"] == "assistant" and m["content"])
    note = {"id": "note", "role": "user", "content": [{"type": "text", "text": "A note the host added."}]}
    written = list(shape.write([*neutral[:first], note, *neutral[first:]])["messages"])
    (added,) = [e for e in written if e.get("message", {}).get("content") == [note["content"][0]]]
    assert added["sessionId"] == next(e["sessionId"] for e in lines if "sessionId" in e)
    assert any(e.get("parentUuid") == added["uuid"] for e in written)
    sent = _resume(lines, tmp_path / "before")
    after = _resume(written, tmp_path / "after")
    _check(after, sent)
    assert "A note the host added." in [t for m in after for t in _texts(m)]
    calls = [b["id"] for m in sent for b in _blocks(m, "tool_use")]
    assert [b["id"] for m in after for b in _blocks(m, "tool_use")] == calls


def test_claude_code_recalls_a_dropped_result_through_tracetrim_mcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The session compacted in ENFORCE (its originals archived), Claude Code resumes it with
    `tracetrim mcp` as an MCP server, its model asks for the dropped Read back by the call id the
    tombstone names, and the next request carries the original result, byte for byte."""
    cli = _cli()
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(SESSION), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [original] = [
        b["content"]
        for e in parse_history_text(SESSION.read_text(encoding="utf-8"))
        if isinstance(e.get("message", {}).get("content"), list)
        for b in e["message"]["content"]
        if b.get("tool_use_id") == "toolu_01A"
    ]
    assert "[tracetrim: dropped Read call toolu_01A" in json.dumps(written)
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    entry = next(e for e in written if "sessionId" in e)
    project = home / ".claude" / "projects" / str(work).replace("/", "-").replace(".", "-")
    project.mkdir(parents=True)
    moved = [{**e, "cwd": str(work)} if "cwd" in e else e for e in written]
    (project / f"{entry['sessionId']}.jsonl").write_text(dump_jsonl(JsonLines(moved)), encoding="utf-8")
    server = {"command": sys.executable, "args": ["-m", "tracetrim", "mcp", *archive]}
    tool = "mcp__tracetrim__recall_tool_result"  # Claude Code's name for an MCP server's tool
    script = [
        [{"type": "tool_use", "id": "toolu_r1", "name": tool, "input": {"call_id": "toolu_01A"}}],
        [{"type": "text", "text": "Recalled."}],
    ]
    with api_stub(script) as stub:
        argv = [str(cli), "-p", "go on", "--resume", entry["sessionId"], "--max-turns", "3"]
        argv += ["--mcp-config", json.dumps({"mcpServers": {"tracetrim": server}}), "--allowedTools", tool]
        printed = run_agent([*argv, "--output-format", "json"], work, _env(home, stub))
        requests = [r["body"] for r in stub.requests if r["body"].get("messages") and r["body"].get("tools")]
    assert json.loads(printed)["is_error"] is False
    [answer] = [
        b for b in _blocks(requests[-1]["messages"][-1], "tool_result") if b["tool_use_id"] == "toolu_r1"
    ]
    assert [part["text"] for part in answer["content"]] == [original]
