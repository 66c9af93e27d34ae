"""A restore gives back exactly the bytes that were sent: every archive kind, every agent file, the CLI."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests.archive.test_archive_suite import SCOPE, Backend, backend  # noqa: F401  (the fixture over every kind)
from tests.conftest import SHAPES
from tracetrim._json import canonical_bytes, sha256_hex
from tracetrim.archive import ArchiveCorruptedError, ArchiveNotFoundError, SentDocument, restore_sent
from tracetrim.archive._protocol import snapshot_document
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS
from tracetrim.formats._file import parse_history_text

_LONG = "line of output\\n" * 200

# Each as a user's tool writes it: odd spacing and key order that a canonical encoding would not keep.
SENT: dict[str, bytes] = {
    "anthropic": (
        '{"model":   "claude-sonnet-4-5", "max_tokens": 1024, "system": "You fix bugs.",\r\n'
        ' "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],\n'
        ' "messages": [{"role": "user", "content": "fix it"},\n'
        '  {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",'
        ' "input": {"path": "a.py"}}]},\n'
        '  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",'
        f' "content": "{_LONG}"}}]}},\n'
        '  {"role": "assistant", "content": "found it"}, {"role": "user", "content": "go on"}]}\n'
    ).encode(),
    "mini-swe-agent": (
        '{"info": {"exit_status": "Submitted", "mini_version": "1.9.0"}, "messages": [\n'
        '  {"role": "system", "content": "You are a helpful assistant."},\n'
        '  {"role": "user", "content": "<pr_description>fix</pr_description>"},\n'
        '  {"role": "assistant", "content": "THOUGHT: look.\\n\\n```bash\\ncat a.py\\n```"},\n'
        f'  {{"role": "user", "content": "<returncode>0</returncode>\\n<output>\\n{_LONG}</output>"}},\n'
        '  {"role": "assistant", "content": "THOUGHT: done.\\n\\n```bash\\necho ok\\n```"},\n'
        '  {"role": "user", "content": "<returncode>0</returncode>\\n<output>\\nok\\n</output>"}\n'
        '], "trajectory_format": "mini-swe-agent-1", "instance_id": "repo__repo-1"}'
    ).encode(),
    "openai": (
        '[{"role": "user", "content": "fix it"},\n'
        ' {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",'
        ' "function": {"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}}]},\n'
        f' {{"role": "tool", "tool_call_id": "c1", "content": "{_LONG}"}},\n'
        ' {"role": "assistant", "content": "found it"}, {"role": "user", "content": "go on"}]'
    ).encode(),
    "gemini": (
        '{"contents": [{"role": "user", "parts": [{"text": "fix it"}]},\n'
        '  {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a.py"}},'
        ' "thoughtSignature": "c2ln"}]},\n'
        '  {"role": "user", "parts": [{"functionResponse": {"name": "read_file",'
        f' "response": {{"output": "{_LONG}"}}}}}}]}},\n'
        '  {"role": "model", "parts": [{"text": "found it"}]},\n'
        '  {"role": "user", "parts": [{"text": "go on"}]}],\n'
        ' "systemInstruction": {"parts": [{"text": "You fix bugs."}]},'
        '  "generationConfig": {"temperature": 0}}'
    ).encode(),
    "gemini-cli": (
        '{\n  "sessionId": "f86f5318",\n  "projectHash": "79b6fa86",\n  "messages": [\n'
        '    {"id": "u1", "type": "user", "content": "fix it"},\n'
        '    {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{"id": "read_file-1",'
        ' "name": "read_file", "args": {"path": "a.py"},'
        ' "result": [{"functionResponse": {"id": "read_file-1",'
        f' "name": "read_file", "response": {{"output": "{_LONG}"}}}}}}], "status": "success"}}]}},\n'
        '    {"id": "g2", "type": "gemini", "content": "found it"},\n'
        '    {"id": "u2", "type": "user", "content": "go on"}\n  ]\n}\n'
    ).encode(),
    "ai-sdk": (
        '[{"role": "user", "content": "fix it"},\n'
        ' {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1",'
        ' "toolName": "read_file", "input": {"path": "a.py"}}]},\n'
        ' {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read_file",'
        f' "output": {{"type": "text", "value": "{_LONG}"}}}}]}},\n'
        ' {"role": "assistant", "content": "found it"}, {"role": "user", "content": "go on"}]'
    ).encode(),
    "ollama": (
        '{"model": "qwen3:8b",\r\n "messages": [{"role": "user", "content": "fix it"},\r\n'
        '  {"role": "assistant", "content": "", "thinking": "read it first", "tool_calls":'
        ' [{"function": {"index": 0, "name": "read_file", "arguments": {"path": "a.py"}}}]},\r\n'
        f'  {{"role": "tool", "content": "{_LONG}", "tool_name": "read_file"}},\r\n'
        '  {"role": "assistant", "content": "found it"}, {"role": "user", "content": "go on"}],\r\n'
        ' "stream": false, "options": {"num_ctx": 32768}}'
    ).encode(),
    "pydantic-ai": (
        '[\n  {"parts": [{"content": "fix it", "timestamp": "2026-12-06T03:57:53.223994Z",'
        ' "part_kind": "user-prompt"}], "instructions": "You fix bugs.", "kind": "request"},\n'
        '  {"parts": [{"tool_name": "read_file", "args": {"path": "a.py"}, "tool_call_id": "c1",'
        ' "part_kind": "tool-call"}], "model_name": "gpt-5", "kind": "response"},\n'
        '  {"parts": [{"tool_name": "read_file",'
        f' "content": "{_LONG}", "tool_call_id": "c1", "part_kind": "tool-return"}}],'
        ' "kind": "request"},\n'
        '  {"parts": [{"content": "found it", "part_kind": "text"}], "kind": "response"},\n'
        '  {"parts": [{"content": "go on", "part_kind": "user-prompt"}], "kind": "request"}\n]'
    ).encode(),
    "bedrock": (
        '{"modelId": "amazon.nova-pro-v1:0", "system": [{"text": "You fix bugs."}],\n'
        ' "messages": [{"role": "user", "content": [{"text": "fix it"}]},\n'
        '  {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "read_file",'
        ' "input": {"path": "a.py"}}}]},\n'
        '  {"role": "user", "content": [{"toolResult": {"toolUseId": "t1",'
        f' "content": [{{"text": "{_LONG}"}}]}}}}, {{"cachePoint": {{"type": "default"}}}}]}},\n'
        '  {"role": "assistant", "content": [{"text": "found it"}]},'
        ' {"role": "user", "content": [{"text": "go on"}]}],'
        '\t"inferenceConfig": {"maxTokens": 512}}'
    ).encode(),
}
# A session the real google-adk wrote, as it wrote it (no final line end).
SENT["adk"] = (SHAPES / "agents" / "adk_session.json").read_bytes()


async def _compact(archive: Any, fmt: str) -> str:
    data = parse_history_text(SENT[fmt].decode())
    shape = HISTORY_FORMATS[fmt]
    neutral = shape.read(*shape.split(data))
    compactor = tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "bash"}, preserve_recent_messages=2, minimum_reduction=0.0
        ),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    outcome = await compactor.plan(
        tt.CompactionRequest(neutral, scope=SCOPE, sent=SentDocument(fmt, SENT[fmt]))
    )
    assert outcome.reason == "ARCHIVED_PROPOSAL", outcome
    assert outcome.plan is not None
    return outcome.plan.archive_ref


@pytest.mark.parametrize("fmt", sorted(SENT))
async def test_every_archive_kind_gives_back_the_sent_bytes(backend: Backend, fmt: str) -> None:  # noqa: F811
    archive = backend.archive
    ref = await _compact(archive, fmt)
    sent = await restore_sent(archive, SCOPE, ref)
    assert sent == SentDocument(fmt, SENT[fmt])
    # the neutral history is archived beside it, under the same reference
    assert (await archive.restore(SCOPE, ref))[0]["role"] in ("user", "system")


async def test_a_snapshot_without_a_sent_document_says_so(backend: Backend) -> None:  # noqa: F811
    archive = backend.archive
    ref = await archive.save(SCOPE, [{"id": "m0", "role": "user", "content": []}])
    with pytest.raises(ArchiveNotFoundError, match="holds no sent document"):
        await restore_sent(archive, SCOPE, ref)


async def test_a_tampered_sent_document_is_refused_naming_the_reference(backend: Backend) -> None:  # noqa: F811
    """Bytes planted under their own digest, whose sent document does not match its own SHA-256."""
    forged = SentDocument("openai", b"[]").as_json()
    forged["data"] = base64.b64encode(b'[{"role": "user", "content": "forged"}]').decode()
    document = snapshot_document(SCOPE, [{"id": "m0", "role": "user", "content": []}])
    document["sent"] = forged
    data = canonical_bytes(document)
    ref = sha256_hex(data)
    await backend.plant(SCOPE, ref, data)
    with pytest.raises(ArchiveCorruptedError, match=ref):
        await restore_sent(backend.archive, SCOPE, ref)


def test_the_cli_restores_the_file_as_it_was_sent(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    from tracetrim.cli import main

    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    archive = ["--archive", f"file:{tmp_path / 'archive'}", *scope]
    for fmt, raw in SENT.items():
        source = tmp_path / f"run.{fmt}.json"
        source.write_bytes(raw)
        argv = ["compact", str(source), "--mode", "enforce", "--eligible-tools", "read_file,bash"]
        argv += ["--preserve-recent", "1", "--minimum-reduction", "0", "--model-backend", "learned"]
        assert main([*argv, *archive]) == 0
        result = json.loads(capsysbinary.readouterr().out)
        assert result["changed"], result["reason"]
        for how in ("sent", fmt):
            assert main(["restore", result["archive_ref"], "--format", how, *archive]) == 0
            assert capsysbinary.readouterr().out == raw, (fmt, how)
        # another format is converted from the neutral snapshot, as before
        assert main(["restore", result["archive_ref"], "--format", "neutral", *archive]) == 0
        assert isinstance(json.loads(capsysbinary.readouterr().out), list)


def test_the_service_restores_the_history_as_it_was_sent(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    import httpx

    from tests._asgi import ThreadedServer
    from tracetrim.archive import FileArchive
    from tracetrim.service import ServiceSettings, create_app

    messages = json.loads(SENT["openai"])
    settings = ServiceSettings(model=ScriptedDecisionModel({}, default=0.0), archive=FileArchive(tmp_path))
    body = {
        "messages": messages,
        "format": "openai",
        "eligible_tool_names": ["read_file"],
        "options": {"mode": "enforce", "preserve_recent_messages": 2, "minimum_reduction": 0},
        "scope": SCOPE.as_dict(),
    }
    with ThreadedServer(create_app(settings), lifespan="on") as server:
        answer = httpx.post(f"{server.url}/v1/compact_context", json=body, timeout=30).json()
        assert answer["changed"], answer
        restore = {"scope": SCOPE.as_dict(), "archive_ref": answer["archive_ref"]}
        sent = httpx.post(f"{server.url}/v1/restore", json={**restore, "format": "sent"}, timeout=30).json()
        assert sent["format"] == "openai" and json.loads(sent["sent"]) == messages
        same = httpx.post(f"{server.url}/v1/restore", json={**restore, "format": "openai"}, timeout=30).json()
        assert same["sent"] == sent["sent"]
        other = httpx.post(f"{server.url}/v1/restore", json={**restore, "format": "anthropic"}, timeout=30)
        assert other.status_code == 200 and other.json()["format"] == "anthropic"
        bad = httpx.post(f"{server.url}/v1/restore", json={**restore, "format": "yaml"}, timeout=30)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "format"


_FILES = sorted(
    p
    for folder in ("agents", "whole_files")
    for p in (SHAPES / folder).iterdir()
    # tau2 results and Inspect logs are lists of runs (--item N), no one run's bytes
    if p.suffix in (".json", ".jsonl", ".traj") and p.name not in ("tau2_results.json", "inspect_log.json")
)


@pytest.mark.parametrize("path", _FILES, ids=lambda p: p.name)
def test_every_agent_file_restores_byte_for_byte_after_enforce(
    path: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The files today's agents write (tests/data/agents, tests/data/whole_files): compacted in ENFORCE
    through the CLI, then restored as sent, they come back as the exact bytes of the file."""
    from tracetrim.cli import main

    archive = ["--archive", f"file:{tmp_path / 'archive'}", "--user", "u", "--agent", "a", "--session", "s"]
    argv = ["compact", str(path), "--mode", "enforce", "--eligible-tools", "*", "--preserve-recent", "1"]
    argv += ["--minimum-reduction", "0", "--model-backend", "learned", *archive]
    assert main(argv) == 0
    result = json.loads(capsysbinary.readouterr().out)
    assert result["changed"], (result["reason"], result["detail"])
    assert main(["restore", result["archive_ref"], "--format", "sent", *archive]) == 0
    assert capsysbinary.readouterr().out == path.read_bytes()
