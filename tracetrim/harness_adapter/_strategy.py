"""`CompactionStrategy` and `PlanningStrategy`: what an adapter calls to shrink a history."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tracetrim._snapshot import Message
from tracetrim.compactor import CompactionRequest, Outcome


@runtime_checkable
class CompactionStrategy(Protocol):
    """Anything with ``async compact(request) -> list[Message] | None``.

    The result is the history to adopt, or None for "use the host's own compaction". `tracetrim.Compactor`
    satisfies it; so does any host-written strategy.
    """

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The new neutral history, or None to leave the host's default in charge."""
        ...


@runtime_checkable
class PlanningStrategy(CompactionStrategy, Protocol):
    """A strategy that also reports what it did: ``async plan(request) -> Outcome``.

    `tracetrim.Compactor` and `tracetrim.OffloadStrategy` are both; adapters read the outcome (and the
    archived snapshot's reference) from ``plan`` rather than from the history ``compact`` returns.
    """

    async def plan(self, request: CompactionRequest) -> Outcome:
        """The outcome of planning ``request``: adopted when ``outcome.adopted``."""
        ...
