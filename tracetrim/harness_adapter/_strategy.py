"""`CompactionStrategy`: what an adapter calls to shrink a history (``plan`` and ``compact``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tracetrim._snapshot import Message
from tracetrim.compactor import CompactionRequest, Outcome


@runtime_checkable
class CompactionStrategy(Protocol):
    """Anything with ``async plan(request) -> Outcome`` and ``async compact(request)``.

    `tracetrim.Compactor` and `tracetrim.OffloadStrategy` are both (one runner drives them). Adapters
    only call ``plan``: the outcome says whether its history was adopted (``outcome.adopted``), the
    history (``outcome.plan.messages``, valid neutral messages) and the archived original's reference
    (``outcome.plan.archive_ref``). ``compact`` is the harness entry point of the same plan: the
    history to adopt, or None for "use the host's own compaction".

    A strategy may also say how it takes an adapter's token budget: ``own_budget`` (True: it keeps
    its own trigger and target) and ``with_budget(trigger_tokens, target_tokens)`` (itself planning to
    them); one without them is asked above the adapter's trigger, unchanged.
    """

    async def plan(self, request: CompactionRequest) -> Outcome:
        """The outcome of planning ``request``: adopted when ``outcome.adopted``."""
        ...

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The new neutral history, or None to leave the host's default in charge."""
        ...
