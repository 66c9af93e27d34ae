"""`open_archive(url)`: every scheme opens the right store, and a wrong one is an error, never a folder."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from tests._archive_support import make_history, postgres_table, redis_namespace
from tracetrim._scope import Scope
from tracetrim.archive import (
    ARCHIVE_SCHEMES,
    ArchiveError,
    ArchiveUrlError,
    FileArchive,
    KeyValueArchive,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SQLiteStore,
    close_archive,
    open_archive,
)

SCOPE = Scope(user_id="u", agent_id="a", session_id=f"s-{uuid.uuid4().hex}")


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("arch", "arch"),
        ("./a/b", "a/b"),
        ("file:arch", "arch"),
        ("file:///tmp/x", "/tmp/x"),
        ("C:/x", "C:/x"),
    ],
)
def test_folder_paths_and_file_urls_open_a_file_archive(url: str, root: str) -> None:
    archive = open_archive(url)
    assert isinstance(archive, FileArchive)
    assert archive.root == Path(root)
    assert isinstance(open_archive(Path("p")), FileArchive)


def test_store_urls_open_the_named_store(tmp_path: Path) -> None:
    sqlite = open_archive(f"sqlite:{tmp_path / 'a.db'}", max_bytes=1234)
    assert isinstance(sqlite, KeyValueArchive) and isinstance(sqlite.store, SQLiteStore)
    assert (sqlite.store.path, sqlite.max_bytes) == (str(tmp_path / "a.db"), 1234)
    assert open_archive(f"sqlite://{tmp_path}/b.db").store.path == f"{tmp_path}/b.db"  # type: ignore[attr-defined]
    for url in ("redis://127.0.0.1:6379/0", "rediss://example.com:6380/1"):
        archive = open_archive(url)
        assert isinstance(archive, KeyValueArchive) and isinstance(archive.store, RedisStore)
    for url in ("postgresql://root@127.0.0.1/test", "postgres://u:secret@db/x"):
        archive = open_archive(url)
        assert isinstance(archive, KeyValueArchive) and isinstance(archive.store, PostgresStore)
        assert "secret" not in repr(archive)
    assert isinstance(open_archive("memory:").store, MemoryStore)  # type: ignore[attr-defined]
    assert set(ARCHIVE_SCHEMES) == {"file", "sqlite", "redis", "rediss", "postgresql", "postgres", "memory"}


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("bogus://x", "unknown scheme 'bogus'"),
        ("s3://bucket/key", "unknown scheme 's3'"),
        ("redis:/x", "two slashes"),
        ("redis:x", "two slashes"),
        ("redis://", "two slashes"),
        ("postgresql:db", "two slashes"),
        ("sqlite:", "needs a path"),
        ("file:", "needs a path"),
        ("sqlite://host/x", "local path"),
        ("memory:x", "nothing after"),
        ("", "non-empty"),
    ],
)
def test_a_wrong_url_is_an_error_and_creates_nothing(
    url: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArchiveUrlError, match=says) as caught:
        open_archive(url)
    assert isinstance(caught.value, ArchiveError) and isinstance(caught.value, ValueError)
    assert list(tmp_path.iterdir()) == []


async def test_each_scheme_round_trips_a_history(tmp_path: Path) -> None:
    history = make_history(3, seed=7)
    urls = [f"file:{tmp_path / 'f'}", f"sqlite:{tmp_path / 'a.db'}", "memory:"]
    async with redis_namespace():
        urls.append("redis://127.0.0.1:6379/0")
    for url in urls:
        archive = open_archive(url)
        try:
            ref = await archive.save(SCOPE, history)
            assert await archive.restore(SCOPE, ref) == history, url
            assert await archive.delete(SCOPE, ref), url
        finally:
            await close_archive(archive)


async def test_postgres_url_round_trips_and_creates_its_table_on_first_use() -> None:
    async with postgres_table() as (conn, url, table):
        archive = open_archive(url, table=table)
        history = make_history(2, seed=8)
        try:
            cursor = await conn.execute("SELECT to_regclass(%s)", (table,))
            assert (await cursor.fetchone()) == (None,)
            ref = await archive.save(SCOPE, history)
            assert await archive.restore(SCOPE, ref) == history
            # a second store (another process, say) sees the same rows and creates nothing twice
            other = open_archive(url, table=table)
            assert [e.ref for e in await other.list(SCOPE)] == [ref]
            await close_archive(other)
        finally:
            await close_archive(archive)


async def test_postgres_down_is_an_archive_error_naming_the_store() -> None:
    archive = open_archive("postgresql://root@127.0.0.1:1/test?connect_timeout=2")
    with pytest.raises(ArchiveError, match="PostgreSQL archive"):
        await archive.list(SCOPE)
    await close_archive(archive)


def test_postgres_store_refuses_a_bad_table_name() -> None:
    with pytest.raises(ValueError, match="table"):
        PostgresStore("postgresql://x/y", table="x; DROP TABLE y")


async def test_postgres_stores_racing_to_create_the_table_both_succeed() -> None:
    """Eight connections (as eight processes would) create the table and save at the same moment."""
    async with postgres_table() as (_, url, table):
        stores = [PostgresStore(url, table=table) for _ in range(8)]
        archives = [KeyValueArchive(store) for store in stores]
        history = make_history(2, seed=11)
        try:
            refs = await asyncio.gather(*(archive.save(SCOPE, history) for archive in archives))
            assert len(set(refs)) == 1
            assert [e.ref for e in await archives[0].list(SCOPE)] == refs[:1]
        finally:
            for store in stores:
                await store.aclose()
