"""`KeyValueArchive`: snapshots in any create-if-absent key-value store (memory, SQLite, Redis)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.archive._document import (
    EncodedSnapshot,
    SavesEncoded,
    decode_sent,
    decode_snapshot,
    encode_snapshot,
)
from tracetrim.archive._errors import ArchiveCorruptedError, ArchiveError, ArchiveNotFoundError
from tracetrim.archive._protocol import DEFAULT_MAX_BYTES, ArchiveEntry, check_ref, scope_key, scope_label
from tracetrim.archive._sent import SentDocument
from tracetrim.archive._store import KeyValueStore

_STORE_METHODS = ("create_if_absent", "get", "delete", "scan")
_T = TypeVar("_T")


async def _calling(store_call: Awaitable[_T], what: str) -> _T:
    """Await a store call; any failure but an `ArchiveError` (a connection lost, a Redis key of
    the wrong type, a locked SQLite file) becomes an `ArchiveError` saying what could not be done."""
    try:
        return await store_call
    except ArchiveError:
        raise
    except Exception as exc:
        raise ArchiveError(f"could not {what}: {type(exc).__name__}: {exc}") from exc


class KeyValueArchive(SavesEncoded):
    """Snapshots under ``<namespace>snapshot:{<scope hash>}:<ref>`` in a `KeyValueStore`.

    The store must offer an atomic create-if-absent: content addressing relies on a reference,
    once written, never changing. The scope hash sits in a ``{hash tag}`` so Redis Cluster keeps
    a scope on one slot.
    """

    def __init__(
        self, store: KeyValueStore, max_bytes: int = DEFAULT_MAX_BYTES, *, namespace: str = "tracetrim:"
    ) -> None:
        missing = [name for name in _STORE_METHODS if not callable(getattr(store, name, None))]
        if missing:
            raise FieldTypeError(
                f"{type(store).__name__} cannot serve as an archive store: it lacks {', '.join(missing)}"
                " (an atomic create-if-absent is required)"
            )
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise FieldValueError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        if "{" in namespace or "}" in namespace:
            raise FieldValueError("namespace must not contain '{' or '}' (the scope hash is the hash tag)")
        self.store = store
        self.max_bytes = max_bytes
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"KeyValueArchive({self.store!r}, max_bytes={self.max_bytes}, namespace={self.namespace!r})"

    def _prefix(self, scope: Scope) -> str:
        return f"{self.namespace}snapshot:{{{scope_key(scope)}}}:"

    async def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Store the history; return its reference. Saving it again writes nothing."""
        snap = await asyncio.to_thread(encode_snapshot, scope, messages, self.max_bytes)
        await self._put(scope, snap)
        return snap.ref

    async def _put(self, scope: Scope, snap: EncodedSnapshot) -> None:
        """Store already encoded snapshot bytes (split from `save` so benchmarks can time the I/O).

        A reference already present counts as stored only when its bytes are the snapshot's
        (a copy corrupted in place, even at the same size, must not let a plan adopt): a bad copy
        is deleted and written again, and a copy that cannot be made good is an error.
        """
        key = self._prefix(scope) + snap.ref
        what = f"save snapshot {snap.ref} in {scope_label(scope)}"
        for _ in range(3):
            if await _calling(self.store.create_if_absent(key, snap.data), what):
                return
            stored = await _calling(self.store.get(key), what)
            if stored == snap.data:
                return
            if stored is not None:
                await _calling(self.store.delete(key), what)
        raise ArchiveCorruptedError(
            f"snapshot {snap.ref} in {scope_label(scope)} is stored with other bytes"
            " and could not be rewritten"
        )

    async def restore(self, scope: Scope, ref: str) -> list[Message]:
        """The verified history saved under ``ref`` in ``scope``."""
        data = await self._read(scope, ref)
        return await asyncio.to_thread(decode_snapshot, scope, ref, data, self.max_bytes)

    async def restore_sent(self, scope: Scope, ref: str) -> SentDocument:
        """The document as it was sent, saved with the history under ``ref``, verified, byte for byte
        (`ArchiveNotFoundError` when the snapshot holds none)."""
        data = await self._read(scope, ref)
        return await asyncio.to_thread(decode_sent, scope, ref, data, self.max_bytes)

    async def _read(self, scope: Scope, ref: str) -> bytes:
        check_ref(ref)
        data = await _calling(
            self.store.get(self._prefix(scope) + ref), f"read snapshot {ref} in {scope_label(scope)}"
        )
        if data is None:
            raise ArchiveNotFoundError(f"no snapshot {ref} in {scope_label(scope)}")
        return data

    async def list(self, scope: Scope) -> list[ArchiveEntry]:
        """The snapshots of ``scope``, oldest first."""
        prefix = self._prefix(scope)
        entries = []
        for item in await _calling(self.store.scan(prefix), f"list snapshots of {scope_label(scope)}"):
            ref = item.key[len(prefix) :]
            try:
                check_ref(ref)
            except ArchiveError:
                continue  # not ours: someone else's key under the same prefix
            entries.append(ArchiveEntry(ref=ref, size=item.size, created_at=item.created_at))
        return entries

    async def delete(self, scope: Scope, ref: str) -> bool:
        """Remove the snapshot ``ref`` of ``scope``; True when it existed."""
        check_ref(ref)
        what = f"delete snapshot {ref} in {scope_label(scope)}"
        return bool(await _calling(self.store.delete(self._prefix(scope) + ref), what))
