"""Which terms only one message of a history mentions: what a shortened result's excerpt keeps.

The census is filled message by message. The excerpt stage (`tracetrim.compactor._excerpt`) takes
one on its own when it needs it; an in-process judge that tokenises every message anyway fills one
on the way (`HistoryView.census`), and the planner hands that one to the excerpts with the judge's
answers (`tracetrim.compactor._asking.Judged.census`): the history is tokenised once per plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tracetrim.decision._text import terms


def message_texts(message: Mapping[str, Any]) -> Iterator[str]:
    """Every text of a message the census reads: each block's ``text``, ``input`` and ``output``
    (the text of each part of a list output)."""
    for block in message.get("content", ()):
        for key in ("text", "input", "output"):
            value = block.get(key)
            if isinstance(value, str):
                yield value
            elif isinstance(value, list):
                yield from (str(b.get("text", "")) for b in value if isinstance(b, dict))


def message_terms(message: Mapping[str, Any]) -> set[str]:
    """The `terms` of every text of ``message`` (`message_texts`), together."""
    return set().union(*map(terms, message_texts(message)))


class TermCensus:
    """Per term of 3+ characters (`terms`), the last message that mentions it and whether an earlier
    one did too; messages are added in order, each once.

    Shorter runs are left out: no excerpt asks about them (`tracetrim.compactor._excerpt` looks up
    identifiers of 3+ characters only), and a census without them is smaller.
    """

    def __init__(self) -> None:
        self._last: dict[str, int] = {}
        self._shared: set[str] = set()
        self.messages = 0
        """How many messages have been added."""

    def add(self, found: Iterable[str]) -> None:
        """Count the next message, which mentions the terms ``found`` (a set, or an iterable of them)."""
        found = found if isinstance(found, (set, frozenset)) else set(found)
        self._shared |= self._last.keys() & found
        self._last.update(dict.fromkeys(found, self.messages))
        self.messages += 1

    def unique(self) -> dict[int, set[str]]:
        """Per message (by index), the terms that no other message mentions."""
        unique: dict[int, set[str]] = {}
        shared = self._shared
        for term, at in self._last.items():
            if term not in shared:
                unique.setdefault(at, set()).add(term)
        return unique

    def __repr__(self) -> str:
        return f"TermCensus({self.messages} messages, {len(self._last)} terms)"


def census_of(messages: Iterable[Mapping[str, Any]]) -> TermCensus:
    """The census of a whole history, in one pass."""
    census = TermCensus()
    for message in messages:
        census.add(message_terms(message))
    return census
