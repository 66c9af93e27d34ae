"""The real GitHub Copilot CLI (``@github/copilot``, pinned in ``tests/js``) run offline: scripted tasks
against the chat-completions stub (`tests._api_stub`), and a saved session resumed to see what Copilot
sends.

Copilot runs with ``COPILOT_OFFLINE=true`` and its model provider at the stub
(``COPILOT_PROVIDER_BASE_URL``: no GitHub sign-in, no network). Each run gets its own home, so nothing
reaches the user's Copilot; the package Copilot unpacks on its first start (about 235 MB) goes to one
folder under the system's temporary folder, unpacked once per machine. Run this file to write
``tests/data/agents/copilot_cli_session.jsonl`` again: ``python tests/_copilot_runs.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._api_stub import api_stub, chat_messages_with, run_agent

CLI = Path(__file__).parent / "js" / "node_modules" / "@github" / "copilot" / "npm-loader.js"
FIXTURE = Path(__file__).parent / "data" / "agents" / "copilot_cli_session.jsonl"
CACHE = Path(tempfile.gettempdir()) / "tracetrim-tests-copilot-cache"
"""Where Copilot unpacks its package (``COPILOT_CACHE_HOME``), shared by every run."""


def copilot(home: Path, work: Path, stub: Any, *args: str, window: int | None = None) -> str:
    """``copilot -p ARGS`` in ``work`` with its own ``home``, every tool allowed, offline, the stub as
    its OpenAI-compatible model provider (with a prompt limit of ``window`` tokens when given)."""
    host, port = stub.server_address[:2]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "NO_COLOR": "1",
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_CACHE_HOME": str(CACHE),
        "COPILOT_PROVIDER_BASE_URL": f"http://{host!s}:{port}/v1",
        "COPILOT_PROVIDER_API_KEY": "stub",
        "COPILOT_MODEL": "gpt-4.1",
    }
    if window is not None:
        env["COPILOT_PROVIDER_MAX_PROMPT_TOKENS"] = str(window)
    return run_agent(["node", str(CLI), "-p", *args, "--allow-all-tools"], work, env)


def sessions(home: Path) -> Path:
    """Where Copilot keeps its sessions (``~/.copilot/session-state``), one folder each."""
    return home / ".copilot" / "session-state"


def _tool(call_id: str, name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]


def _events_of(home: Path) -> list[dict[str, Any]]:
    """The events of the one session Copilot kept in ``home``."""
    (path,) = sessions(home).glob("*/events.jsonl")
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def session_copilot_writes(home: Path) -> str:
    """The ``events.jsonl`` of a session Copilot ran for two scripted prompts: it views a file, views
    the README and runs a long command in parallel, views a file that is not there and answers; then,
    resumed, views the file again, edits it, runs it and answers."""
    work = home / "work"
    work.mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(120))
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n" + helpers, "utf-8")
    (work / "README.md").write_text("# calc\nA tiny calculator.\n", "utf-8")
    calc, readme = str(work / "calc.py"), str(work / "README.md")
    first = [
        [{"type": "text", "text": "I will read calc.py."}, *_tool("call_01", "view", path=calc)],
        _tool("call_02", "view", path=readme)
        + _tool("call_03", "bash", command="seq 1 1500", description="count"),
        _tool("call_04", "view", path=str(work / "tests.py")),
        [{"type": "text", "text": "add subtracts where it should add. There is no tests.py."}],
    ]
    second = [
        _tool("call_05", "view", path=calc),
        _tool("call_06", "edit", path=calc, old_str="return a - b", new_str="return a + b"),
        _tool(
            "call_07", "bash", command="python3 -c 'import calc; print(calc.add(2, 3))'", description="run"
        ),
        [{"type": "text", "text": "Fixed: add(2, 3) is 5."}],
    ]
    with api_stub(first) as stub:
        copilot(home, work, stub, "What is wrong in calc.py?")
    (folder,) = (path.parent for path in sessions(home).glob("*/events.jsonl"))
    with api_stub(second) as stub:
        copilot(home, work, stub, "Fix it and check.", "--resume", folder.name)
    return (folder / "events.jsonl").read_text("utf-8")


def summarising(body: dict[str, Any]) -> bool:
    """Whether a request is Copilot's own compaction asking for a summary (it offers its tools too)."""
    last = body["messages"][-1]
    return last.get("role") == "user" and str(last.get("content")).startswith(
        "Please create a detailed summary"
    )


def session_copilot_compacts(home: Path) -> list[dict[str, Any]]:
    """The events of a session whose two long command outputs fill a 20,000-token prompt limit, so that
    Copilot compacts it on its own (in the background, while the run goes on), and six short commands
    after that."""
    work = home / "work"
    work.mkdir(parents=True)
    script = [
        _tool(f"call_{k:02d}", "bash", command=f"seq 1 {3000 + k}", description="count") for k in range(2)
    ]
    script += [
        _tool(f"call_{k:02d}", "bash", command=f"echo step {k}", description="echo") for k in range(2, 8)
    ]
    with api_stub([*script, [{"type": "text", "text": "Counted."}]], aside=summarising) as stub:
        copilot(home, work, stub, "Count.", window=20_000)
    return _events_of(home)


def session_copilot_delegates(home: Path) -> list[dict[str, Any]]:
    """The events of a session whose model hands a look at a file to a sub-agent (Copilot's ``task`` tool,
    an ``explore`` agent that views the file and reports), then views it itself and answers: the
    sub-agent's own messages and calls among the session's events, each carrying its ``agentId``."""
    work = home / "work"
    work.mkdir(parents=True)
    (work / "a.txt").write_text("alpha\n", "utf-8")
    task = {
        "description": "look",
        "prompt": "View a.txt and report.",
        "agent_type": "explore",
        "name": "looker",
    }
    script = [
        [{"type": "tool_use", "id": "call_01", "name": "task", "input": task}],
        _tool("call_s1", "view", path=str(work / "a.txt")),  # the sub-agent's
        [{"type": "text", "text": "a.txt says alpha."}],  # its report
        _tool("call_02", "view", path=str(work / "a.txt")),
        [{"type": "text", "text": "It says alpha."}],
    ]
    with api_stub(script) as stub:
        copilot(home, work, stub, "What is in a.txt?")
    return _events_of(home)


def session_id(events: Sequence[dict[str, Any]]) -> str:
    """A session's id, as its start event names it."""
    start = next(e for e in events if e.get("type") == "session.start")
    return str(start["data"]["sessionId"])


def going_on(
    events: Sequence[dict[str, Any]],
    home: Path,
    script: list[list[dict[str, Any]]] | None = None,
    *args: str,
) -> list[dict[str, Any]]:
    """The chat-completions messages Copilot sends when it resumes the session of ``events`` (written as
    its ``events.jsonl``, the one file ``--resume`` reads) and goes on with one more prompt, ``Go on.``;
    with a ``script`` (and ``args``), the request bodies of every call it then makes."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    folder = sessions(home) / session_id(events)
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events)
    (folder / "events.jsonl").write_text(text, encoding="utf-8")
    with api_stub(script) as stub:
        copilot(home, work, stub, "Go on.", "--resume", folder.name, *args)
    if script is not None:
        return [r["body"] for r in stub.requests if r["path"].endswith("/chat/completions")]
    return chat_messages_with(stub, "Go on.", "Copilot")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        written = session_copilot_writes(Path(tmp))
    FIXTURE.write_text(written, encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(written.splitlines())} events)")
