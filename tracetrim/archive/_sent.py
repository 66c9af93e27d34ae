"""The document as the user sent it (a file's or a request body's exact bytes), archived in its snapshot.

It rides inside the snapshot document under ``sent``, so every archive kind stores it with the neutral
history in one object, under one digest: a save is whole or absent, and a restore verifies both.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

import attrs

from tracetrim.archive._errors import ArchiveCorruptedError, ArchiveNotFoundError

SENT_KEY = "sent"
"""The snapshot document's key holding the sent document (absent when none was given)."""


@attrs.frozen
class SentDocument:
    """A history document as it was sent: its format name (`tracetrim.formats.HISTORY_FORMATS`) and
    its exact bytes (the whole file or request body, every field kept)."""

    format: str = attrs.field(validator=attrs.validators.instance_of(str))
    data: bytes = attrs.field(
        validator=attrs.validators.instance_of(bytes), repr=lambda data: f"<{len(data)} bytes>"
    )

    def as_json(self) -> dict[str, str]:
        """The JSON object stored in the snapshot: format, bytes in base64 and their SHA-256."""
        return {
            "data": base64.b64encode(self.data).decode("ascii"),
            "format": self.format,
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }


def sent_from_json(value: Any, where: str) -> SentDocument:
    """The `SentDocument` stored in a snapshot; `ArchiveCorruptedError` naming ``where`` otherwise."""
    if not isinstance(value, Mapping) or set(value) != {"data", "format", "sha256"}:
        raise ArchiveCorruptedError(f"{where} is corrupted: its sent document is malformed")
    fmt, encoded, digest = value["format"], value["data"], value["sha256"]
    if not all(isinstance(v, str) for v in (fmt, encoded, digest)):
        raise ArchiveCorruptedError(f"{where} is corrupted: its sent document is malformed")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ArchiveCorruptedError(f"{where} is corrupted: its sent document is not base64") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ArchiveCorruptedError(f"{where} is corrupted: its sent document does not match its digest")
    return SentDocument(fmt, data)


def sent_of(document: Mapping[str, Any], where: str) -> SentDocument:
    """The sent document a decoded snapshot holds; `ArchiveNotFoundError` when it holds none."""
    if SENT_KEY not in document:
        raise ArchiveNotFoundError(f"{where} holds no sent document (only the neutral history)")
    return sent_from_json(document[SENT_KEY], where)


async def restore_sent(archive: Any, scope: Any, ref: str) -> SentDocument:
    """The document as it was sent that ``archive`` saved with the history under ``ref``: its exact bytes.

    `FileArchive` and `KeyValueArchive` keep it when the request carried one
    (`CompactionRequest.sent`); `ArchiveNotFoundError` when the snapshot holds none or ``archive`` is of
    a kind that keeps only the neutral history.
    """
    restore = getattr(archive, "restore_sent", None)
    if restore is None:
        raise ArchiveNotFoundError(
            f"{type(archive).__name__} keeps only the neutral history, not the sent document"
        )
    document: SentDocument = await restore(scope, ref)
    return document
