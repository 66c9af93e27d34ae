"""What an archive is (save, restore, list, delete), its reference format and scope naming."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from tracetrim._json import canonical_bytes, digest
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim.archive._errors import ArchiveError, InvalidReferenceError
from tracetrim.archive._sent import SENT_KEY, SentDocument

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SNAPSHOT_VERSION",
    "Archive",
    "ArchiveEntry",
    "ArchiveError",
    "EncodedSnapshot",
    "EncodedSnapshotArchive",
    "check_ref",
    "scope_key",
    "scope_label",
    "snapshot_document",
    "snapshot_frame",
    "snapshot_ref",
]

SNAPSHOT_VERSION = 1
DEFAULT_MAX_BYTES = 20_000_000

_REF = re.compile(r"[0-9a-f]{64}")


def snapshot_document(
    scope: Scope, messages: Sequence[Message], sent: SentDocument | None = None
) -> dict[str, Any]:
    """The archived document: format version, scope, the full history and, when given, the document as
    it was sent (`SentDocument`)."""
    document: dict[str, Any] = {
        "version": SNAPSHOT_VERSION,
        "scope": scope.as_dict(),
        "messages": list(messages),
    }
    if sent is not None:
        document[SENT_KEY] = sent.as_json()
    return document


def snapshot_frame(scope: Scope, sent: SentDocument | None = None) -> tuple[bytes, bytes]:
    """The canonical snapshot document's bytes before its first message and after its last.

    ``head + b",".join(canonical_bytes(m) for m in messages) + tail`` is
    ``canonical_bytes(snapshot_document(scope, messages))`` (sorted keys put ``messages`` first), so a
    history encoded message by message is stored and referenced without being encoded again.
    """
    tail = b'],"scope":' + canonical_bytes(scope.as_dict())
    if sent is not None:  # sorted keys: "sent" sits between "scope" and "version"
        tail += b',"sent":' + canonical_bytes(sent.as_json())
    tail += b',"version":' + b"%d}" % SNAPSHOT_VERSION
    return b'{"messages":[', tail


def snapshot_ref(scope: Scope, messages: Sequence[Message]) -> str:
    """The reference of a history: SHA-256 hex of its canonical snapshot document."""
    return digest(snapshot_document(scope, messages))


def scope_key(scope: Scope) -> str:
    """A stable 64-hex name for a scope, used for folders and keys so ids never reach the disk or Redis."""
    return digest(scope.as_dict())


def scope_label(scope: Scope) -> str:
    """A short, non-secret way to name a scope in error messages."""
    return f"scope #{scope_key(scope)[:12]}"


def check_ref(ref: object) -> str:
    """Return ``ref`` if it is exactly 64 lower-case hex characters; raise `InvalidReferenceError`."""
    if not isinstance(ref, str) or _REF.fullmatch(ref) is None:
        shown = ref[:80] if isinstance(ref, str) else type(ref).__name__
        raise InvalidReferenceError(
            f"invalid archive reference {shown!r}: expected 64 lower-case hex characters"
        )
    return ref


@attrs.frozen
class ArchiveEntry:
    """One archived snapshot as `Archive.list` reports it (size in bytes, creation as a Unix time)."""

    ref: str
    size: int
    created_at: float


@attrs.frozen
class EncodedSnapshot:
    """A history ready to store: its canonical snapshot bytes and their SHA-256 reference."""

    ref: str
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")


@runtime_checkable
class Archive(Protocol):
    """Durable, content-addressed storage of whole histories, one namespace per `Scope`."""

    async def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Store the history; return its reference (idempotent for the same history)."""
        ...

    async def restore(self, scope: Scope, ref: str) -> list[Message]:
        """Return the history saved under ``ref``, verified; raise `ArchiveError` otherwise.

        The result equals what was saved and has the same canonical bytes; being stored as
        canonical JSON, objects come back with their keys in sorted order.
        """
        ...

    async def list(self, scope: Scope) -> list[ArchiveEntry]:
        """The snapshots of ``scope``, oldest first."""
        ...

    async def delete(self, scope: Scope, ref: str) -> bool:
        """Remove a snapshot; True when something was removed."""
        ...


@runtime_checkable
class EncodedSnapshotArchive(Archive, Protocol):
    """An `Archive` that can also store a snapshot its caller has already encoded and hashed.

    The runner stores an original history this way: it encoded and hashed each message once while
    copying it, so the archive neither encodes nor hashes the history again. `FileArchive` and
    `KeyValueArchive` are both.
    """

    async def save_encoded(self, scope: Scope, snapshot: EncodedSnapshot) -> str:
        """Store ``snapshot`` (``canonical_bytes(snapshot_document(scope, messages))`` and its SHA-256
        hex); return its reference. Refuses it, as `save` would, when larger than the archive allows."""
        ...
