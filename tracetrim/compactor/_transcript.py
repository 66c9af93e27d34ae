"""Stage 1: validate and copy the history, and fingerprint it so a change during planning shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._snapshot import Message, SnapshotError, copy_messages, history_digest


@attrs.frozen
class Transcript:
    """A private, validated copy of the host's history, its sizes and its fingerprint.

    The fingerprint is the SHA-256 of the history's compact JSON (UTF-8) in the host's key order: that
    JSON is as long as the canonical JSON (so ``chars`` is the size every reduction is measured in)
    but one sorting pass cheaper, and it also notices a host reordering keys while a plan runs. Only
    the digest is kept (the JSON would hold as much memory again as the history), and it is made
    message by message, so the whole JSON never exists.
    """

    messages: list[Message]
    sizes: list[int] = attrs.field(repr=False)
    """Characters of each message's canonical JSON: what a rebuild that replaces it takes away."""
    chars: int
    """Characters of the history's canonical JSON."""
    fingerprint: bytes = attrs.field(repr=False)


class TranscriptTooLarge(SnapshotError):
    """The history is larger than ``max_transcript_chars``."""


def load_transcript(messages: Any, max_chars: int) -> Transcript:
    """Validate ``messages`` and return a deep copy; the caller's objects are never touched."""
    copied = copy_messages(messages)
    transcript = Transcript(copied.messages, copied.sizes, copied.chars, copied.digest)
    if transcript.chars > max_chars:
        raise TranscriptTooLarge(f"history is {transcript.chars:,} characters; the limit is {max_chars:,}")
    return transcript


def unchanged(original: Sequence[Any], transcript: Transcript) -> bool:
    """True when the host's history still has the content it had when planning began."""
    try:
        return history_digest(original) == transcript.fingerprint
    except (TypeError, ValueError):
        return False
