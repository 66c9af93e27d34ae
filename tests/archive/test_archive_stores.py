"""Store specifics: Redis keys and index on the real server, SQLite on disk, refusing weak stores, Scope."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests._archive_support import make_history, redis_namespace
from tracetrim._scope import MAX_SCOPE_PART_CHARS, Scope
from tracetrim.archive import (
    ArchiveCorruptedError,
    KeyValueArchive,
    MemoryStore,
    RedisStore,
    SQLiteStore,
)
from tracetrim.archive._protocol import scope_key, scope_label
from tracetrim.archive._redis_store import index_key

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")


@pytest.fixture
async def redis_client() -> AsyncIterator[Any]:
    async with redis_namespace() as (client, namespace):
        client.test_namespace = namespace
        yield client


async def test_redis_keys_carry_the_scope_hash_tag_and_an_index(redis_client: Any) -> None:
    namespace = redis_client.test_namespace
    archive = KeyValueArchive(RedisStore(redis_client), namespace=namespace)
    ref = await archive.save(SCOPE, make_history(2))
    keys = sorted([k.decode() async for k in redis_client.scan_iter(match=f"{namespace}*")])
    tag = "{" + scope_key(SCOPE) + "}"
    value_key, index = f"{namespace}snapshot:{tag}:{ref}", f"{namespace}snapshot:{tag}:index"
    assert keys == sorted([value_key, index])
    # one slot per scope, by the cluster client's own slot function; a second scope lands elsewhere
    from redis.crc import key_slot

    assert len({key_slot(k.encode()) for k in keys}) == 1
    other = await archive.save(Scope("u2", "a", "s"), make_history(2))
    other_key = f"{namespace}snapshot:{{{scope_key(Scope('u2', 'a', 's'))}}}:{other}"
    assert key_slot(other_key.encode()) != key_slot(value_key.encode())
    await archive.delete(Scope("u2", "a", "s"), other)
    assert await redis_client.zrange(index, 0, -1) == [value_key.encode()]
    assert await archive.delete(SCOPE, ref) is True
    assert [k async for k in redis_client.scan_iter(match=f"{namespace}*")] == []


async def test_redis_value_gone_from_under_its_index_is_not_listed(redis_client: Any) -> None:
    namespace = redis_client.test_namespace
    archive = KeyValueArchive(RedisStore(redis_client), namespace=namespace)
    kept = await archive.save(SCOPE, make_history(1))
    gone = await archive.save(SCOPE, make_history(2))
    await redis_client.delete(f"{namespace}snapshot:{{{scope_key(SCOPE)}}}:{gone}")  # as eviction would
    assert [e.ref for e in await archive.list(SCOPE)] == [kept]


async def test_redis_store_from_url_and_decode_responses_refused(redis_client: Any) -> None:
    import redis.asyncio

    store = RedisStore("redis://127.0.0.1:6379/0")
    key = f"{redis_client.test_namespace}{{t}}:k"
    assert await store.create_if_absent(key, b"v1") is True
    assert await store.create_if_absent(key, b"v2") is False
    assert await store.get(key) == b"v1"
    await store.aclose()
    decoding = redis.asyncio.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses"):
        RedisStore(decoding)
    await decoding.aclose()
    with pytest.raises(ValueError, match="hash tag"):
        await RedisStore(redis_client).create_if_absent("no-tag-here", b"x")


def test_index_key_follows_the_hash_tag() -> None:
    assert index_key("ns:snapshot:{abc}:" + "0" * 64) == "ns:snapshot:{abc}:index"
    assert index_key("ns:snapshot:{abc}:") == "ns:snapshot:{abc}:index"
    for bad in ("plain", "ns:{}:x", "ns:{open"):
        with pytest.raises(ValueError):
            index_key(bad)


async def test_sqlite_is_wal_owner_only_and_durable_across_reopen(tmp_path: Path) -> None:
    db = tmp_path / "a.sqlite3"
    store = SQLiteStore(db)
    archive = KeyValueArchive(store)
    history = make_history(3)
    ref = await archive.save(SCOPE, history)
    await store.aclose()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] == [
            "tracetrim_store"
        ]
    reopened = KeyValueArchive(SQLiteStore(db))
    assert await reopened.restore(SCOPE, ref) == history
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tracetrim_store SET value = substr(value, 1, 50)")
    with pytest.raises(ArchiveCorruptedError):
        await reopened.restore(SCOPE, ref)


async def test_sqlite_prefix_scan_stays_inside_the_prefix(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    for key in ("a:", "a:1", "a:2", "a;", "b:1", "a"):
        assert await store.create_if_absent(key, key.encode())
    assert [item.key for item in await store.scan("a:")] == ["a:", "a:1", "a:2"]
    assert await store.delete("a:1") is True
    assert await store.delete("a:1") is False
    assert await store.get("a:1") is None
    await store.aclose()


class _OverwritingStore:
    """A store with only get/set/delete: it cannot create-if-absent."""

    async def set(self, key: str, value: bytes) -> None: ...
    async def get(self, key: str) -> bytes | None: ...
    async def delete(self, key: str) -> bool: ...
    async def scan(self, prefix: str) -> list[Any]: ...


def test_a_store_without_create_if_absent_is_refused() -> None:
    with pytest.raises(TypeError, match="create_if_absent"):
        KeyValueArchive(_OverwritingStore())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        KeyValueArchive(MemoryStore(), namespace="x{y}")


def test_scope_validation() -> None:
    Scope(user_id="u", agent_id="a", session_id="x" * MAX_SCOPE_PART_CHARS)
    with pytest.raises(ValueError, match="user_id must not be empty"):
        Scope(user_id="", agent_id="a", session_id="s")
    with pytest.raises(ValueError, match=r"session_id is 513 characters"):
        Scope(user_id="u", agent_id="a", session_id="x" * 513)
    with pytest.raises(ValueError, match="agent_id must not contain NUL"):
        Scope(user_id="u", agent_id="a\x00b", session_id="s")
    with pytest.raises(TypeError, match="user_id must be a string"):
        Scope(user_id=7, agent_id="a", session_id="s")  # type: ignore[arg-type]
    scope = Scope(user_id="u", agent_id="a", session_id="s")
    with pytest.raises(AttributeError):
        scope.user_id = "v"  # type: ignore[misc]
    assert scope == Scope("u", "a", "s") and hash(scope) == hash(Scope("u", "a", "s"))
    assert scope.as_dict() == {"user_id": "u", "agent_id": "a", "session_id": "s"}


def test_scope_hash_separates_parts_and_hides_ids() -> None:
    # joining parts naively would make these two equal; the canonical JSON keeps them apart
    assert scope_key(Scope("a:b", "c", "d")) != scope_key(Scope("a", "b:c", "d"))
    label = scope_label(Scope("secret-user", "a", "s"))
    assert "secret" not in label and label.startswith("scope #")
