"""Stage 1: validate and copy the history, and fingerprint it so a change during planning shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim._json import canonical_json
from tracetrim._snapshot import Message, SnapshotError, copy_messages


@attrs.frozen
class Transcript:
    """A private, validated copy of the host's history and its canonical JSON."""

    messages: list[Message]
    canonical: str

    @property
    def chars(self) -> int:
        """Characters of the canonical JSON: the size every reduction is measured in."""
        return len(self.canonical)


class TranscriptTooLarge(SnapshotError):
    """The history is larger than ``max_transcript_chars``."""


def load_transcript(messages: Any, max_chars: int) -> Transcript:
    """Validate ``messages`` and return a deep copy; the caller's objects are never touched."""
    copied, _ = copy_messages(messages)
    canonical = canonical_json(copied)
    if len(canonical) > max_chars:
        raise TranscriptTooLarge(f"history is {len(canonical):,} characters; the limit is {max_chars:,}")
    return Transcript(copied, canonical)


def unchanged(original: Sequence[Any], transcript: Transcript) -> bool:
    """True when the host's history still has the content it had when planning began."""
    try:
        return canonical_json(list(original)) == transcript.canonical
    except (TypeError, ValueError):
        return False
