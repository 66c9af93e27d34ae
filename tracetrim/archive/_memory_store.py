"""`MemoryStore`: an in-process `KeyValueStore` for tests, demos and single-process hosts."""

from __future__ import annotations

import time

from tracetrim.archive._store import StoredItem


class MemoryStore:
    """A dict-backed store; each operation completes without awaiting, so it is atomic under asyncio."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[bytes, float]] = {}

    async def create_if_absent(self, key: str, value: bytes) -> bool:
        """Store ``value`` unless ``key`` exists; True when it was created."""
        if key in self._items:
            return False
        self._items[key] = (bytes(value), time.time())
        return True

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        item = self._items.get(key)
        return None if item is None else item[0]

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        return self._items.pop(key, None) is not None

    async def scan(self, prefix: str) -> list[StoredItem]:
        """Every key starting with ``prefix``, oldest first."""
        found = [
            StoredItem(key=key, size=len(value), created_at=created)
            for key, (value, created) in self._items.items()
            if key.startswith(prefix)
        ]
        found.sort(key=lambda item: (item.created_at, item.key))
        return found
