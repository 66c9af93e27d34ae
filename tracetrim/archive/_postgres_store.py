"""`PostgresStore`: a `KeyValueStore` in one PostgreSQL table (psycopg 3, async), created on first use."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from tracetrim._validators import FieldValueError
from tracetrim.archive._errors import ArchiveError
from tracetrim.archive._store import StoredItem

_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# The scope column is the key's {hash tag}: listing a scope reads its own rows through the index,
# never a scan of every key. `COLLATE "C"` makes key order byte order, as in the other stores.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    ' key TEXT COLLATE "C" PRIMARY KEY,'
    " scope TEXT NOT NULL,"
    " value BYTEA NOT NULL,"
    " created_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS {index} ON {table} (scope, created_at, key)",
)
# Two processes creating the table at once: one wins, the other sees one of these and carries on.
_RACE_SQLSTATES = frozenset({"23505", "42P07", "42710"})


def scope_of(key: str) -> str:
    """The ``{hash tag}`` of a key or prefix (the scope hash `KeyValueArchive` puts there), or ``""``."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1 : end] if start >= 0 and end > start else ""


class PostgresStore:
    """Values in a PostgreSQL table via psycopg 3's async connection; created with ``ON CONFLICT DO NOTHING``.

    ``conninfo`` is a ``postgresql://`` URL or a libpq connection string. The table (default
    ``tracetrim_store``) and its index are created on first use. Rows carry their scope hash in an
    indexed column, so each scope is its own partition for listing. Every statement commits on its own
    (autocommit), so an acknowledged save is as durable as the server's ``synchronous_commit`` makes it;
    a value is never overwritten, and its creation time is the server's clock. One connection per
    event loop, serialised by a lock; it reconnects after the connection is lost.
    """

    def __init__(
        self, conninfo: str, *, table: str = "tracetrim_store", connect_timeout: float = 10.0
    ) -> None:
        if not isinstance(conninfo, str) or not conninfo:
            raise FieldValueError("PostgresStore needs a postgresql:// URL or a libpq connection string")
        if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
            raise FieldValueError(
                f"table must be a lower-case SQL identifier of at most 63 characters, got {table!r}"
            )
        self.conninfo = conninfo
        self.table = table
        self._connect_timeout = connect_timeout
        self._conn: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"PostgresStore(table={self.table!r})"  # never the conninfo: it may hold a password

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(
            table=sql.Identifier(self.table), index=sql.Identifier(f"{self.table}_scope_idx")
        )

    async def _connect(self) -> Any:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(
            self.conninfo, autocommit=True, connect_timeout=max(1, round(self._connect_timeout))
        )
        try:
            for statement in _SCHEMA:
                try:
                    await conn.execute(self._sql(statement))
                except psycopg.Error as exc:
                    if exc.sqlstate not in _RACE_SQLSTATES:
                        raise
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _execute(self, statement: str, params: tuple[Any, ...]) -> tuple[int, list[Any] | None]:
        """Run one statement on this loop's connection: its row count and rows (fetched under the lock).

        A psycopg failure (server down, refused, bad credentials) is an `ArchiveError`.
        """
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # a connection belongs to the loop that opened it (asyncio.run per CLI call makes new loops)
            self._conn, self._loop, self._lock = None, loop, asyncio.Lock()
        assert self._lock is not None
        import psycopg

        async with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = await self._connect()
                cursor = await self._conn.execute(self._sql(statement), params)
                rows = await cursor.fetchall() if cursor.description is not None else None
            except psycopg.Error as exc:
                if self._conn is not None and self._conn.broken:
                    self._conn = None  # reconnect on the next call
                detail = " ".join(str(exc).split())  # psycopg's messages span lines; errors here are one
                raise ArchiveError(f"PostgreSQL archive ({self.table}): {detail}") from exc
            return cursor.rowcount, rows

    async def create_if_absent(self, key: str, value: bytes) -> bool:
        """Insert ``value`` unless ``key`` exists (one atomic statement); True when it was created."""
        count, _ = await self._execute(
            "INSERT INTO {table} (key, scope, value, created_at)"
            " VALUES (%s, %s, %s, extract(epoch from clock_timestamp()))"
            " ON CONFLICT (key) DO NOTHING",
            (key, scope_of(key), bytes(value)),
        )
        return bool(count == 1)

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        _, rows = await self._execute("SELECT value FROM {table} WHERE key = %s", (key,))
        return bytes(rows[0][0]) if rows else None

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        count, _ = await self._execute("DELETE FROM {table} WHERE key = %s", (key,))
        return bool(count == 1)

    async def scan(self, prefix: str) -> list[StoredItem]:
        """Every key starting with ``prefix`` (within the prefix's scope partition), oldest first."""
        _, rows = await self._execute(
            "SELECT key, octet_length(value), created_at FROM {table}"
            " WHERE scope = %s AND starts_with(key, %s) ORDER BY created_at, key",
            (scope_of(prefix), prefix),
        )
        return [
            StoredItem(key=key, size=int(size), created_at=float(created))
            for key, size, created in rows or []
        ]

    async def aclose(self) -> None:
        """Close the connection; the next call reopens it."""
        conn, self._conn, self._loop, self._lock = self._conn, None, None, None
        if conn is not None and not conn.closed:
            await conn.close()
