"""Stage 1: validate and copy the history, and fingerprint it so a change during planning shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._snapshot import (
    LIST_FRAME,
    BlockSizes,
    EncodedHistory,
    Frame,
    Message,
    SnapshotError,
    copy_messages,
    history_digest,
    same_encoding,
)


@attrs.frozen
class Transcript:
    """A private, validated copy of the host's history, its sizes and its fingerprint.

    The fingerprint is the SHA-256 of the history's canonical JSON (UTF-8) in ``frame``: with an
    archive's frame it is the reference the history will be archived under, so one hash serves both.
    ``encoded`` keeps each message's canonical JSON when the history is to be archived (the archive
    stores those bytes, nothing is encoded again); otherwise only the digest is kept (the JSON would
    hold as much memory again as the history). Either way each message is encoded once, on its own.
    """

    messages: list[Message]
    sizes: Sequence[int] = attrs.field(repr=False)
    """Characters of each message's canonical JSON: what a rebuild that replaces it takes away."""
    chars: int
    """Characters of the history's canonical JSON."""
    fingerprint: bytes = attrs.field(repr=False)
    frame: Frame = attrs.field(default=LIST_FRAME, repr=False)
    encoded: list[bytes] | None = attrs.field(default=None, repr=False, eq=False)
    blocks: BlockSizes | None = attrs.field(default=None, repr=False, eq=False)
    """Characters of each block's canonical JSON (measured while copying: no block is encoded again)."""


class TranscriptTooLarge(SnapshotError):
    """The history is larger than ``max_transcript_chars``."""


def load_transcript(
    messages: Any, max_chars: int, *, frame: Frame = LIST_FRAME, keep_encoded: bool = False
) -> Transcript:
    """Validate ``messages`` and return a deep copy; the caller's objects are never touched.

    ``frame`` frames the fingerprinted JSON (an archive's, to make the fingerprint its reference);
    ``keep_encoded`` keeps each message's canonical JSON in ``encoded``.
    """
    copied = copy_messages(messages, frame=frame, keep_encoded=keep_encoded)
    transcript = Transcript(
        copied.messages, copied.sizes, copied.chars, copied.digest, frame, copied.encoded, copied.blocks
    )
    if transcript.chars > max_chars:
        raise TranscriptTooLarge(f"history is {transcript.chars:,} characters; the limit is {max_chars:,}")
    return transcript


def unchanged(original: Sequence[Any], transcript: Transcript) -> bool:
    """True when the host's history still has the content it had when planning began.

    The history is encoded once more; it is compared with the kept JSON where there is some (no hash),
    with the fingerprint otherwise. An ``owned`` `EncodedHistory` is not: whoever made it (an adapter,
    the CLI, the service) made it of its own private copy and vouches that it does not change.
    """
    if isinstance(original, EncodedHistory) and original.owned:
        return True
    if transcript.encoded is not None:
        return same_encoding(original, transcript.encoded)
    try:
        return history_digest(original, transcript.frame) == transcript.fingerprint
    except (TypeError, ValueError):
        return False
