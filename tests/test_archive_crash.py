"""Crash safety: SIGKILL a process mid-save many times; no half snapshot ever becomes visible."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tracetrim._scope import Scope
from tracetrim.archive import FileArchive, prune
from tracetrim.archive._protocol import scope_key

SCOPE = Scope(user_id="crash-user", agent_id="writer", session_id="s")
TRIALS = 50
REPO = Path(__file__).resolve().parents[1]

WRITER = """
import asyncio, sys
from tracetrim._scope import Scope
from tracetrim.archive import FileArchive

async def main(root: str, start: int) -> None:
    archive = FileArchive(root, max_bytes=50_000_000)
    scope = Scope(user_id="crash-user", agent_id="writer", session_id="s")
    body = "0123456789abcdef" * 200_000  # 3.2 MB: long enough for the kill to land mid-write
    print("ready", flush=True)
    i = start
    while True:
        history = [{"id": f"m{i}", "role": "user", "content": [{"type": "text", "text": f"{i}:{body}"}]}]
        await archive.save(scope, history)
        i += 1

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def _temps(folder: Path) -> list[str]:
    """Temp files in the scope's in-flight folder (the only place a writer creates them)."""
    tmp = folder / ".tmp"
    return sorted(p.name for p in tmp.iterdir()) if tmp.exists() else []


def _verify_visible(root: Path, verified: set[str]) -> tuple[int, int]:
    """Restore every visible snapshot not yet checked; return (snapshots checked, temp files seen)."""
    folder = root / scope_key(SCOPE)
    archive = FileArchive(root, max_bytes=50_000_000)
    snapshots = sorted(p.name for p in folder.iterdir() if p.name != ".tmp") if folder.exists() else []
    temps = _temps(folder)
    assert all(n.endswith(".json") and len(n) == 69 for n in snapshots), snapshots
    listed = {e.ref for e in asyncio.run(archive.list(SCOPE))}
    assert listed == {n[:-5] for n in snapshots}
    checked = 0
    for ref in sorted(listed - verified):
        messages = asyncio.run(archive.restore(SCOPE, ref))  # verifies digest, size, scope, version
        assert messages[0]["content"][0]["text"].endswith("0123456789abcdef")
        verified.add(ref)
        checked += 1
    return checked, len(temps)


def test_sigkill_during_saves_never_leaves_a_half_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(20240611)
    verified: set[str] = set()
    trials_with_leftovers = 0
    started = time.monotonic()
    for trial in range(TRIALS):
        child = subprocess.Popen(
            [sys.executable, str(script), str(root), str(trial * 10_000)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.12))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        _, temps = _verify_visible(root, verified)
        trials_with_leftovers += temps > 0
    # the kills must really have landed mid-write, or this test proves nothing
    assert trials_with_leftovers >= 5, trials_with_leftovers
    assert len(verified) >= 10
    # the next prune (and so the next save) clears what the killed writers left behind
    archive = FileArchive(root, max_bytes=50_000_000)
    asyncio.run(prune(archive, SCOPE, keep_last=len(verified)))
    assert _temps(root / scope_key(SCOPE)) == []
    assert time.monotonic() - started < 60
