"""One test suite run against every archive: file, memory, SQLite, real Redis and real PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests._archive_support import make_history, postgres_table, redis_namespace
from tracetrim._json import canonical_bytes
from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError
from tracetrim.archive import (
    Archive,
    ArchiveCorruptedError,
    ArchiveLimitError,
    ArchiveNotFoundError,
    FileArchive,
    InvalidReferenceError,
    KeyValueArchive,
    MemoryStore,
    PostgresStore,
    RedisStore,
    ScopeMismatchError,
    SQLiteStore,
    prune,
    snapshot_document,
    snapshot_ref,
)
from tracetrim.archive._protocol import scope_key

SCOPE = Scope(user_id="alice@example.com", agent_id="coder", session_id="s-1")
OTHER = Scope(user_id="mallory", agent_id="coder", session_id="s-1")


@attrs.frozen
class Backend:
    """An archive under test plus raw access to its storage, to damage or plant bytes directly."""

    name: str
    make: Callable[[int], Archive]
    corrupt: Callable[[Scope, str], Awaitable[None]]
    plant: Callable[[Scope, str, bytes], Awaitable[None]]
    stored_count: Callable[[], Awaitable[int]]

    @property
    def archive(self) -> Archive:
        """A fresh archive over this backend's storage with a generous size limit."""
        return self.make(20_000_000)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _file_backend(root: Path) -> Backend:
    def path(scope: Scope, ref: str) -> Path:
        return root / scope_key(scope) / f"{ref}.json"

    async def corrupt(scope: Scope, ref: str) -> None:
        target = path(scope, ref)
        target.write_bytes(_flip(target.read_bytes(), target.stat().st_size // 2))

    async def plant(scope: Scope, ref: str, data: bytes) -> None:
        path(scope, ref).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path(scope, ref).write_bytes(data)

    async def stored_count() -> int:
        return sum(len(files) for _, _, files in os.walk(root))

    return Backend("file", lambda limit: FileArchive(root, max_bytes=limit), corrupt, plant, stored_count)


def _kv_backend(
    name: str,
    store: Any,
    namespace: str,
    raw_corrupt: Callable[[str], Awaitable[None]],
    stored_count: Callable[[], Awaitable[int]],
) -> Backend:
    def key(scope: Scope, ref: str) -> str:
        return f"{namespace}snapshot:{{{scope_key(scope)}}}:{ref}"

    async def corrupt(scope: Scope, ref: str) -> None:
        await raw_corrupt(key(scope, ref))

    async def plant(scope: Scope, ref: str, data: bytes) -> None:
        assert await store.create_if_absent(key(scope, ref), data)

    return Backend(
        name,
        lambda limit: KeyValueArchive(store, max_bytes=limit, namespace=namespace),
        corrupt,
        plant,
        stored_count,
    )


@pytest.fixture(params=["file", "memory", "sqlite", "redis", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    kind = request.param
    if kind == "file":
        yield _file_backend(tmp_path / "archive")
    elif kind == "memory":
        store = MemoryStore()

        async def memory_corrupt(key: str) -> None:
            data = await store.get(key)
            assert data is not None
            await store.delete(key)
            await store.create_if_absent(key, _flip(data, len(data) // 2))

        async def memory_count() -> int:
            return len(await store.scan(""))

        yield _kv_backend("memory", store, "t:", memory_corrupt, memory_count)
    elif kind == "sqlite":
        db = tmp_path / "archive.sqlite3"
        sqlite_store = SQLiteStore(db)

        async def sqlite_corrupt(key: str) -> None:
            # a second, independent connection edits the bytes on disk, as damage from outside would
            with sqlite3.connect(db) as conn:
                (data,) = conn.execute("SELECT value FROM tracetrim_store WHERE key = ?", (key,)).fetchone()
                conn.execute(
                    "UPDATE tracetrim_store SET value = ? WHERE key = ?",
                    (_flip(bytes(data), len(data) // 2), key),
                )

        async def sqlite_count() -> int:
            return len(await sqlite_store.scan(""))

        yield _kv_backend("sqlite", sqlite_store, "t:", sqlite_corrupt, sqlite_count)
        await sqlite_store.aclose()
    elif kind == "postgres":
        from psycopg import sql

        async with postgres_table() as (conn, url, table):
            pg_store = PostgresStore(url, table=table)
            name = sql.Identifier(table)

            async def pg_corrupt(key: str) -> None:
                # a second, independent connection edits the stored bytes, as damage from outside would
                cursor = await conn.execute(
                    sql.SQL("SELECT value FROM {} WHERE key = %s").format(name), (key,)
                )
                (data,) = await cursor.fetchone()
                await conn.execute(
                    sql.SQL("UPDATE {} SET value = %s WHERE key = %s").format(name),
                    (_flip(bytes(data), len(data) // 2), key),
                )

            async def pg_count() -> int:
                cursor = await conn.execute("SELECT to_regclass(%s)", (table,))
                exists = await cursor.fetchone()
                if exists is None or exists[0] is None:
                    return 0  # the store creates its table on first use: nothing was ever written
                cursor = await conn.execute(sql.SQL("SELECT count(*) FROM {}").format(name))
                row = await cursor.fetchone()
                return int(row[0]) if row else 0

            yield _kv_backend("postgres", pg_store, "t:", pg_corrupt, pg_count)
            await pg_store.aclose()
    else:
        async with redis_namespace() as (client, namespace):
            redis_store = RedisStore(client)

            async def redis_corrupt(key: str) -> None:
                length = await client.strlen(key)
                middle = await client.getrange(key, length // 2, length // 2)
                await client.setrange(key, length // 2, bytes([middle[0] ^ 0x01]))

            async def redis_count() -> int:
                keys = [k async for k in client.scan_iter(match=f"{namespace}*")]
                return len([k for k in keys if not k.endswith(b":index")])

            yield _kv_backend("redis", redis_store, namespace, redis_corrupt, redis_count)


async def test_round_trip_is_byte_identical(backend: Backend) -> None:
    archive = backend.archive
    history = make_history(6, seed=1)
    ref = await archive.save(SCOPE, history)
    assert ref == snapshot_ref(SCOPE, history)
    restored = await archive.restore(SCOPE, ref)
    assert restored == history
    assert canonical_bytes(restored) == canonical_bytes(history)
    assert restored[2]["unknown_field"] == {"kept": 0}
    (entry,) = await archive.list(SCOPE)
    assert entry.ref == ref
    assert entry.size == len(canonical_bytes(snapshot_document(SCOPE, history)))


async def test_saving_twice_is_idempotent(backend: Backend) -> None:
    archive = backend.archive
    history = make_history(3, seed=2)
    first = await archive.save(SCOPE, history)
    (before,) = await archive.list(SCOPE)
    await asyncio.sleep(0.02)
    second = await archive.save(SCOPE, make_history(3, seed=2))
    assert first == second
    assert await archive.list(SCOPE) == [before]
    assert await backend.stored_count() == 1


async def test_over_limit_is_refused_before_anything_is_written(backend: Backend) -> None:
    history = make_history(4, seed=3, result_chars=2000)
    size = len(canonical_bytes(snapshot_document(SCOPE, history)))
    small = backend.make(size - 1)
    with pytest.raises(ArchiveLimitError, match=snapshot_ref(SCOPE, history)):
        await small.save(SCOPE, history)
    assert await small.list(SCOPE) == []
    assert await backend.stored_count() == 0
    exact = backend.make(size)
    ref = await exact.save(SCOPE, history)
    assert await exact.restore(SCOPE, ref) == history


async def test_restore_refuses_a_stored_snapshot_over_the_limit(backend: Backend) -> None:
    history = make_history(4, seed=4, result_chars=2000)
    ref = await backend.archive.save(SCOPE, history)
    with pytest.raises(ArchiveLimitError, match=ref):
        await backend.make(1000).restore(SCOPE, ref)


async def test_a_flipped_byte_is_detected(backend: Backend) -> None:
    archive = backend.archive
    ref = await archive.save(SCOPE, make_history(3, seed=5))
    await backend.corrupt(SCOPE, ref)
    with pytest.raises(ArchiveCorruptedError, match=ref) as caught:
        await archive.restore(SCOPE, ref)
    assert "alice" not in str(caught.value)


async def test_another_scope_cannot_read_a_reference(backend: Backend) -> None:
    archive = backend.archive
    history = make_history(2, seed=6)
    ref = await archive.save(SCOPE, history)
    with pytest.raises(ArchiveNotFoundError, match=ref) as caught:
        await archive.restore(OTHER, ref)
    assert "mallory" not in str(caught.value)
    assert await archive.list(OTHER) == []
    assert await archive.delete(OTHER, ref) is False
    assert await archive.restore(SCOPE, ref) == history


async def test_a_snapshot_planted_under_another_scope_is_refused(backend: Backend) -> None:
    history = make_history(2, seed=7)
    data = canonical_bytes(snapshot_document(SCOPE, history))
    ref = snapshot_ref(SCOPE, history)
    await backend.plant(OTHER, ref, data)  # the digest matches; only the recorded scope is wrong
    with pytest.raises(ScopeMismatchError, match=ref):
        await backend.archive.restore(OTHER, ref)


async def test_an_unsupported_version_is_refused(backend: Backend) -> None:
    document = {**snapshot_document(SCOPE, make_history(1)), "version": 99}
    data = canonical_bytes(document)
    from tracetrim._json import sha256_hex

    ref = sha256_hex(data)
    await backend.plant(SCOPE, ref, data)
    with pytest.raises(ArchiveCorruptedError, match="version"):
        await backend.archive.restore(SCOPE, ref)


BAD_REFS = [
    "../x",
    "../" + "a" * 61,
    "A" * 64,
    "a" * 63,
    "a" * 65,
    "a" * 63 + "\x00",
    "",
    "g" * 64,
    " " + "a" * 63,
    "a" * 64 + "\n",
]


@pytest.mark.parametrize("bad", BAD_REFS)
async def test_malformed_references_are_refused(backend: Backend, bad: str) -> None:
    archive = backend.archive
    history = make_history(1, seed=8)
    ref = await archive.save(SCOPE, history)
    with pytest.raises(InvalidReferenceError):
        await archive.restore(SCOPE, bad)
    with pytest.raises(InvalidReferenceError):
        await archive.delete(SCOPE, bad)
    with pytest.raises(InvalidReferenceError):
        await archive.restore(SCOPE, ref.upper())
    assert await archive.restore(SCOPE, ref) == history  # the refusals deleted nothing


async def test_unknown_reference_is_not_found(backend: Backend) -> None:
    with pytest.raises(ArchiveNotFoundError, match="0" * 64):
        await backend.archive.restore(SCOPE, "0" * 64)


async def test_invalid_history_is_refused_with_a_clear_error(backend: Backend) -> None:
    with pytest.raises(SnapshotError, match="message 1"):
        await backend.archive.save(SCOPE, [make_history(1)[0], {"role": "robot", "content": []}])
    with pytest.raises(SnapshotError, match="JSON"):
        await backend.archive.save(SCOPE, [{"role": "user", "content": [], "metadata": {"x": float("nan")}}])
    assert await backend.stored_count() == 0


async def _save_spaced(archive: Archive, count: int) -> list[str]:
    refs = []
    for i in range(count):
        refs.append(await archive.save(SCOPE, make_history(1, seed=100 + i, tag=str(i))))
        await asyncio.sleep(0.015)  # distinct creation times, so "oldest first" is observable
    return refs


async def test_list_delete_and_prune(backend: Backend) -> None:
    archive = backend.archive
    refs = await _save_spaced(archive, 6)
    entries = await archive.list(SCOPE)
    assert [e.ref for e in entries] == refs
    assert all(a.created_at < b.created_at for a, b in itertools.pairwise(entries))
    assert await archive.delete(SCOPE, refs[0]) is True
    assert await archive.delete(SCOPE, refs[0]) is False
    with pytest.raises(ArchiveNotFoundError):
        await archive.restore(SCOPE, refs[0])

    entries = await archive.list(SCOPE)
    now = entries[-1].created_at + 10
    cutoff = (entries[1].created_at + entries[2].created_at) / 2
    assert await prune(archive, SCOPE, older_than=timedelta(seconds=now - cutoff), now=now) == refs[1:3]
    assert await prune(archive, SCOPE, keep_last=2) == refs[3:4]
    assert [e.ref for e in await archive.list(SCOPE)] == refs[4:]
    # both rules: the newest survives however old, and young snapshots survive whatever the count
    assert await prune(archive, SCOPE, keep_last=0, older_than=3600.0) == []
    assert await prune(archive, SCOPE, keep_last=1, older_than=0.0, now=now) == refs[4:5]
    assert [e.ref for e in await archive.list(SCOPE)] == refs[5:]
    with pytest.raises(ValueError, match="keep_last"):
        await prune(archive, SCOPE)


async def test_concurrent_saves_of_different_histories(backend: Backend) -> None:
    archive = backend.archive
    histories = [make_history(2, seed=200 + i, tag=str(i)) for i in range(50)]
    refs = await asyncio.gather(*(archive.save(SCOPE, h) for h in histories))
    assert len(set(refs)) == 50
    restored = await asyncio.gather(*(archive.restore(SCOPE, r) for r in refs))
    assert restored == histories
    assert sorted(e.ref for e in await archive.list(SCOPE)) == sorted(refs)
    assert await backend.stored_count() == 50


async def test_concurrent_saves_of_the_same_history(backend: Backend) -> None:
    archive = backend.archive
    history = make_history(5, seed=300, result_chars=20_000)
    refs = await asyncio.gather(*(archive.save(SCOPE, history) for _ in range(50)))
    assert set(refs) == {snapshot_ref(SCOPE, history)}
    assert await archive.restore(SCOPE, refs[0]) == history
    assert len(await archive.list(SCOPE)) == 1
    assert await backend.stored_count() == 1


async def test_saving_does_not_mutate_or_alias_the_callers_history(backend: Backend) -> None:
    archive = backend.archive
    history = make_history(2, seed=9)
    snapshot = canonical_bytes(history)
    ref = await archive.save(SCOPE, history)
    assert canonical_bytes(history) == snapshot
    restored = await archive.restore(SCOPE, ref)
    restored[0]["content"].clear()
    assert await archive.restore(SCOPE, ref) == history


def test_environment_has_no_stray_redis_import() -> None:
    # `import tracetrim.archive` must work without redis or psycopg installed, so it must not import them
    import subprocess
    import sys

    code = "import sys, tracetrim.archive; print('redis' in sys.modules or 'psycopg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert out.stdout.strip() == "False"
