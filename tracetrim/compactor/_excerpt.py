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

import bisect
import heapq
import itertools
import math
import re
from collections.abc import Callable, Sequence, Set

import attrs

from tracetrim._snapshot import Message
from tracetrim.decision._census import TermCensus, census_of
from tracetrim.decision._text import words

_TERM = re.compile(r"[A-Za-z0-9_]{3,}")
IDENTIFIER_LIKE = re.compile(r"[0-9_]|[a-z][A-Z]")
"""A word that names something (a digit, an underscore, camelCase) rather than saying something: what
the excerpt keeps and what the labels count as used (`tracetrim.learn.evidence`)."""
_ERROR_WORDS = ("error", "exception", "traceback", "fail", "assert")
_ERROR_LINE = re.compile("|".join(_ERROR_WORDS), re.IGNORECASE)
GAP = "…\n"
"""Where the excerpt skipped lines."""
PIECE = 160
"""A line longer than this (a one-line JSON record, minified code) is weighed in pieces of about this
many characters, split after ", " or a space, so its one needed value can be kept without the rest."""

ERROR_WEIGHT = 2.0
"""A line's worth: one per identifier only this result holds (and no kept line has yet), two for an
error line."""


Terms = set[str] | frozenset[str]
"""A set of lower-cased terms."""


class Salience:
    """Which lower-cased terms only one message mentions, and which message that is.

    Read from the history on first use, in one pass (`tracetrim.decision._census`): a plan whose
    excerpts are all settled without it (`_choose`) never reads the history for it. ``census``, when
    given, is that pass already made (by the judge: see `salience`). The history must not change in
    between; a plan's history is its own copy.
    """

    def __init__(self, messages: Sequence[Message], census: TermCensus | None = None) -> None:
        self._messages = messages
        self._census = census
        self._unique: dict[int, set[str]] | None = None

    def unique_to(self, at: int) -> Terms:
        """The terms no message but the ``at``-th mentions."""
        if self._unique is None:
            census = self._census if self._census is not None else census_of(self._messages)
            self._unique = census.unique()
            self._census = None
        return self._unique.get(at, _NONE)

    def __repr__(self) -> str:
        return f"Salience({len(self._messages)} messages, {'read' if self._unique is not None else 'unread'})"


_NONE: frozenset[str] = frozenset()


def salience(messages: Sequence[Message], census: TermCensus | None = None) -> Salience:
    """The index every excerpt of one plan reads (`Salience`). ``census``: a census of ``messages``
    that the judge filled on its way through them (`tracetrim.compactor._asking.Judged.census`),
    used when it counted every message; otherwise the index reads the history itself."""
    if census is not None and census.messages == len(messages):
        return Salience(messages, census)
    return Salience(messages)


def _novel(line: str, unique: Set[str]) -> set[str]:
    """The identifiers of ``line`` that no message but its own mentions (``unique``: that message's
    `Salience.unique_to`)."""
    return {
        key
        for term in _TERM.findall(line)
        if (key := term.lower()) in unique and IDENTIFIER_LIKE.search(term)
    }


def _units(text: str) -> tuple[list[str], list[int]]:
    """``text`` as consecutive pieces (lines, long lines split) that join back into it, and the line
    number of each piece."""
    lines = text.splitlines(keepends=True)
    if not lines or max(map(len, lines)) <= PIECE:  # the usual case: no line to split
        return lines, list(range(len(lines)))
    units: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(lines):
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


def _error_units(text: str, units: list[str], starts: list[int], lowered: str | None = None) -> set[int]:
    """The pieces ``_ERROR_LINE`` finds something in.

    In ASCII text a case-blind match is an occurrence of a keyword in the lower-cased text, so one
    ``str.find`` scan per keyword over the whole text finds them all; a piece holds a match when an
    occurrence lies wholly inside it. Other text (where a few non-ASCII letters match ASCII ones
    case-blind) is searched piece by piece. ``lowered``, when given, is ``text.lower()``.
    """
    if lowered is None and text.isascii():
        lowered = text.lower()
    if lowered is None:
        return {n for n, unit in enumerate(units) if _ERROR_LINE.search(unit)}
    found: set[int] = set()
    for keyword in _ERROR_WORDS:
        at = lowered.find(keyword)
        while at >= 0:
            n = bisect.bisect_right(starts, at) - 1
            end = starts[n + 1]
            if at + len(keyword) <= end:
                found.add(n)
                # Another occurrence in the same piece adds nothing: look on from the next one.
                at = lowered.find(keyword, end)
            else:
                at = lowered.find(keyword, at + 1)
    return found


_Unique = Callable[[], Terms]
"""The terms only the result's message mentions, read when first needed."""


def _error_lines_fill(lines: list[str], errors: set[int], chosen: set[int], budget: int) -> int:
    """Characters `_choose` is sure to take for error lines, whatever the identifiers add.

    An error line is worth `ERROR_WEIGHT` whatever was kept before it, so the greedy loop never
    drops it for worth: each one ends chosen, skipped as a repeat of a kept line (with the same
    stripped text: an error line too, or one kept from the start), or skipped because it no longer
    fits, which means more than ``budget`` minus its length is used. So one line of each stripped
    text among them is taken (each at least as long as the shortest), or all but the longest line's
    length of the budget.
    """
    candidates = list(map(lines.__getitem__, errors - chosen))
    if not candidates:
        return 0
    texts = set(map(str.strip, candidates))
    texts.difference_update(map(str.strip, map(lines.__getitem__, chosen)))
    if not texts:
        return 0
    sizes = list(map(len, candidates))
    return min(len(texts) * min(sizes), budget - max(sizes) + 1)


_FEW_TERMS = 8
"""Unique terms few enough to look for in a text one by one before cutting the text into words."""


def _novel_pieces(
    text: str, lowered: str | None, lines: list[str], starts: list[int], unique: Terms, whole_lines: bool
) -> dict[int, set[str]]:
    """The pieces with identifiers only this message mentions (`_novel`), and those identifiers;
    none at all when the whole text has none.

    In ASCII text the terms `_novel` lower-cases are exactly the runs `words` cuts (elsewhere a
    non-ASCII letter can lower-case to an ASCII one and join a run), so the unshared runs of the text
    are the only candidates; where the pieces are whole lines no run spans two, so only the pieces
    holding a candidate are read word by word. ``lowered`` is ``text.lower()`` for ASCII text, else None.
    """
    if not unique:
        return {}
    if lowered is not None:
        if len(unique) <= _FEW_TERMS and not any(map(lowered.__contains__, unique)):
            # A word of the text is a substring of it lower-cased: with no unique term among those,
            # there is no candidate, and a few substring scans cost less than cutting every word.
            return {}
        candidates = unique.intersection(words(text))
        if not candidates:
            return {}
        if whole_lines:
            holding: set[int] = set()
            for term in candidates:
                at = lowered.find(term)
                while at >= 0:
                    n = bisect.bisect_right(starts, at) - 1
                    holding.add(n)
                    at = lowered.find(term, starts[n + 1])
            return {n: found for n in holding if (found := _novel(lines[n], unique))}
    if not _novel(text, unique):
        return {}
    return {n: found for n, line in enumerate(lines) if (found := _novel(line, unique))}


def _choose(
    text: str,
    lines: list[str],
    starts: list[int],
    index: _Unique,
    chosen: set[int],
    budget: int,
    room: float,
    *,
    whole_lines: bool,
) -> bool:
    """Add to ``chosen``, within ``budget`` characters, the pieces that bring the most identifiers not
    yet kept (and error lines) per square root of their length; a repeated piece or identifier counts
    once, so a file that says one name on every line does not fill the budget with it.

    False as soon as the chosen pieces add up to ``room`` characters: the caller has no use for an
    excerpt that long (what is chosen by then is incomplete).
    """
    lowered = text.lower() if text.isascii() else None  # made once for both searches
    errors = _error_units(text, lines, starts, lowered)
    if errors and _error_lines_fill(lines, errors, chosen, budget) >= room:
        return False
    novel = _novel_pieces(text, lowered, lines, starts, index(), whole_lines)
    if not novel and not errors:
        return True  # nothing here that the rest of the history lacks: the head will do
    covered: set[str] = set().union(*(novel.get(n, _NONE) for n in chosen))
    shown = {lines[n].strip() for n in chosen}
    heap: list[tuple[float, int]] = []
    for n in (novel.keys() | errors) - chosen:
        gain = len(novel.get(n, _NONE)) + (ERROR_WEIGHT if n in errors else 0.0)
        heap.append((-gain / math.sqrt(len(lines[n]) + 1), n))
    heapq.heapify(heap)
    used = 0
    while heap:
        priority, n = heapq.heappop(heap)
        line = lines[n]
        if line.strip() in shown or used + len(line) > budget:
            continue
        fresh = novel.get(n, _NONE) - covered
        gain = len(fresh) + (ERROR_WEIGHT if n in errors else 0.0)
        now = -gain / math.sqrt(len(line) + 1)
        if now > priority:  # worth less than when it was queued: requeue at its current worth
            if gain:
                heapq.heappush(heap, (now, n))
            continue
        chosen.add(n)
        shown.add(line.strip())
        covered |= fresh
        used += len(line)
        if used >= room:
            return False
    return True


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
    cut = excerpt_shorter_than(text, at, index, head=head, tail=tail, budget=budget, chars=math.inf)
    assert cut is not None
    return cut


def excerpt_shorter_than(
    text: str, at: int, index: Salience | None, *, head: int, tail: int, budget: int, chars: float
) -> Excerpt | None:
    """`excerpt`, or None as soon as it is known to hold ``chars`` characters or more (the rebuild
    stage drops an excerpt that keeps too much of its result, and stops working on it then)."""
    if index is None or budget <= 0:
        total_lines = len(text.splitlines())
        tail = min(tail, max(len(text) - head, 0))
        kept = text[:head] + (f"\n{GAP}{text[len(text) - tail :]}" if tail else "")
        return Excerpt(kept, kept.count("\n") + 1 if kept else 0, total_lines)
    units, line_of = _units(text)
    total_lines = line_of[-1] + 1 if line_of else 0
    starts = list(itertools.accumulate(map(len, units), initial=0))
    pieces: dict[int, str] = {}
    suffixes: set[int] = set()
    tail_from = len(text) - min(tail, max(len(text) - head, 0))
    # The pieces that start within the head, then those that end within the tail.
    in_head = bisect.bisect_left(starts, head, 0, len(units))
    for n in range(in_head):
        pieces[n] = units[n] if starts[n + 1] <= head else text[starts[n] : head]
    for n in range(max(in_head, bisect.bisect_right(starts, tail_from, 1) - 1), len(units)):
        start = starts[n]
        pieces[n] = units[n] if start >= tail_from else text[tail_from : starts[n + 1]]
        if start < tail_from:
            suffixes.add(n)
    # The kept text holds every chosen piece whole, so it is at least as long as they are together.
    room = chars - sum(map(len, pieces.values()))
    if room <= 0:
        return None
    chosen = set(pieces)
    whole_lines = len(units) == total_lines
    if not _choose(
        text, units, starts, lambda: index.unique_to(at), chosen, budget, room, whole_lines=whole_lines
    ):
        return None
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
