"""The tiny async key-value store protocol `KeyValueArchive` is built on."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class StoredItem:
    """One stored value as `KeyValueStore.scan` reports it (size in bytes, creation as a Unix time)."""

    key: str
    size: int
    created_at: float


@runtime_checkable
class KeyValueStore(Protocol):
    """Create-if-absent, get, delete and prefix scan over byte values; nothing is ever overwritten."""

    async def create_if_absent(self, key: str, value: bytes) -> bool:
        """Store ``value`` under ``key`` unless the key exists, atomically; True when it was created."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        ...

    async def scan(self, prefix: str) -> list[StoredItem]:
        """Every key starting with ``prefix``, oldest first."""
        ...
