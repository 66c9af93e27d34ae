"""Features of each candidate pair, computed from the whole history in one linear pass.

Everything here is what a host knows at compaction time: the history so far, the goal and the next
action. Nothing looks at the future. The pass (`tracetrim.decision._feature_index`) tokenises each
message once and keeps per-token and per-line lookups, so every feature is a lookup, never a
pairwise scan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat

import attrs

from tracetrim.decision._feature_index import (
    NOTHING_FOUND,
    RECENT_MESSAGES,
    HistoryIndex,
    Targets,
    count_after,
    result_text,
)
from tracetrim.decision._history import HistoryView, JudgedPair
from tracetrim.decision._text import LINE_MIN, TEXT_LIMIT, failed, lines_of, stems, tokens

__all__ = [
    "FEATURE_NAMES",
    "LINE_MIN",
    "RECENT_MESSAGES",
    "TEXT_LIMIT",
    "iter_pair_features",
    "lines_of",
    "pair_features",
    "result_text",
    "stems",
    "tokens",
]

FEATURE_NAMES: tuple[str, ...] = (
    "log_chars",
    "log_lines",
    "age",
    "log_age_messages",
    "log_pairs_after",
    "failure",
    "tiny",
    "log_new_tokens",
    "log_new_unused",
    "new_used_share",
    "goal_overlap",
    "goal_stem_overlap",
    "next_overlap",
    "recent_overlap",
    "recent_stem_overlap",
    "input_goal_overlap",
    "input_recent_overlap",
    "same_input_later",
    "lines_repeated_later",
    "lines_seen_before",
    "lines_quoted_later",
    "tokens_used_recently",
)
"""The order of a feature vector; a weights file names the features it was trained on."""


def pair_features(view: HistoryView) -> dict[str, list[float]]:
    """One feature vector (in `FEATURE_NAMES` order) per pair key of ``view.pairs``."""
    return {pair.key: vector for pair, vector in iter_pair_features(view)}


def iter_pair_features(view: HistoryView) -> Iterator[tuple[JudgedPair, list[float]]]:
    """Each pair of ``view.pairs`` with its feature vector, one at a time: a judge that scores each
    vector as it comes never holds them all (as much memory as a tenth of a large history)."""
    targets = Targets.of(view.messages, view.goal, view.next_action)
    index = HistoryIndex(view.messages, {pair.result_message for pair in view.pairs}, targets, view.census)
    lookup = _Lookup(
        index=index,
        total=max(len(view.messages), 1),
        count=len(view.pairs),
        goal=_Overlap(targets.goal, index.idf),
        following=_Overlap(targets.following, index.idf),
        recent=_Overlap(targets.recent, index.idf),
        inputs_after=_later_inputs(view.pairs),
    )
    for n, pair in enumerate(view.pairs):
        yield pair, lookup.features(pair, n)


def _later_inputs(pairs: Sequence[JudgedPair]) -> dict[tuple[str, str], int]:
    last: dict[tuple[str, str], int] = {}
    for n, pair in enumerate(pairs):
        last[(pair.tool, pair.input)] = n
    return last


class _Overlap:
    """How much of a target token set another set covers, each token weighted by its idf.

    The target is the same for every pair, so its total weight is summed once. Sums are exact
    (`math.fsum`): set order follows string hashing, which changes with each process's hash seed,
    and a plain float sum would let it change a feature's last bit and so a close decision.
    """

    def __init__(self, target: set[str], idf: Mapping[str, float]) -> None:
        self.target = target
        self.idf = idf
        self.total = math.fsum(map(idf.__getitem__, target))

    def shared(self, shared: Iterable[str]) -> float:
        """The share of the target's weight held by ``shared``, tokens of ``target & mine``."""
        if not self.target:
            return 0.0
        return math.fsum(map(self.idf.__getitem__, shared)) / self.total if self.total else 0.0

    def __call__(self, mine: set[str]) -> float:
        return self.shared(self.target & mine)


@attrs.frozen
class _Lookup:
    """What every pair's features are looked up in: the index and the history-wide overlaps."""

    index: HistoryIndex
    total: int
    count: int
    goal: _Overlap
    following: _Overlap
    recent: _Overlap
    inputs_after: Mapping[tuple[str, str], int]
    _new_used: dict[int, int] = attrs.field(factory=dict, init=False)
    """Per result message: how many of its new tokens the agent wrote later. It is the message's, so
    it is counted once for all the pairs whose results the message holds (a turn of thousands of
    parallel calls counted it once per pair: quadratic)."""

    def features(self, pair: JudgedPair, n: int) -> list[float]:
        """The feature vector of the ``n``-th pair."""
        index, total = self.index, self.total
        r = pair.result_message
        text = pair.result_text
        found = index.found.get(r, NOTHING_FOUND) if text else NOTHING_FOUND
        new = found.new
        new_used = self._new_used.get(r) if text else 0
        if new_used is None:
            new_used = self._new_used[r] = count_after(r, map(index.last_authored.get, new, repeat(-1)))
        n_lines, seen_before, repeated, quoted = index.line_counts(r, text)
        n_lines = max(n_lines, 1)
        input_tokens = tokens(pair.input)
        return [
            math.log1p(len(text)),
            math.log1p(text.count("\n") + 1),
            (total - 1 - r) / total,
            math.log1p(total - 1 - r),
            math.log1p(self.count - 1 - n),
            1.0 if failed(text) else 0.0,
            1.0 if len(text) < 80 else 0.0,
            math.log1p(len(new)),
            math.log1p(len(new) - new_used),
            new_used / len(new) if new else 0.0,
            self.goal.shared(found.goal),
            found.goal_stems,
            self.following.shared(found.following),
            self.recent.shared(found.recent),
            found.recent_stems,
            self.goal(input_tokens),
            self.recent(input_tokens),
            1.0 if self.inputs_after.get((pair.tool, pair.input), n) > n else 0.0,
            repeated / n_lines,
            seen_before / n_lines,
            quoted / n_lines,
            math.log1p(found.recent_used),
        ]
