"""Archives under attack (issue 15, defects 3, 4 and 6): tampered copies, foreign errors, cancellations."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._archive_support import make_history, redis_namespace
from tests._histories import tool_history
from tracetrim._scope import Scope
from tracetrim.archive import (
    ArchiveCorruptedError,
    ArchiveError,
    FileArchive,
    KeyValueArchive,
    MemoryStore,
    RedisStore,
    SQLiteStore,
    prune,
)
from tracetrim.archive._protocol import scope_key
from tracetrim.decision import ScriptedDecisionModel

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")


def _flip(data: bytes) -> bytes:
    """The same bytes with one character changed: same size, other digest."""
    at = len(data) // 2
    return data[:at] + (b"X" if data[at : at + 1] != b"X" else b"Y") + data[at + 1 :]


@pytest.fixture
async def redis_client() -> AsyncIterator[Any]:
    async with redis_namespace() as (client, namespace):
        client.test_namespace = namespace
        yield client


class _Tamperable:
    """An archive with a way to corrupt one stored snapshot in place, as an attacker or a bad disk would."""

    def __init__(self, archive: Any, corrupt: Callable[[str], Awaitable[None]]) -> None:
        self.archive = archive
        self.corrupt = corrupt


async def _file(tmp_path: Path) -> _Tamperable:
    archive = FileArchive(tmp_path / "archive")

    def overwrite(path: Path) -> None:
        data = path.read_bytes()
        with open(path, "r+b") as handle:  # in place: same inode, same size, same mtime order
            handle.write(_flip(data))

    async def corrupt(ref: str) -> None:
        await asyncio.to_thread(overwrite, tmp_path / "archive" / scope_key(SCOPE) / f"{ref}.json")

    return _Tamperable(archive, corrupt)


async def _memory(tmp_path: Path) -> _Tamperable:
    store = MemoryStore()
    archive = KeyValueArchive(store)

    async def corrupt(ref: str) -> None:
        key = archive._prefix(SCOPE) + ref
        value, created = store._items[key]
        store._items[key] = (_flip(value), created)

    return _Tamperable(archive, corrupt)


async def _sqlite(tmp_path: Path) -> _Tamperable:
    path = tmp_path / "store.db"
    archive = KeyValueArchive(SQLiteStore(path))

    async def corrupt(ref: str) -> None:
        key = archive._prefix(SCOPE) + ref
        with sqlite3.connect(path) as conn:
            (value,) = conn.execute("SELECT value FROM tracetrim_store WHERE key = ?", (key,)).fetchone()
            conn.execute("UPDATE tracetrim_store SET value = ? WHERE key = ?", (_flip(value), key))

    return _Tamperable(archive, corrupt)


@contextlib.asynccontextmanager
async def _tamperable(kind: str, tmp_path: Path) -> AsyncIterator[_Tamperable]:
    if kind != "redis":
        yield await {"file": _file, "memory": _memory, "sqlite": _sqlite}[kind](tmp_path)
        return
    async with redis_namespace() as (client, namespace):
        archive = KeyValueArchive(RedisStore(client), namespace=namespace)

        async def corrupt(ref: str) -> None:
            key = archive._prefix(SCOPE) + ref
            await client.set(key, _flip(await client.get(key)))

        yield _Tamperable(archive, corrupt)


STORES = ["file", "memory", "sqlite", "redis"]


@pytest.mark.parametrize("kind", STORES)
async def test_a_copy_corrupted_at_the_same_size_is_not_taken_for_stored(kind: str, tmp_path: Path) -> None:
    async with _tamperable(kind, tmp_path) as target:
        await _corrupt_then_save_again(target)


async def _corrupt_then_save_again(target: _Tamperable) -> None:
    history = make_history(4)
    ref = await target.archive.save(SCOPE, history)
    await target.corrupt(ref)
    with pytest.raises(ArchiveCorruptedError):
        await target.archive.restore(SCOPE, ref)
    # Saving the same history again must leave a copy that restores, or fail: never just say "stored".
    assert await target.archive.save(SCOPE, history) == ref
    assert await target.archive.restore(SCOPE, ref) == history
    assert [e.ref for e in await target.archive.list(SCOPE)] == [ref]


@pytest.mark.parametrize("kind", STORES)
async def test_enforce_adopts_only_with_a_restorable_original(kind: str, tmp_path: Path) -> None:
    async with _tamperable(kind, tmp_path) as target:
        await _corrupt_then_plan(target)


async def _corrupt_then_plan(target: _Tamperable) -> None:
    messages = tool_history(4)
    ref = await target.archive.save(SCOPE, messages)
    await target.corrupt(ref)
    compactor = tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(eligible_tools={"read_file"}),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=target.archive,
    )
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.adopted and outcome.plan is not None and outcome.plan.archive_ref == ref
    assert await target.archive.restore(SCOPE, ref) == messages


async def test_redis_key_of_the_wrong_type_is_an_archive_error(redis_client: Any) -> None:
    archive = KeyValueArchive(RedisStore(redis_client), namespace=redis_client.test_namespace)
    ref = "ab" * 32
    key = archive._prefix(SCOPE) + ref
    await redis_client.lpush(key, b"not a string")
    with pytest.raises(ArchiveError, match=r"WRONGTYPE|wrong kind"):
        await archive.restore(SCOPE, ref)
    index = archive._prefix(SCOPE) + "index"
    await redis_client.set(index, b"not a sorted set")
    with pytest.raises(ArchiveError):
        await archive.list(SCOPE)
    with pytest.raises(ArchiveError):
        await archive.save(SCOPE, make_history(1))
    with pytest.raises(ArchiveError):
        await archive.delete(SCOPE, ref)


async def test_redis_connection_failures_are_archive_errors() -> None:
    store = RedisStore("redis://127.0.0.1:1/0")  # nothing listens on port 1
    archive = KeyValueArchive(store)
    try:
        for call in (
            archive.save(SCOPE, make_history(1)),
            archive.restore(SCOPE, "ab" * 32),
            archive.list(SCOPE),
            archive.delete(SCOPE, "ab" * 32),
        ):
            with pytest.raises(ArchiveError, match="could not"):
                await call
    finally:
        await store.aclose()


async def test_a_broken_sqlite_file_is_an_archive_error(tmp_path: Path) -> None:
    path = tmp_path / "not-a-database.db"
    path.write_bytes(b"this is not an SQLite file, just text " * 100)
    archive = KeyValueArchive(SQLiteStore(path))
    with pytest.raises(ArchiveError):
        await archive.save(SCOPE, make_history(1))
    with pytest.raises(ArchiveError):
        await archive.list(SCOPE)


async def test_file_archive_os_errors_on_list_delete_and_sweep_are_archive_errors(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / ("x" * 300))  # ENAMETOOLONG, whoever runs the test
    for call in (archive.list(SCOPE), archive.delete(SCOPE, "ab" * 32), archive.sweep(SCOPE)):
        with pytest.raises(ArchiveError, match="could not"):
            await call


@pytest.mark.parametrize("part", ["user_id", "agent_id", "session_id"])
def test_a_scope_id_that_cannot_be_encoded_is_refused_at_construction(part: str) -> None:
    parts = {"user_id": "u", "agent_id": "a", "session_id": "s", part: "bad \ud800 id"}
    with pytest.raises(ValueError, match=f"Scope.{part} cannot be encoded as UTF-8"):
        Scope(**parts)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to count descriptors")
async def test_cancelled_file_archive_calls_leak_no_descriptor(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "archive")
    refs = [await archive.save(SCOPE, make_history(1, seed=n)) for n in range(3)]
    rng = random.Random(6)
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: archive.list(SCOPE),
        lambda: archive.delete(SCOPE, "cd" * 32),
        lambda: archive.sweep(SCOPE),
        lambda: prune(archive, SCOPE, keep_last=5),
    ]
    await asyncio.to_thread(lambda: None)  # the default executor's first thread is not a leak
    before = _open_fds()
    for n in range(400):
        task = asyncio.ensure_future(calls[n % len(calls)]())
        for _ in range(rng.randrange(4)):
            await asyncio.sleep(0)
        task.cancel()
        with_result = await asyncio.gather(task, return_exceptions=True)
        assert not isinstance(with_result[0], Exception)
    # Threads that were cancelled mid-call finish on their own; give them a moment to.
    for _ in range(100):
        if _open_fds() <= before:
            break
        await asyncio.sleep(0.02)
    assert _open_fds() <= before
    assert {e.ref for e in await archive.list(SCOPE)} == set(refs)
