"""Calls waiting for their results, for formats that pair a result with its call by id, name or order."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable


class OpenCalls:
    """The open calls of a turn, in order: the first with an id, the first with a name, or the first of
    all is taken in constant time (amortized), however many calls a turn holds; a list searched and
    cut at each result made a turn of thousands of calls quadratic."""

    def __init__(self) -> None:
        self._calls: list[tuple[str, str]] = []
        self._open: list[bool] = []
        self._by_id: dict[str, deque[int]] = {}
        self._by_name: dict[Hashable, deque[int]] = {}
        self._first = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, call_id: str, name: str) -> None:
        """A call that now waits for its result."""
        at = len(self._calls)
        self._calls.append((call_id, name))
        self._open.append(True)
        self._by_id.setdefault(call_id, deque()).append(at)
        self._by_name.setdefault(name, deque()).append(at)
        self._count += 1

    def _take(self, queue: deque[int] | None) -> tuple[str, str] | None:
        while queue:
            at = queue.popleft()
            if self._open[at]:
                self._open[at] = False
                self._count -= 1
                return self._calls[at]
        return None

    def take_id(self, call_id: object) -> tuple[str, str] | None:
        """The earliest open call with ``call_id`` (and its name), no longer open; None if none is."""
        return self._take(self._by_id.get(call_id)) if isinstance(call_id, str) else None

    def take_name(self, name: object) -> tuple[str, str] | None:
        """The earliest open call named ``name``, no longer open; None if none is."""
        return self._take(self._by_name.get(name)) if isinstance(name, Hashable) else None

    def take_first(self) -> tuple[str, str] | None:
        """The earliest open call, no longer open; None if none is."""
        while self._first < len(self._calls) and not self._open[self._first]:
            self._first += 1
        if self._first == len(self._calls):
            return None
        self._open[self._first] = False
        self._count -= 1
        return self._calls[self._first]

    def close_id(self, call_id: str) -> None:
        """Every open call with ``call_id`` answered."""
        while self.take_id(call_id) is not None:
            pass
