"""Encoding a history into snapshot bytes and verifying snapshot bytes on the way back."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from tracetrim._json import canonical_bytes, sha256_hex, strict_loads
from tracetrim._scope import Scope
from tracetrim._snapshot import Message, SnapshotError, check_messages, unencodable_error
from tracetrim._validators import FieldValueError
from tracetrim.archive._errors import ArchiveCorruptedError, ArchiveLimitError, ScopeMismatchError
from tracetrim.archive._protocol import (
    SNAPSHOT_VERSION,
    EncodedSnapshot,
    check_ref,
    scope_label,
    snapshot_document,
)
from tracetrim.archive._sent import SENT_KEY, SentDocument, sent_of

__all__ = [
    "EncodedSnapshot",
    "SavesEncoded",
    "check_encoded",
    "check_size",
    "decode_sent",
    "decode_snapshot",
    "encode_history",
    "encode_snapshot",
]


def encode_history(scope: Scope, messages: Sequence[Message], max_bytes: int) -> bytes:
    """Validate a history and encode its snapshot; refuse it with `ArchiveLimitError` if too large.

    The reference is left to the caller, which may hash the bytes while it writes them.
    """
    check_messages(messages)
    try:
        data = canonical_bytes(snapshot_document(scope, messages))
    except (TypeError, ValueError):
        raise unencodable_error(messages) from None
    if len(data) > max_bytes:
        raise ArchiveLimitError(
            f"snapshot {sha256_hex(data)} for {scope_label(scope)} is {len(data)} bytes;"
            f" the limit is {max_bytes}"
        )
    return data


def encode_snapshot(scope: Scope, messages: Sequence[Message], max_bytes: int) -> EncodedSnapshot:
    """Validate and encode a history with its reference; refuse it before any write if too large."""
    data = encode_history(scope, messages, max_bytes)
    return EncodedSnapshot(ref=sha256_hex(data), data=data)


def check_encoded(scope: Scope, snapshot: EncodedSnapshot, max_bytes: int) -> None:
    """Refuse already encoded snapshot bytes larger than ``max_bytes`` before any write."""
    if len(snapshot.data) > max_bytes:
        raise ArchiveLimitError(
            f"snapshot {snapshot.ref} for {scope_label(scope)} is {len(snapshot.data)} bytes;"
            f" the limit is {max_bytes}"
        )


class SavesEncoded(abc.ABC):
    """`save_encoded` for an archive that stores encoded bytes through its own ``_put``: the checks
    every store makes before a write, written once."""

    max_bytes: int

    @abc.abstractmethod
    async def _put(self, scope: Scope, snap: EncodedSnapshot) -> None:
        """Store already encoded snapshot bytes (split from `save` so benchmarks can time the I/O)."""

    async def save_encoded(self, scope: Scope, snapshot: EncodedSnapshot) -> str:
        """Store a snapshot already encoded and hashed (see `EncodedSnapshotArchive`); return its ref."""
        check_ref(snapshot.ref)
        check_encoded(scope, snapshot, self.max_bytes)
        await self._put(scope, snapshot)
        return snapshot.ref


def check_size(scope: Scope, ref: str, size: int, max_bytes: int) -> None:
    """Refuse to read a stored snapshot larger than ``max_bytes``."""
    if size > max_bytes:
        raise ArchiveLimitError(
            f"snapshot {ref} in {scope_label(scope)} is {size} bytes; the limit is {max_bytes}"
        )


def decode_snapshot(scope: Scope, ref: str, data: bytes, max_bytes: int) -> list[Message]:
    """Verify size, digest, version and scope of stored bytes and return the history they hold."""
    messages: list[Message] = _verified(scope, ref, data, max_bytes)["messages"]
    return messages


def decode_sent(scope: Scope, ref: str, data: bytes, max_bytes: int) -> SentDocument:
    """The document as it was sent that verified stored bytes hold (`ArchiveNotFoundError` if none)."""
    return sent_of(_verified(scope, ref, data, max_bytes), f"snapshot {ref} in {scope_label(scope)}")


_DOCUMENT_KEYS = frozenset({"version", "scope", "messages", SENT_KEY})


def _verified(scope: Scope, ref: str, data: bytes, max_bytes: int) -> dict[str, Any]:
    """The snapshot document ``data`` holds, if it is exactly what the writer writes for ``scope``.

    A matching digest only proves the bytes were not changed after they were hashed; whoever can write
    the store can hash their own. So the document must also be what `encode_history` would have
    written: a valid history, only the known keys, no NaN or infinity, and its canonical encoding
    byte for byte (which refuses duplicate keys, other spacing or escapes, lone surrogates and
    anything else the writer never produces). Every refusal is an `ArchiveCorruptedError` naming
    the reference.
    """
    check_size(scope, ref, len(data), max_bytes)
    where = f"snapshot {ref} in {scope_label(scope)}"
    if sha256_hex(data) != ref:
        raise ArchiveCorruptedError(f"{where} is corrupted: its digest does not match the reference")
    try:
        document: Any = strict_loads(data)
    except FieldValueError as exc:  # a non-finite number
        raise ArchiveCorruptedError(f"{where} is corrupted: {exc}") from None
    except ValueError:
        raise ArchiveCorruptedError(f"{where} is corrupted: not valid JSON") from None
    except RecursionError:
        # Caught rather than checked: a scan before every restore would cost more than the decode,
        # and only tampered bytes (canonical_bytes writes nothing this deep) get here.
        raise ArchiveCorruptedError(f"{where} is corrupted: nested deeper than any snapshot") from None
    if not isinstance(document, dict) or document.get("version") != SNAPSHOT_VERSION:
        version = document.get("version") if isinstance(document, dict) else None
        raise ArchiveCorruptedError(f"{where} has unsupported version {version!r}")
    if document.get("scope") != scope.as_dict():
        raise ScopeMismatchError(f"{where} belongs to another scope")
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise ArchiveCorruptedError(f"{where} is corrupted: 'messages' is not a list")
    try:
        check_messages(messages)  # bytes written under their own digest are not proof of a history
    except SnapshotError as exc:
        raise ArchiveCorruptedError(f"{where} is corrupted: {exc}") from None
    unknown = sorted(set(document) - _DOCUMENT_KEYS)
    if unknown:
        shown = ", ".join(repr(key[:40]) for key in unknown[:3])
        raise ArchiveCorruptedError(f"{where} is corrupted: it holds keys no snapshot has ({shown})")
    try:
        written = canonical_bytes(document)
    except (TypeError, ValueError):  # UnicodeEncodeError (a lone surrogate) is a ValueError
        written = None
    if written != data:
        raise ArchiveCorruptedError(
            f"{where} is corrupted: its bytes are not what the archive writes (not canonical JSON"
            " of a history: other spacing, key order or escapes, a repeated key, or a lone surrogate)"
        )
    return document
