"""Token counting, the one place: the default estimator, a host's counter type, and what a history costs.

Every budget, record, adapter and replay counts here, so a host's own counter (a `TokenCounter`) changes
them all at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tracetrim._render import block_text
from tracetrim._snapshot import Message

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text; a host may pass its model's tokenizer."""


def estimate_tokens(text: str) -> int:
    """A deterministic, tokenizer-free estimate: one token per four UTF-8 bytes, rounded up.

    Counting bytes rather than characters keeps it conservative for non-Latin scripts,
    where real tokenizers spend about one token per character.
    """
    # str.isascii is a flag lookup: an ASCII text is its own UTF-8, and is not encoded to be measured.
    return chars_to_tokens(len(text) if text.isascii() else len(text.encode("utf-8")))


BYTES_PER_TOKEN = 4
"""The estimator's ratio."""


def chars_to_tokens(chars: int) -> int:
    """Estimated tokens of ``chars`` characters (or bytes), rounded up as `estimate_tokens` rounds."""
    return (chars + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def message_tokens(message: Message, count: TokenCounter) -> int:
    """Tokens of the text a model reads in one message (text, thinking, tool names, inputs, outputs)."""
    if count is estimate_tokens:
        return _estimated(message)
    return count("\n".join(block_text(block) for block in message["content"]))


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _estimated(message: Message) -> int:
    """``estimate_tokens`` of the joined text `message_tokens` counts, from its parts' lengths: the
    default counter needs only the UTF-8 length, so the message's text is neither joined nor encoded."""
    texts = [block_text(block) for block in message["content"]]
    return chars_to_tokens(sum(map(_utf8_length, texts)) + max(len(texts) - 1, 0))


def token_counts(messages: Iterable[Message], count: TokenCounter) -> list[int]:
    """Tokens of each message; a system message counts 0 (it is not the host's to compact)."""
    return [message_tokens(m, count) if m["role"] != "system" else 0 for m in messages]


def history_tokens(messages: Iterable[Message], count: TokenCounter = estimate_tokens) -> int:
    """Tokens of a history as budgets count them, system messages excluded."""
    return sum(token_counts(messages, count))
