"""Stage 7's excerpt: which lines of a shortened result to keep, read from the rest of the history.

A result cut to its head loses the one line the agent needs next as often as not. The excerpt keeps
the head, the tail, and, within a budget, the lines that carry what nothing else in the history says:
identifiers that no other message mentions (cut them and they are gone) and error lines. Measured on
the shared mini-swe-agent runs (`benchmarks/quality.py`), lines that merely mention the goal's or
later turns' words cost a fifth more characters and kept no more of what the agent later used, so
they get no place of their own. Everything here is known at compaction time: one pass over the
history builds the index, each excerpt is one pass over its result.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Sequence

import attrs

from tracetrim._snapshot import Message

_TERM = re.compile(r"[A-Za-z0-9_]{3,}")
IDENTIFIER_LIKE = re.compile(r"[0-9_]|[a-z][A-Z]")
"""A word that names something (a digit, an underscore, camelCase) rather than saying something: what
the excerpt keeps and what the labels count as used (`tracetrim.learn.evidence`)."""
_ERROR_LINE = re.compile(r"error|exception|traceback|fail|assert", re.IGNORECASE)
GAP = "…\n"
"""Where the excerpt skipped lines."""
PIECE = 160
"""A line longer than this (a one-line JSON record, minified code) is weighed in pieces of about this
many characters, split after ", " or a space, so its one needed value can be kept without the rest."""

ERROR_WEIGHT = 2.0
"""A line's worth: one per identifier only this result holds (and no kept line has yet), two for an
error line."""


def _texts(message: Message) -> Iterable[str]:
    for block in message.get("content", ()):
        for key in ("text", "input", "output"):
            value = block.get(key)
            if isinstance(value, str):
                yield value
            elif isinstance(value, list):
                yield from (str(b.get("text", "")) for b in value if isinstance(b, dict))


@attrs.frozen
class Salience:
    """Per lower-cased term, the only message that mentions it (terms in two or more are left out)."""

    only_in: dict[str, int] = attrs.field(repr=False)


def salience(messages: Sequence[Message]) -> Salience:
    """The index every excerpt of one plan reads, in one pass over the history."""
    only_in: dict[str, int] = {}
    shared = -1
    for at, message in enumerate(messages):
        for text in _texts(message):
            for term in set(_TERM.findall(text.lower())):
                if only_in.setdefault(term, at) != at:
                    only_in[term] = shared
    return Salience({term: at for term, at in only_in.items() if at != shared})


def _novel(line: str, at: int, index: Salience) -> set[str]:
    """The identifiers of ``line`` that no message but the ``at``-th mentions."""
    return {
        key
        for term in _TERM.findall(line)
        if index.only_in.get(key := term.lower()) == at and IDENTIFIER_LIKE.search(term)
    }


def _units(text: str) -> tuple[list[str], list[int]]:
    """``text`` as consecutive pieces (lines, long lines split) that join back into it, and the line
    number of each piece."""
    units: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(text.splitlines(keepends=True)):
        start = 0
        while len(line) - start > PIECE:
            end = start + PIECE
            cut = line.rfind(", ", start + PIECE // 2, end)
            cut = cut + 2 if cut >= 0 else line.rfind(" ", start + PIECE // 2, end) + 1
            end = cut if cut > 0 else end
            units.append(line[start:end])
            line_of.append(number)
            start = end
        units.append(line[start:])
        line_of.append(number)
    return units, line_of


def _choose(text: str, lines: list[str], at: int, index: Salience, chosen: set[int], budget: int) -> None:
    """Add to ``chosen``, within ``budget`` characters, the pieces that bring the most identifiers not
    yet kept (and error lines) per square root of their length; a repeated piece or identifier counts
    once, so a file that says one name on every line does not fill the budget with it."""
    anything_novel = bool(_novel(text, at, index))
    if not anything_novel and not _ERROR_LINE.search(text):
        return  # nothing here that the rest of the history lacks: the head will do
    covered: set[str] = set()
    shown = {lines[n].strip() for n in chosen}
    if anything_novel:
        for n in chosen:
            covered |= _novel(lines[n], at, index)
    novel: dict[int, set[str]] = {}
    error: dict[int, float] = {}
    heap: list[tuple[float, int]] = []
    for n, line in enumerate(lines):
        if n in chosen:
            continue
        novel[n] = _novel(line, at, index) if anything_novel else set()
        error[n] = ERROR_WEIGHT if _ERROR_LINE.search(line) else 0.0
        gain = len(novel[n]) + error[n]
        if gain:
            heap.append((-gain / math.sqrt(len(line) + 1), n))
    heapq.heapify(heap)
    used = 0
    while heap:
        priority, n = heapq.heappop(heap)
        line = lines[n]
        if line.strip() in shown or used + len(line) > budget:
            continue
        fresh = novel[n] - covered
        gain = len(fresh) + error[n]
        now = -gain / math.sqrt(len(line) + 1)
        if now > priority:  # worth less than when it was queued: requeue at its current worth
            if gain:
                heapq.heappush(heap, (now, n))
            continue
        chosen.add(n)
        shown.add(line.strip())
        covered |= fresh
        used += len(line)


def _line_end(parts: list[str]) -> str:
    """A newline, unless the text so far is empty or already ends a line."""
    return "" if not parts or parts[-1].endswith("\n") else "\n"


@attrs.frozen
class Excerpt:
    """The kept text (head, chosen lines, tail, with gaps) and how many of the result's lines it holds."""

    text: str
    kept_lines: int
    total_lines: int


def excerpt(text: str, at: int, index: Salience | None, *, head: int, tail: int, budget: int) -> Excerpt:
    """The first ``head`` and last ``tail`` characters, and up to ``budget`` characters of the
    best pieces between them (`_choose`), in their original order, with `GAP` where text was skipped.
    ``at`` is the message holding the result. Without an index or a budget: the plain head and tail
    (the first round's cut)."""
    total_lines = len(text.splitlines())
    if index is None or budget <= 0:
        tail = min(tail, max(len(text) - head, 0))
        kept = text[:head] + (f"\n{GAP}{text[len(text) - tail :]}" if tail else "")
        return Excerpt(kept, kept.count("\n") + 1 if kept else 0, total_lines)
    units, line_of = _units(text)
    pieces: dict[int, str] = {}
    suffixes: set[int] = set()
    start = 0
    tail_from = len(text) - min(tail, max(len(text) - head, 0))
    for n, unit in enumerate(units):
        end = start + len(unit)
        if start < head:
            pieces[n] = unit if end <= head else text[start:head]
        elif end > tail_from:
            pieces[n] = unit if start >= tail_from else text[tail_from:end]
            if start < tail_from:
                suffixes.add(n)
        start = end
    chosen = set(pieces)
    _choose(text, units, at, index, chosen, budget)
    parts: list[str] = []
    previous, cut_after = -1, False
    for n in sorted(chosen):
        piece = pieces.get(n, units[n])
        cut_before = n in suffixes
        if n != previous + 1 or cut_after or cut_before:
            parts.append(_line_end(parts) + GAP)
        parts.append(piece)
        previous, cut_after = n, piece != units[n] and not cut_before
    if cut_after or previous != len(units) - 1:
        parts.append(_line_end(parts) + GAP)
    else:
        parts.append(_line_end(parts))
    return Excerpt("".join(parts), len({line_of[n] for n in chosen}), total_lines)
