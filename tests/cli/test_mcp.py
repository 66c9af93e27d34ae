"""`tracetrim mcp`: the recall tool served over MCP on stdio, driven by the MCP SDK's own client (the
real protocol, the real subprocess): an agent given a compacted session fetches what a note names."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tracetrim.cli import main

QWEN = Path(__file__).parents[1] / "data" / "agents" / "qwen_code_session.jsonl"
SCOPE = ["--user", "u", "--agent", "a", "--session", "s"]


def _original(call_id: str) -> str:
    """The result text the session held for ``call_id`` before any compaction."""
    for line in QWEN.read_text(encoding="utf-8").splitlines():
        for part in json.loads(line).get("message", {}).get("parts", []):
            response = part.get("functionResponse")
            if response and response["id"] == call_id:
                output: str = response["response"]["output"]
                return output
    raise AssertionError(call_id)


@pytest.fixture
def archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """An archive holding the Qwen Code fixture as sent, compacted in ENFORCE with every result judged
    removable (its first read shortened or dropped)."""
    folder = tmp_path / "archive"
    args = ["compact", str(QWEN), "--mode", "enforce", "--archive", str(folder), *SCOPE]
    assert main([*args, "--eligible-tools", "*", "--minimum-reduction", "0", "--keep-threshold", "1"]) == 0
    capsys.readouterr()
    return folder


def _server(archive: Path, *more: str) -> StdioServerParameters:
    command = ["-m", "tracetrim", "mcp", "--archive", str(archive), *SCOPE, *more]
    return StdioServerParameters(command=sys.executable, args=command)


async def _session(params: StdioServerParameters, calls: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    async with Client(params) as client:
        tools = await client.list_tools()
        return tools, [await client.call_tool("recall_tool_result", arguments) for arguments in calls]


def test_an_mcp_client_recalls_the_original_result_by_call_id(archive: Path, tmp_path: Path) -> None:
    records = tmp_path / "followups.jsonl"
    tools, (found, missing) = asyncio.run(
        _session(_server(archive, "--records", str(records)), [{"call_id": "call_01"}, {"call_id": "nope"}])
    )
    [tool] = tools.tools
    assert tool.name == "recall_tool_result" and tool.input_schema["required"] == ["call_id"]
    assert not found.is_error and found.content[0].text == _original("call_01")
    assert found.structured_content is None  # the text itself, as the tool result it stands for
    assert (
        not missing.is_error and "nothing to recall" in missing.content[0].text
    )  # a sentence, not a failure
    [followup] = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert followup["event"] == "recalled" and followup["call_id"] == "call_01"


def test_an_archive_that_is_not_there_is_one_line_before_serving(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "mcp", "--archive", str(tmp_path / "absent"), *SCOPE],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert (
        done.stderr.strip() == f"tracetrim: error: archive folder {str(tmp_path / 'absent')!r} does not exist"
    )
