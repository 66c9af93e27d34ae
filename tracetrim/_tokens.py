"""Token counting: the default estimator and the type a host's own counter must have."""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text; a host may pass its model's tokenizer."""


def estimate_tokens(text: str) -> int:
    """A deterministic, tokenizer-free estimate: one token per four UTF-8 bytes, rounded up.

    Counting bytes rather than characters keeps it conservative for non-Latin scripts,
    where real tokenizers spend about one token per character.
    """
    return (len(text.encode("utf-8")) + 3) // 4
