"""`SQLiteStore`: an embedded, durable `KeyValueStore` in one SQLite table (WAL mode)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time

from tracetrim.archive._store import StoredItem

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tracetrim_store (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID
"""
# Every key the archive writes is ASCII, and no UTF-8 string sharing the prefix sorts past this bound.
_PREFIX_END = "\U0010ffff"


class SQLiteStore:
    """One SQLite file, WAL mode, ``synchronous=FULL`` so an acknowledged save survives power loss.

    Calls run in worker threads over one connection guarded by a lock; several processes may
    share the file (SQLite's own locking, with a ``timeout`` in seconds for busy waits).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path != ":memory:":
                # snapshots are private: create the file owner-only (SQLite's -wal/-shm files copy it)
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            conn = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _create(self, key: str, value: bytes) -> bool:
        with self._lock:
            cursor = self._connection().execute(
                "INSERT OR IGNORE INTO tracetrim_store (key, value, created_at) VALUES (?, ?, ?)",
                (key, value, time.time()),
            )
            return cursor.rowcount == 1

    def _get(self, key: str) -> bytes | None:
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT value FROM tracetrim_store WHERE key = ?", (key,))
                .fetchone()
            )
        return None if row is None else bytes(row[0])

    def _delete(self, key: str) -> bool:
        with self._lock:
            cursor = self._connection().execute("DELETE FROM tracetrim_store WHERE key = ?", (key,))
            return cursor.rowcount == 1

    def _scan(self, prefix: str) -> list[StoredItem]:
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT key, length(value), created_at FROM tracetrim_store"
                    " WHERE key >= ? AND key < ? ORDER BY created_at, key",
                    (prefix, prefix + _PREFIX_END),
                )
                .fetchall()
            )
        return [StoredItem(key=key, size=size, created_at=created) for key, size, created in rows]

    def _close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def create_if_absent(self, key: str, value: bytes) -> bool:
        """Insert ``value`` unless ``key`` exists (one atomic statement); True when it was created."""
        return await asyncio.to_thread(self._create, key, bytes(value))

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        return await asyncio.to_thread(self._get, key)

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        return await asyncio.to_thread(self._delete, key)

    async def scan(self, prefix: str) -> list[StoredItem]:
        """Every key starting with ``prefix``, oldest first."""
        return await asyncio.to_thread(self._scan, prefix)

    async def aclose(self) -> None:
        """Close the connection; the next call reopens it."""
        await asyncio.to_thread(self._close)
