"""A history kept as JSON Lines, one message a line (what many loggers and agents write), is read as the
format its messages are in, compacted, written back one message a line, and restored as the bytes sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import messages_to_dict

from tests import _provider_histories as histories
from tracetrim.cli import main
from tracetrim.formats import (
    FormatError,
    JsonLines,
    detect_format,
    dump_jsonl,
    history_format,
    parse_history_text,
)

_SCOPE = ["--user", "u", "--agent", "a", "--session", "s"]

# Every format whose history is a bare list of messages, drawn as its provider documents it.
_LISTS: dict[str, st.SearchStrategy[list[Any]]] = {
    "openai": histories.openai_chat_histories(),
    "responses": histories.responses_inputs(),
    "anthropic": histories.anthropic_requests().map(lambda body: body["messages"]),
    "bedrock": histories.bedrock_requests().map(lambda body: body["messages"]),
    "gemini": histories.gemini_requests().map(lambda body: body["contents"]),
    "ollama": histories.ollama_requests().map(lambda body: body["messages"]),
    "ai-sdk": histories.ai_sdk_messages(),
    "pydantic-ai": histories.pydantic_ai_messages(),
    "langchain": histories.langchain_histories().map(messages_to_dict),
    "inspect": histories.inspect_messages(),
}


def _names_a_tool(messages: list[Any]) -> bool:
    """Whether anything after the first message mentions a tool: what tells one chat format from another."""
    return any("tool" in json.dumps(m).lower() for m in messages[1:])


def _calls_a_tool(messages: list[Any], fmt: str) -> bool:
    """Whether ``messages``, read in ``fmt`` (which must take them), still hold a tool call."""
    return any(message.get("tool_calls") for message in history_format(fmt).read(messages))


def _compact(tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[bytes, str | None]:
    """``path`` compacted in ENFORCE with every result judged removable: the history written back and
    the archive reference of what was sent (None when nothing changed, so nothing was archived)."""
    archive = tmp_path / "archive"
    args = ["compact", str(path), "--mode", "enforce", "--archive", str(archive), *_SCOPE]
    args += ["--eligible-tools", "*", "--minimum-reduction", "0", "--keep-threshold", "1"]
    assert main([*args, "--emit", "history"]) == 0, capsys.readouterr().err
    written = capsys.readouterr().out.encode("utf-8")
    if not archive.exists():
        return written, None
    assert main(["archive", "list", "--archive", str(archive), *_SCOPE]) == 0
    refs = json.loads(capsys.readouterr().out)
    return written, refs[-1]["ref"]


@pytest.mark.parametrize("fmt", sorted(_LISTS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_message_a_line_reads_as_its_format_and_comes_back_a_message_a_line(
    fmt: str,
    data: st.DataObject,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    messages = data.draw(_LISTS[fmt])
    assert len(messages) >= 2
    text = dump_jsonl(messages)
    parsed = parse_history_text(text)
    assert isinstance(parsed, JsonLines) and parsed == messages
    found = detect_format(parsed)
    assert found == detect_format(messages)  # as the same list read as one JSON array
    assert found == fmt or not _names_a_tool(messages)

    tmp_path = tmp_path_factory.mktemp(fmt)
    path = tmp_path / "history.jsonl"
    path.write_text(text, encoding="utf-8")
    written, ref = _compact(tmp_path, path, capsys)
    if ref is None:  # too short to compact: the file comes back as its own bytes
        assert written == text.encode("utf-8")
        return
    back = parse_history_text(written)
    assert isinstance(back, (JsonLines, list)) and all(isinstance(m, dict) for m in back)
    if len(back) > 1:  # one line reads as plain JSON; more read as JSONL, each line a message
        # A history whose every tool call went may read as another chat format; it is still its own.
        assert isinstance(back, JsonLines) and (
            detect_format(back) == found or not _calls_a_tool(back, found)
        )
    assert written.endswith(b"\n") and b"\n\n" not in written

    restore = ["restore", "--archive", str(tmp_path / "archive"), *_SCOPE, ref, "--format", "sent"]
    assert main(restore) == 0
    assert capsys.readouterr().out.encode("utf-8") == text.encode("utf-8")


def test_a_file_of_lines_that_are_not_all_messages_is_refused_naming_what_it_looks_like() -> None:
    lines = '{"role": "user", "content": "hi"}\n{"event": "stop"}\n'
    with pytest.raises(FormatError, match=r"JSONL of 2 lines whose first has role 'user'.*not a history"):
        detect_format(parse_history_text(lines))
    header = '{"working_dir": "/tmp", "description": "x"}\n{"role": "user", "content": "hi"}\n'
    with pytest.raises(FormatError, match="keys working_dir, description"):
        detect_format(parse_history_text(header))


def test_a_message_a_line_keeps_its_separators_and_line_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The written file is laid out as the sent one (compact separators, CRLF), not as tracetrim would."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the parser"}]
    for n in range(6):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"n": n})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"line {n}\n" * 300})
    messages.append({"role": "assistant", "content": "fixed"})
    text = "".join(json.dumps(m, separators=(",", ":")) + "\r\n" for m in messages)
    path = tmp_path / "run.jsonl"
    path.write_bytes(text.encode("utf-8"))
    written, _ = _compact(tmp_path, path, capsys)
    assert b"[tracetrim: dropped" in written and len(written) < len(text) * 2 // 3
    lines = written.split(b"\r\n")
    assert lines[-1] == b"" and all(b"\n" not in line for line in lines)
    assert all(line.startswith(b'{"role":"') for line in lines[:-1])
    assert [json.loads(line)["role"] for line in lines[:2]] == ["user", "assistant"]
