"""`RedisStore`: a `KeyValueStore` on redis.asyncio, cluster-safe, with a sorted-set index per scope."""

from __future__ import annotations

from typing import Any

from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.archive._store import StoredItem

# SET NX and the index update happen in one script so a crash never leaves a value out of its index.
_CREATE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  local now = redis.call('TIME')
  redis.call('ZADD', KEYS[2], tonumber(now[1]) + tonumber(now[2]) / 1000000, KEYS[1])
  return 1
end
return 0
"""
_DELETE = """
local removed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
return removed
"""


def index_key(key_or_prefix: str) -> str:
    """The index key for a key or prefix: everything up to its hash tag's ``}``, then ``:index``.

    Sharing the hash tag puts the index on the same Redis Cluster slot as the values it lists,
    which the two scripts above need.
    """
    start = key_or_prefix.find("{")
    end = key_or_prefix.find("}", start + 1)
    if start < 0 or end < 0 or end == start + 1:
        raise FieldValueError(
            f"RedisStore keys need a non-empty {{hash tag}} so one scope stays on one slot: {key_or_prefix!r}"
        )
    return key_or_prefix[: end + 1] + ":index"


class RedisStore:
    """Values in Redis (standalone or Cluster) via ``redis.asyncio``; created with ``SET NX``.

    ``client`` is a URL (``redis://host:6379/0``) or a ready ``redis.asyncio`` client created with
    ``decode_responses=False``. Every key must carry a ``{hash tag}``; `KeyValueArchive` puts the
    scope hash there. Values are never overwritten, and their creation time is the server's clock.
    """

    def __init__(self, client: Any = "redis://127.0.0.1:6379/0") -> None:
        if isinstance(client, str):
            import redis.asyncio  # here, not at module top: `import tracetrim.archive` must not need redis

            client = redis.asyncio.Redis.from_url(client)
            self._owns_client = True
        else:
            self._owns_client = False
        pool = getattr(client, "connection_pool", None)
        if getattr(pool, "connection_kwargs", {}).get("decode_responses"):
            raise FieldValueError("RedisStore needs a client created with decode_responses=False")
        self.client: Any = client
        self._create = client.register_script(_CREATE)
        self._delete = client.register_script(_DELETE)

    def __repr__(self) -> str:
        return f"RedisStore({self.client!r})"

    async def create_if_absent(self, key: str, value: bytes) -> bool:
        """``SET key value NX`` plus the index entry, atomically; True when it was created."""
        created = await self._create(keys=[key, index_key(key)], args=[bytes(value)])
        return bool(created)

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        value = await self.client.get(key)
        if value is None or isinstance(value, bytes):
            return value
        raise FieldTypeError("RedisStore needs a client created with decode_responses=False")

    async def delete(self, key: str) -> bool:
        """Remove ``key`` and its index entry; True when it existed."""
        removed = await self._delete(keys=[key, index_key(key)], args=[])
        return bool(removed)

    async def scan(self, prefix: str) -> list[StoredItem]:
        """Every key starting with ``prefix`` (read from the index, not a keyspace SCAN), oldest first."""
        index = index_key(prefix)
        members = await self.client.zrange(index, 0, -1, withscores=True)
        wanted = [(_text(member), float(score)) for member, score in members]
        wanted = [(key, score) for key, score in wanted if key.startswith(prefix)]
        if not wanted:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for key, _ in wanted:
                pipe.strlen(key)
            sizes = await pipe.execute()
        # a stored snapshot is never empty, so length 0 means the value is gone (evicted, expired)
        found = [
            StoredItem(key=key, size=int(size), created_at=score)
            for (key, score), size in zip(wanted, sizes, strict=True)
            if int(size) > 0
        ]
        found.sort(key=lambda item: (item.created_at, item.key))
        return found

    async def aclose(self) -> None:
        """Close the client if this store created it from a URL."""
        if self._owns_client:
            await self.client.aclose()


def _text(member: bytes | str) -> str:
    return member.decode("utf-8") if isinstance(member, bytes) else member
