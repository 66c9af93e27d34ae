"""The real OpenCode CLI (its Linux x64 binary package ``opencode-linux-x64``, pinned in ``tests/js``) run
offline: a scripted task against the Anthropic Messages stub (`tests._api_stub`), its session exported, a
session imported and resumed.

Each run gets its own home (``XDG_*`` folders), so nothing reaches the user's OpenCode. Run this file to
write ``tests/data/agents/opencode_session.json`` again: ``python tests/_opencode_runs.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._api_stub import api_stub, run_agent

CLI = Path(__file__).parent / "js" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
FIXTURE = Path(__file__).parent / "data" / "agents" / "opencode_session.json"
MODEL = "anthropic/claude-sonnet-4-5"


def _env(home: Path, stub: Any) -> dict[str, str]:
    host, port = stub.server_address[:2]
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": f"http://{host!s}:{port}/v1", "apiKey": "stub"}}},
        "autoupdate": False,
        "share": "disabled",
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "opencode.json").write_text(json.dumps(config), encoding="utf-8")
    folders = {f"XDG_{k}_HOME": str(home / k.lower()) for k in ("DATA", "CONFIG", "CACHE", "STATE")}
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        **folders,
        "OPENCODE_CONFIG": str(home / "opencode.json"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }


def opencode(home: Path, work: Path, stub: Any, *args: str) -> str:
    """``opencode ARGS`` in ``work`` with its own ``home``, its model the stub; what it printed."""
    return run_agent([str(CLI), *args], work, _env(home, stub))


def _tool(call_id: str, name: str, **arguments: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]


def session_opencode_writes(home: Path) -> dict[str, Any]:
    """The export of a session OpenCode ran for a scripted task: it reads a file, runs two shell
    commands on real files and answers."""
    work = home / "work"
    (work / "dates").mkdir(parents=True)
    helpers = "".join(f"\n\ndef helper_{k}(value):\n    return value + {k}\n" for k in range(150))
    parse = work / "dates" / "parse.py"
    parse.write_text("def parse_date(text):\n    return text\n" + helpers, "utf-8")
    script = [
        _tool("toolu_01", "read", filePath=str(parse)),
        _tool("toolu_02", "bash", command="ls -la dates && seq 1 2000", description="List and count"),
        _tool("toolu_03", "bash", command="grep -n helper_ dates/parse.py", description="Find the helpers"),
        [{"type": "text", "text": "parse_date is a stub that returns its input."}],
    ]
    with api_stub(script) as stub:
        opencode(home, work, stub, "run", "-m", MODEL, "What does parse_date do?")
        listed = json.loads(opencode(home, work, stub, "session", "list", "--format", "json"))
        exported = opencode(home, work, stub, "export", listed[0]["id"])
    document: dict[str, Any] = json.loads(exported[exported.index("{") :])
    return document


def resumed(document: dict[str, Any], home: Path, *, replacing: bool = False) -> list[dict[str, Any]]:
    """The Anthropic messages OpenCode sends when it imports ``document`` and goes on with it; with
    ``replacing``, into the ``home`` whose session it compacts, deleting that session first (an import
    adds and updates parts, it never removes one)."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    path = home / "session.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with api_stub() as stub:
        if replacing:
            opencode(home, work, stub, "session", "delete", document["info"]["id"])
        opencode(home, work, stub, "import", str(path))
        opencode(home, work, stub, "run", "-m", MODEL, "--session", document["info"]["id"], "Go on.")
        bodies = [
            r["body"] for r in stub.requests if r["path"].endswith("/messages") and r["body"].get("tools")
        ]
    assert bodies, "OpenCode sent no request"
    messages: list[dict[str, Any]] = bodies[-1]["messages"]
    return messages


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        session = session_opencode_writes(Path(tmp))
    FIXTURE.write_text(json.dumps(session, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
