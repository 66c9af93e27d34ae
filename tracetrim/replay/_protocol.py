"""What a replayed strategy is: something that, started on a run, hands the model a prompt at every call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from tracetrim._snapshot import Message
from tracetrim.learn._sources import Trajectory
from tracetrim.replay._book import MessageBook
from tracetrim.replay._host import HostRule


@attrs.frozen
class Turn:
    """What a strategy sends for one model call: the prompt's messages, and whether it planned for it."""

    messages: Sequence[Message]
    planned: bool = False
    """True when the strategy ran a compaction attempt before this call (adopted or not)."""
    reason: str = ""
    """The attempt's outcome reason (``ARCHIVED_PROPOSAL``, ``TARGET_NOT_REACHED``, ...); "" without one."""


class Session(Protocol):
    """One strategy walking one run."""

    async def prompt(self, history: Sequence[Message], step: int) -> Turn:
        """The prompt for model call number ``step`` (from 0), given the run's own ``history`` before it:
        every message the agent and its tools produced so far, uncompacted. A strategy that rewrites
        the host's history keeps its own copy and appends what is new; one that edits each request
        (as a provider's server-side context editing does) derives the prompt from ``history``."""
        ...


class ReplayStrategy(Protocol):
    """A compaction strategy a replay walks: its name, the one line saying what it models, a session."""

    @property
    def name(self) -> str:
        """Short, unique within a replay (a table row, a chart's legend)."""
        ...

    @property
    def models(self) -> str:
        """One line: which documented defaults (or which tracetrim settings) it models."""
        ...

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> Session:
        """A fresh session for ``run`` under the host's rule (``book`` counts tokens as the replay does)."""
        ...
