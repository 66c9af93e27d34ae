"""Views of the format table for callers that want a plain converter or key by format name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tracetrim._snapshot import Message
from tracetrim.formats._table import HISTORY_FORMATS

READERS: dict[str, Callable[[Sequence[Any]], list[Message]]] = {
    name: fmt.read for name, fmt in HISTORY_FORMATS.items()
}
"""Format name to its converter into neutral messages (``neutral`` is taken as it is, checked later)."""

MESSAGES_KEY: dict[str, str] = {
    name: fmt.messages_key for name, fmt in HISTORY_FORMATS.items() if fmt.messages_key != "messages"
}
"""Where a format's file object keeps its message list, when not under ``messages``."""
