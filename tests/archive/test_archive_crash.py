"""Crash safety: SIGKILL a process mid-save many times, for each durable store (file, SQLite,
PostgreSQL); no half snapshot ever becomes visible and no acknowledged save is lost."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests._archive_support import postgres_url
from tracetrim._scope import Scope
from tracetrim.archive import FileArchive, KeyValueArchive, SQLiteStore, prune
from tracetrim.archive._protocol import scope_key

SCOPE = Scope(user_id="crash-user", agent_id="writer", session_id="s")
TRIALS = 50
REPO = Path(__file__).resolve().parents[2]

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
        ref = await archive.save(scope, history)
        print("saved", ref, flush=True)  # acknowledged: from here on it must survive any kill
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
        acknowledged = _acknowledged(child.stdout.read())
        child.stdout.close()
        _, temps = _verify_visible(root, verified)
        assert acknowledged <= verified, "an acknowledged save was lost"
        trials_with_leftovers += temps > 0
    # the kills must really have landed mid-write, or this test proves nothing
    assert trials_with_leftovers >= 5, trials_with_leftovers
    assert len(verified) >= 10
    # the next prune (and so the next save) clears what the killed writers left behind
    archive = FileArchive(root, max_bytes=50_000_000)
    asyncio.run(prune(archive, SCOPE, keep_last=len(verified)))
    assert _temps(root / scope_key(SCOPE)) == []
    assert time.monotonic() - started < 300  # a bound on a runaway test, generous for a busy CI machine


def _acknowledged(output: bytes) -> set[str]:
    """The references a killed writer reported saved (a line cut by the kill is not an acknowledgement)."""
    lines = output.split(b"\n")[:-1]  # the last piece has no newline yet: not a whole line
    return {line.split()[1].decode() for line in lines if line.startswith(b"saved ")}


# The same writer over a key-value store: argv = kind, location, start; "ready", then "saved <ref>" lines.
KV_WRITER = """
import asyncio, sys
from tracetrim._scope import Scope
from tracetrim.archive import KeyValueArchive, SQLiteStore

def store(kind, where):
    if kind == "sqlite":
        return SQLiteStore(where)
    from tracetrim.archive._postgres_store import PostgresStore
    url, table = where.rsplit("#", 1)
    return PostgresStore(url, table=table)

async def main(kind, where, start):
    archive = KeyValueArchive(store(kind, where), max_bytes=50_000_000)
    scope = Scope(user_id="crash-user", agent_id="writer", session_id="s")
    body = "0123456789abcdef" * 50_000  # 0.8 MB
    await archive.list(scope)  # connect (and create the table) before the kills begin
    print("ready", flush=True)
    i = start
    while True:
        history = [{"id": f"m{i}", "role": "user", "content": [{"type": "text", "text": f"{i}:{body}"}]}]
        ref = await archive.save(scope, history)
        print("saved", ref, flush=True)
        i += 1

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
KV_TRIALS = 20


async def _verify_store(archive: KeyValueArchive, verified: set[str]) -> None:
    """Restore every listed snapshot not yet checked: each must verify (digest, size, scope)."""
    for entry in await archive.list(SCOPE):
        if entry.ref in verified:
            continue
        messages = await archive.restore(SCOPE, entry.ref)
        assert messages[0]["content"][0]["text"].endswith("0123456789abcdef")
        verified.add(entry.ref)


def _kill_writers(tmp_path: Path, kind: str, where: str, archive: KeyValueArchive) -> tuple[int, int]:
    """KV_TRIALS writers, each SIGKILLed at a random moment; returns (kills, snapshots verified)."""
    script = tmp_path / "kv_writer.py"
    script.write_text(KV_WRITER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(15)
    verified: set[str] = set()
    acknowledged_total: set[str] = set()
    for trial in range(KV_TRIALS):
        child = subprocess.Popen(
            [sys.executable, str(script), kind, where, str(trial * 10_000)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait()
        acknowledged = _acknowledged(child.stdout.read())
        child.stdout.close()
        asyncio.run(_verify_store(archive, verified))
        assert acknowledged <= verified, f"acknowledged saves lost: {sorted(acknowledged - verified)[:3]}"
        acknowledged_total |= acknowledged
    assert len(acknowledged_total) >= 5, "the writers barely saved: the kills proved nothing"
    return KV_TRIALS, len(verified)


def test_sigkill_during_sqlite_saves_never_corrupts_or_loses(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    started = time.monotonic()
    kills, verified = _kill_writers(tmp_path, "sqlite", str(path), KeyValueArchive(SQLiteStore(path)))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert kills == KV_TRIALS and verified >= 5
    assert time.monotonic() - started < 300


def test_sigkill_during_postgres_saves_never_corrupts_or_loses(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from tracetrim.archive._postgres_store import PostgresStore

    url = asyncio.run(postgres_url())
    table = f"tracetrim_crash_{uuid.uuid4().hex[:16]}"
    try:
        started = time.monotonic()
        archive = KeyValueArchive(PostgresStore(url, table=table), max_bytes=50_000_000)
        kills, verified = _kill_writers(tmp_path, "postgres", f"{url}#{table}", archive)
        assert kills == KV_TRIALS and verified >= 5
        assert time.monotonic() - started < 300
    finally:
        asyncio.run(_drop_table(url, table))


async def _drop_table(url: str, table: str) -> None:
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
