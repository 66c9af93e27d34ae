"""The real Qwen Code CLI (``@qwen-code/qwen-code``, pinned in ``tests/js/qwen``) run offline: scripted tasks
against the chat-completions stub (`tests._api_stub`), and a session resumed to see what Qwen Code sends.

Each run gets its own home, so nothing reaches the user's Qwen Code. Run this file to write
``tests/data/agents/qwen_code_session.jsonl`` again: ``python tests/_qwen_code_runs.py``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._api_stub import api_stub, run_agent
from tracetrim.formats import JsonLines, dump_jsonl

CLI = Path(__file__).parent / "js" / "qwen" / "node_modules" / "@qwen-code" / "qwen-code" / "cli.js"
INSTALL = "npm install --prefix tests/js/qwen --omit=optional --no-package-lock"
"""How ``.ci/run`` installs it (its optional packages left out: none runs here)."""
FIXTURE = Path(__file__).parent / "data" / "agents" / "qwen_code_session.jsonl"
SESSION = "3f1b6a52-8c0d-4e7a-9b21-5d6c7e8f9a01"
"""The id the fixture's session was written under (``--session-id``), so the file is the same each time."""


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        "NO_COLOR": "1",
    }


def qwen(home: Path, work: Path, stub: Any, *args: str) -> str:
    """``qwen ARGS`` in ``work`` with its own ``home`` and the stub as its OpenAI-compatible model."""
    host, port = stub.server_address[:2]
    base = ["node", str(CLI), "--auth-type", "openai", "--openai-api-key", "stub"]
    base += ["--openai-base-url", f"http://{host!s}:{port}/v1", "-m", "stub-model", "--yolo"]
    return run_agent([*base, *args], work, _env(home))


def chats(home: Path, work: Path) -> Path:
    """Where Qwen Code keeps the sessions of project ``work`` (``~/.qwen/projects/<cwd>/chats``)."""
    return home / ".qwen" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(work)) / "chats"


def _tool(call_id: str, name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]


def session_qwen_writes(home: Path) -> str:
    """The file of a session Qwen Code ran for two scripted prompts: it reads a file, lists the folder
    and reads another in parallel, answers; then, resumed, edits the file, runs it, reads a file that is
    not there and answers."""
    work = home / "work"
    work.mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(150))
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n" + helpers, "utf-8")
    (work / "README.md").write_text("# calc\nA tiny calculator.\n", "utf-8")
    calc = str(work / "calc.py")
    first = [
        [{"type": "text", "text": "I will read calc.py."}, *_tool("call_01", "read_file", file_path=calc)],
        _tool("call_02", "run_shell_command", command="ls -la && seq 1 2000", description="List the folder")
        + _tool("call_03", "read_file", file_path=str(work / "README.md")),
        [{"type": "text", "text": "add subtracts where it should add."}],
    ]
    edit = {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"}
    second = [
        _tool("call_04", "edit", **edit),
        _tool("call_05", "run_shell_command", command="python3 -c 'import calc; print(calc.add(2, 3))'"),
        _tool("call_06", "read_file", file_path=str(work / "tests.py")),
        [{"type": "text", "text": "Fixed: add(2, 3) is 5. There is no tests.py."}],
    ]
    with api_stub(first) as stub:
        qwen(home, work, stub, "--session-id", SESSION, "What is wrong in calc.py?")
    with api_stub(second) as stub:
        qwen(home, work, stub, "--resume", SESSION, "Fix it and check.")
    return (chats(home, work) / f"{SESSION}.jsonl").read_text("utf-8")


def going_on(
    lines: list[Any], home: Path, script: list[list[dict[str, Any]]] | None = None, *args: str
) -> list[dict[str, Any]]:
    """The chat-completions request bodies Qwen Code sends when it resumes the session ``lines`` (whose
    records name ``home / "work"`` as their folder) and goes on with one more prompt, ``Go on.``: its
    model following ``script`` (`tests._api_stub.api_stub`), ``args`` added to the command."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    session = next(r["sessionId"] for r in lines if isinstance(r, dict) and "sessionId" in r)
    folder = chats(home, work)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session}.jsonl").write_text(dump_jsonl(JsonLines(lines)), encoding="utf-8")
    with api_stub(script) as stub:
        qwen(home, work, stub, *args, "--resume", session, "Go on.")
        bodies = [r["body"] for r in stub.requests if r["path"].endswith("/chat/completions")]
    sent = [b for b in bodies if b.get("tools") and "Go on." in json.dumps(b["messages"])]
    assert sent, f"Qwen Code sent no request for the prompt ({len(bodies)} requests)"
    return sent


def resumed(lines: list[Any], home: Path) -> list[dict[str, Any]]:
    """The chat-completions messages Qwen Code sends first when it resumes the session ``lines`` and goes
    on with one more prompt (`going_on`)."""
    messages: list[dict[str, Any]] = going_on(lines, home)[0]["messages"]
    return messages


def moved(lines: list[Any], work: Path) -> list[Any]:
    """``lines`` with every record's folder (``cwd``) set to ``work``: Qwen Code resumes a session only
    in the project it was recorded in."""
    return [{**r, "cwd": str(work)} if isinstance(r, dict) and "cwd" in r else r for r in lines]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        text = session_qwen_writes(Path(tmp))
    FIXTURE.write_text(text, encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(text.splitlines())} records)")
