"""Tampering with stored snapshots, trick by trick, in every store: each one is refused (issue 15).

Someone who can write the store (a disk fault, another process, an attacker) changes what a
reference points to. A restore must refuse every such change with an `ArchiveError` subclass,
never return a different history, and saving the genuine history again must make it restorable.
The count of tricks refused is what the README reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests._archive_support import make_history, redis_namespace
from tracetrim._json import canonical_bytes, sha256_hex
from tracetrim._scope import Scope
from tracetrim.archive import (
    ArchiveCorruptedError,
    ArchiveError,
    ArchiveLimitError,
    FileArchive,
    InvalidReferenceError,
    KeyValueArchive,
    MemoryStore,
    RedisStore,
    SQLiteStore,
)
from tracetrim.archive._protocol import snapshot_document

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")
OTHER_SCOPE = Scope(user_id="someone", agent_id="else", session_id="s")
MAX_BYTES = 200_000
HISTORY = make_history(3)


def _document(**changes: Any) -> bytes:
    return canonical_bytes({**snapshot_document(SCOPE, HISTORY), **changes})


def _own_digest(data: bytes) -> tuple[str | None, bytes]:
    return sha256_hex(data), data


def _flip(data: bytes) -> bytes:
    at = len(data) // 2
    return data[:at] + (b"X" if data[at : at + 1] != b"X" else b"Y") + data[at + 1 :]


# Each trick: (genuine bytes) -> (the reference to store under, None = the genuine one; the bytes).
TRICKS: dict[str, Callable[[bytes], tuple[str | None, bytes]]] = {
    "one byte changed, same size": lambda data: (None, _flip(data)),
    "truncated": lambda data: (None, data[:-10]),
    "a byte appended": lambda data: (None, data + b" "),
    "emptied": lambda data: (None, b""),
    "another history's bytes": lambda data: (
        None,
        canonical_bytes(snapshot_document(SCOPE, make_history(2))),
    ),
    "another scope's snapshot, own digest": lambda data: _own_digest(
        canonical_bytes(snapshot_document(OTHER_SCOPE, HISTORY))
    ),
    "unknown version, own digest": lambda data: _own_digest(_document(version=99)),
    "no version, own digest": lambda data: _own_digest(
        canonical_bytes({"scope": SCOPE.as_dict(), "messages": HISTORY})
    ),
    "messages not a list, own digest": lambda data: _own_digest(_document(messages={"0": HISTORY[0]})),
    "malformed message, own digest": lambda data: _own_digest(_document(messages=[42])),
    "malformed block, own digest": lambda data: _own_digest(
        _document(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}])
    ),
    "a JSON array, own digest": lambda data: _own_digest(b"[1,2,3]"),
    "not UTF-8, own digest": lambda data: _own_digest(b'{"version":1,\xff\xfe}'),
    "not JSON, own digest": lambda data: _own_digest(b"version=1; scope=u"),
    "NaN inside, own digest": lambda data: _own_digest(data.replace(b'"version":1', b'"version":NaN')),
    "nested 100,000 deep, own digest": lambda data: _own_digest(b"[" * 100_000 + b"]" * 100_000),
    "over max_bytes, own digest": lambda data: _own_digest(b" " * (MAX_BYTES + 1)),
}
REF_TRICKS = ["../" + "a" * 61, "A" * 64, "a" * 63, "a" * 63 + "\x00", "a" * 64 + "/"]


class _Target:
    """An archive and a way to put any bytes under any reference in its store, behind its back."""

    def __init__(self, archive: Any, put: Callable[[str, bytes], Awaitable[None]]) -> None:
        self.archive = archive
        self.put = put


@contextlib.asynccontextmanager
async def _target(kind: str, tmp_path: Path) -> AsyncIterator[_Target]:
    if kind == "file":
        archive = FileArchive(tmp_path / "archive", max_bytes=MAX_BYTES)
        await archive.save(SCOPE, make_history(1))  # the scope folder exists

        def write(ref: str, data: bytes) -> None:
            folder = next(p for p in (tmp_path / "archive").iterdir() if p.is_dir())
            (folder / f"{ref}.json").write_bytes(data)

        async def put_file(ref: str, data: bytes) -> None:
            await asyncio.to_thread(write, ref, data)

        yield _Target(archive, put_file)
    elif kind in ("memory", "sqlite"):
        path = tmp_path / "store.db"
        store = MemoryStore() if kind == "memory" else SQLiteStore(path)
        kv = KeyValueArchive(store, max_bytes=MAX_BYTES)

        async def put_kv(ref: str, data: bytes) -> None:
            key = kv._prefix(SCOPE) + ref
            if isinstance(store, MemoryStore):
                store._items[key] = (data, 0.0)
                return
            with sqlite3.connect(path) as conn:
                conn.execute("INSERT OR REPLACE INTO tracetrim_store VALUES (?, ?, 0)", (key, data))

        await kv.list(SCOPE)  # the SQLite table exists
        yield _Target(kv, put_kv)
    else:
        async with redis_namespace() as (client, namespace):
            redis_kv = KeyValueArchive(RedisStore(client), max_bytes=MAX_BYTES, namespace=namespace)

            async def put_redis(ref: str, data: bytes) -> None:
                await client.set(redis_kv._prefix(SCOPE) + ref, data)

            yield _Target(redis_kv, put_redis)


STORES = ["file", "memory", "sqlite", "redis"]


@pytest.mark.parametrize("trick", list(TRICKS))
@pytest.mark.parametrize("kind", STORES)
async def test_every_tampering_trick_is_refused(kind: str, trick: str, tmp_path: Path) -> None:
    async with _target(kind, tmp_path) as target:
        ref = await target.archive.save(SCOPE, HISTORY)
        genuine = canonical_bytes(snapshot_document(SCOPE, HISTORY))
        forged_ref, forged = TRICKS[trick](genuine)
        await target.put(forged_ref or ref, forged)
        with pytest.raises(ArchiveError) as refused:
            await target.archive.restore(SCOPE, forged_ref or ref)
        assert isinstance(refused.value, (ArchiveCorruptedError, ArchiveLimitError)) or "scope" in str(
            refused.value
        )
        # The genuine snapshot restores (again, after a save when its own bytes were the target).
        assert await target.archive.save(SCOPE, HISTORY) == ref
        assert await target.archive.restore(SCOPE, ref) == HISTORY
        assert ref in {e.ref for e in await target.archive.list(SCOPE)}


@pytest.mark.parametrize("bad_ref", REF_TRICKS)
@pytest.mark.parametrize("kind", STORES)
async def test_malformed_references_are_refused(kind: str, bad_ref: str, tmp_path: Path) -> None:
    async with _target(kind, tmp_path) as target:
        await target.archive.save(SCOPE, HISTORY)
        with pytest.raises(InvalidReferenceError):
            await target.archive.restore(SCOPE, bad_ref)
        with pytest.raises(InvalidReferenceError):
            await target.archive.delete(SCOPE, bad_ref)


def _replace_with_symlink(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def _replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("trick", ["symlink to a valid snapshot", "a directory", "a FIFO", "a hard link"])
async def test_file_system_tricks_in_a_snapshot_s_place_are_refused(trick: str, tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "archive", max_bytes=MAX_BYTES)
    ref = await archive.save(SCOPE, HISTORY)
    other = await archive.save(SCOPE, make_history(2))
    folder = next(p for p in (tmp_path / "archive").iterdir() if p.is_dir())
    path, other_path = folder / f"{ref}.json", folder / f"{other}.json"
    if trick == "symlink to a valid snapshot":
        _replace_with_symlink(path, other_path)
    elif trick == "a directory":
        _replace_with_directory(path)
    elif trick == "a FIFO":
        _replace_with_fifo(path)
    else:
        path.unlink()
        os.link(other_path, path)
    with pytest.raises(ArchiveError):
        await archive.restore(SCOPE, ref)
    if trick != "a directory":  # a directory in a snapshot's place cannot be replaced atomically
        assert await archive.save(SCOPE, HISTORY) == ref
        assert await archive.restore(SCOPE, ref) == HISTORY


@pytest.mark.parametrize("what", ["root", "scope folder"])
async def test_symlinked_folders_are_refused(what: str, tmp_path: Path) -> None:
    real = tmp_path / "real"
    archive = FileArchive(real, max_bytes=MAX_BYTES)
    ref = await archive.save(SCOPE, HISTORY)
    if what == "root":
        (tmp_path / "link").symlink_to(real)
        archive = FileArchive(tmp_path / "link", max_bytes=MAX_BYTES)
    else:
        folder = next(p for p in real.iterdir() if p.is_dir())
        moved = tmp_path / "moved"
        folder.rename(moved)
        folder.symlink_to(moved)
    with pytest.raises(ArchiveError):
        await archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError):
        await archive.save(SCOPE, HISTORY)


def test_the_tricks_are_all_different() -> None:
    genuine = canonical_bytes(snapshot_document(SCOPE, HISTORY))
    forged = [TRICKS[name](genuine)[1] for name in TRICKS]
    assert len({sha256_hex(data) for data in forged}) == len(TRICKS)
    assert json.loads(genuine)["version"] == 1
