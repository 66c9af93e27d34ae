"""What an archive is (save, restore, list, delete) and the errors it raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from tracetrim._json import digest
from tracetrim._scope import Scope
from tracetrim._snapshot import Message

SNAPSHOT_VERSION = 1


def snapshot_document(scope: Scope, messages: Sequence[Message]) -> dict[str, Any]:
    """The archived document: format version, scope and the full history."""
    return {"version": SNAPSHOT_VERSION, "scope": scope.as_dict(), "messages": list(messages)}


def snapshot_ref(scope: Scope, messages: Sequence[Message]) -> str:
    """The reference of a history: SHA-256 hex of its canonical snapshot document."""
    return digest(snapshot_document(scope, messages))


@attrs.frozen
class ArchiveEntry:
    """One archived snapshot as `Archive.list` reports it."""

    ref: str
    size: int
    created_at: float


class ArchiveError(Exception):
    """Base of every archive failure; messages name the reference, never scope secrets."""


@runtime_checkable
class Archive(Protocol):
    """Durable, content-addressed storage of whole histories, one namespace per `Scope`."""

    async def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Store the history; return its reference (idempotent for the same history)."""
        ...

    async def restore(self, scope: Scope, ref: str) -> list[Message]:
        """Return the history saved under ``ref``, verified; raise `ArchiveError` otherwise."""
        ...

    async def list(self, scope: Scope) -> list[ArchiveEntry]:
        """The snapshots of ``scope``, oldest first."""
        ...

    async def delete(self, scope: Scope, ref: str) -> bool:
        """Remove a snapshot; True when something was removed."""
        ...
