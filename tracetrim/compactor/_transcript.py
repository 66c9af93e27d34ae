"""Stage 1: validate and copy the history, and fingerprint it so a change during planning shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._json import compact_bytes, text_length
from tracetrim._snapshot import Message, SnapshotError, copy_messages


@attrs.frozen
class Transcript:
    """A private, validated copy of the host's history and its fingerprint.

    The fingerprint is the history's compact JSON (UTF-8) in the host's key order: as long as the
    canonical JSON (so ``chars`` is the size every reduction is measured in) but one sorting pass
    cheaper, and it also notices a host reordering keys while a plan runs.
    """

    messages: list[Message]
    fingerprint: bytes = attrs.field(repr=False)

    @property
    def chars(self) -> int:
        """Characters of the history's canonical JSON."""
        return text_length(self.fingerprint)


class TranscriptTooLarge(SnapshotError):
    """The history is larger than ``max_transcript_chars``."""


def load_transcript(messages: Any, max_chars: int) -> Transcript:
    """Validate ``messages`` and return a deep copy; the caller's objects are never touched."""
    transcript = Transcript(*copy_messages(messages))
    if transcript.chars > max_chars:
        raise TranscriptTooLarge(f"history is {transcript.chars:,} characters; the limit is {max_chars:,}")
    return transcript


def unchanged(original: Sequence[Any], transcript: Transcript) -> bool:
    """True when the host's history still has the content it had when planning began."""
    try:
        return compact_bytes(list(original)) == transcript.fingerprint
    except (TypeError, ValueError):
        return False
