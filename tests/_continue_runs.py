"""The real Continue CLI (``@continuedev/cli``, pinned in ``tests/js``) run offline: scripted tasks against
the chat-completions stub (`tests._api_stub`), and a saved session forked to see what Continue sends.

Each run gets its own home, so nothing reaches the user's Continue. Run this file to write
``tests/data/agents/continue_session.json`` again: ``python tests/_continue_runs.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._api_stub import api_stub, chat_messages_with, run_agent

CLI = Path(__file__).parent / "js" / "node_modules" / "@continuedev" / "cli" / "dist" / "cn.js"
FIXTURE = Path(__file__).parent / "data" / "agents" / "continue_session.json"


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1"}


def cn(home: Path, work: Path, stub: Any, *args: str) -> str:
    """``cn -p ARGS`` in ``work`` with its own ``home``, every tool allowed, and the stub as its
    OpenAI-compatible model (a config file written for it)."""
    host, port = stub.server_address[:2]
    config = home / "config.yaml"
    model = [
        "  - name: stub",
        "    provider: openai",
        "    model: stub-model",
        f"    apiBase: http://{host!s}:{port}/v1",
        "    apiKey: stub",
        "    roles: [chat]",
    ]
    head = ["name: tracetrim-tests", "version: 0.0.1", "schema: v1", "models:"]
    config.write_text("\n".join([*head, *model, ""]), encoding="utf-8")
    return run_agent(["node", str(CLI), "-p", *args, "--config", str(config), "--auto"], work, _env(home))


def sessions(home: Path) -> Path:
    """Where Continue keeps its sessions (``~/.continue/sessions``)."""
    return home / ".continue" / "sessions"


def _tool(call_id: str, name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]


def session_cn_writes(home: Path) -> str:
    """The file of a session Continue's CLI ran for two scripted prompts: it reads a file, lists the
    folder and runs a command in parallel, answers; then, resumed, reads the file again, edits it, runs
    it, reads a file that is not there and answers."""
    work = home / "work"
    work.mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(120))
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n" + helpers, "utf-8")
    (work / "README.md").write_text("# calc\nA tiny calculator.\n", "utf-8")
    first = [
        [{"type": "text", "text": "I will read calc.py."}, *_tool("call_01", "Read", filepath="calc.py")],
        _tool("call_02", "List", dirpath=".") + _tool("call_03", "Bash", command="seq 1 1500"),
        [{"type": "text", "text": "add subtracts where it should add."}],
    ]
    edit = {"file_path": str(work / "calc.py"), "old_string": "return a - b", "new_string": "return a + b"}
    second = [  # Continue's Edit wants the file read in the same run first
        _tool("call_04", "Read", filepath="calc.py"),
        _tool("call_05", "Edit", **edit),
        _tool("call_06", "Bash", command="python3 -c 'import calc; print(calc.add(2, 3))'"),
        _tool("call_07", "Read", filepath="tests.py"),
        [{"type": "text", "text": "Fixed: add(2, 3) is 5. There is no tests.py."}],
    ]
    with api_stub(first) as stub:
        cn(home, work, stub, "What is wrong in calc.py?")
    with api_stub(second) as stub:
        cn(home, work, stub, "--resume", "Fix it and check.")
    (path,) = (p for p in sessions(home).iterdir() if p.name != "sessions.json")
    return path.read_text("utf-8")


def going_on(document: dict[str, Any], home: Path) -> list[dict[str, Any]]:
    """The chat-completions messages Continue's CLI sends when it forks the saved session ``document``
    (its ``--fork``, which loads the session file by id) and goes on with one more prompt, ``Go on.``."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    folder = sessions(home)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{document['sessionId']}.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    with api_stub() as stub:
        cn(home, work, stub, "--fork", document["sessionId"], "Go on.")
    return chat_messages_with(stub, "Go on.", "Continue")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        text = session_cn_writes(Path(tmp))
    FIXTURE.write_text(text, encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(json.loads(text)['history'])} items)")
