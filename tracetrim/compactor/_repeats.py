"""One copy of what is repeated: an older result whose every line a later, whole result shows again."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence, Set

from tracetrim.compactor._outcome import Action
from tracetrim.compactor._pairs import Pair

REPEATED = "repeated_later"
"""Why a result became a pointer: every line of it appears in a later result kept whole."""

MIN_REPEAT_CHARS = 200
"""Shorter results stay: a pointer and its note would save little or nothing."""

MAX_COMPARED = 64
"""Whole results compared with one older result at most (newest first): keeps a history of look-alike
results linear."""


def _lines(text: str) -> frozenset[str]:
    lines = set(map(str.strip, text.splitlines()))  # in C: every result of the history goes through here
    lines.discard("")
    # A frozenset copied from a set is sized for what it holds; one grown from an iterator can hold
    # twice the table: every whole result's lines are kept until the plan ends.
    return frozenset(lines)


def repeated_results(
    pairs: Sequence[Pair], actions: Mapping[str, tuple[Action, str]], movable: Collection[str]
) -> dict[str, Pair]:
    """Older pair key (of those in ``movable``) -> the later pair whose result, kept whole, shows every
    line of it again.

    The same file region read twice with nothing changing it in between, or the same lookup with the
    same answer, leaves the later copy as complete as the older: the older one can point to it.
    Pairs that ``actions`` keeps whole or shortens may become pointers (a dropped pair stays
    dropped); the later copy is any result the plan leaves whole, protected ones included. Newest
    first, so a chain of copies points to the newest. Two linear passes: the first reads every result's
    lines, the second indexes the whole results by the lines older results hold (line to the whole
    results holding it), so each older result is compared only with results sharing its rarest line.
    """
    read: list[tuple[Pair, Action, frozenset[str], bool, Set[str]]] = []
    asked: set[str] = set()  # the lines of the older results that may become pointers, oldest first
    for pair in pairs:
        text = pair.result_text
        if text is None or pair.result_at is None or pair.reason == "already_shortened":
            continue
        action = actions.get(pair.key, (Action.KEEP, ""))[0]
        lines = _lines(text)
        # A whole result is looked up only by the lines of older results: most of its lines are in none
        # (a set intersection, in C, instead of indexing every line of the history).
        wanted = lines & asked if action is Action.KEEP else set()
        asks = bool(
            pair.key in movable and action is not Action.DROP_CALL and len(text) >= MIN_REPEAT_CHARS and lines
        )
        if asks:
            asked |= lines
        read.append((pair, action, lines, asks, wanted))
    holders: dict[str, list[int]] = {}
    whole: list[tuple[Pair, frozenset[str]]] = []
    found: dict[str, Pair] = {}
    for pair, action, lines, asks, wanted in reversed(read):
        if asks:
            later = _containing(lines, holders, whole)
            if later is not None:
                found[pair.key] = later
                continue
        if action is Action.KEEP:
            for line in wanted:
                holders.setdefault(line, []).append(len(whole))
            whole.append((pair, lines))
    return found


def _containing(
    lines: frozenset[str], holders: Mapping[str, list[int]], whole: Sequence[tuple[Pair, frozenset[str]]]
) -> Pair | None:
    """The newest whole result holding every one of ``lines``, or None."""
    if not holders.keys() >= lines:
        return None  # a line no whole result holds (the usual case): one subset test, no ranking
    rarest = min(lines, key=lambda line: len(holders.get(line, ())))
    for index in holders.get(rarest, ())[:MAX_COMPARED]:
        pair, held = whole[index]
        if lines <= held:
            return pair
    return None
