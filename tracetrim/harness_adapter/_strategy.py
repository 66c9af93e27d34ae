"""`CompactionStrategy`: what an adapter calls to shrink a history (a `Compactor` is one)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tracetrim._snapshot import Message
from tracetrim.compactor import CompactionRequest


@runtime_checkable
class CompactionStrategy(Protocol):
    """Anything with ``async compact(request) -> list[Message] | None``.

    The result is the history to adopt, or None for "use the host's own compaction". `tracetrim.Compactor`
    satisfies it; so does any host-written strategy.
    """

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The new neutral history, or None to leave the host's default in charge."""
        ...
