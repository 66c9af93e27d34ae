"""Features of each candidate pair, computed from the whole history in two linear passes.

Everything here is what a host knows at compaction time: the history so far, the goal and the next
action. Nothing looks at the future. Each message is tokenised once; per-token first sightings, last
mentions by the agent and document frequencies make every feature a lookup, never a pairwise scan.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any

from tracetrim._snapshot import text_of_output
from tracetrim.decision._history import HistoryView, JudgedPair

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

TEXT_LIMIT = 24_000
"""Characters of one block that are tokenised (head and tail): a huge result is already known to be huge."""
LINE_MIN = 12
"""Shorter lines ("}", "else:", "OK") say nothing about where content came from."""
RECENT_MESSAGES = 4

_TOKEN = re.compile(r"[a-z0-9_]{3,}")
_FAILURE = re.compile(
    r"<returncode>[1-9]|traceback \(most recent call last\)|\berror\b|\bexception\b|not found|no such file",
)
_STOP = frozenset(
    "the and for are but not you all any can had has her was one our out his how its may new now "
    "old see two way who did get let put say she too use that with have this will your from they "
    "been more when what were into than them then some could would there their which about other "
    "should these those after before where while here only also just like does done each very "
    "true false none null self return def class import".split()
)


def _clip(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    half = TEXT_LIMIT // 2
    return text[:half] + "\n" + text[-half:]


def tokens(text: str) -> set[str]:
    """Distinct lower-case word tokens (3+ characters, stop words removed) of a clipped text."""
    return set(_TOKEN.findall(_clip(text).lower())) - _STOP


def stems(words: Iterable[str]) -> set[str]:
    """Five-letter prefixes: "swedish" and "sweden" meet at "swede"."""
    return {w[:5] for w in words if len(w) >= 5 and not w.isdigit()}


def lines_of(text: str) -> set[str]:
    """Distinct stripped lines long enough to identify where content came from."""
    return {s for line in _clip(text).splitlines() if len(s := line.strip()) >= LINE_MIN}


def result_text(block: Mapping[str, Any]) -> str:
    """A tool result's text ("" when its output is not all text: such pairs are never candidates)."""
    return text_of_output(block["output"]) or ""


def _authored_text(message: Mapping[str, Any]) -> str:
    """What the agent (or the user) wrote in a message: text blocks and tool-call inputs."""
    parts = []
    for block in message.get("content", ()):
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "tool_call":
            parts.append(block.get("input", ""))
    return "\n".join(parts)


def _weighted_overlap(mine: set[str], theirs: set[str], idf: Mapping[str, float], default: float) -> float:
    if not theirs:
        return 0.0
    total = sum(idf.get(t, default) for t in theirs)
    shared = sum(idf.get(t, default) for t in theirs & mine)
    return shared / total if total else 0.0


class _Index:
    """One pass over the history: where each token and line was first seen and last used."""

    def __init__(self, messages: Sequence[Mapping[str, Any]], judged: Set[int]) -> None:
        self.first_seen: dict[str, int] = {}
        self.last_authored: dict[str, int] = {}
        self.df: dict[str, int] = {}
        self.line_results: dict[str, tuple[int, int]] = {}
        """Line to the first and last message whose results hold it."""
        self.line_authored: dict[str, int] = {}
        self.result_tokens: dict[int, set[str]] = {}
        """Tokens of the results in the ``judged`` messages only: the rest need no lookup later."""
        self.authored: list[set[str]] = []
        for i, message in enumerate(messages):
            authored_text = _authored_text(message)
            authored = tokens(authored_text) if message.get("role") != "system" else set()
            self.authored.append(authored)
            seen = set(authored)
            for block in message.get("content", ()):
                if block.get("type") == "tool_result":
                    text = result_text(block)
                    found = tokens(text)
                    if i in judged:
                        self.result_tokens[i] = self.result_tokens.get(i, set()) | found
                    seen |= found
                    for line in lines_of(text):
                        self.line_results[line] = (self.line_results.get(line, (i, i))[0], i)
            for token in seen:
                self.first_seen.setdefault(token, i)
                self.df[token] = self.df.get(token, 0) + 1
            if message.get("role") == "assistant":
                for token in authored:
                    self.last_authored[token] = i
                for line in lines_of(authored_text):
                    self.line_authored[line] = i
        count = max(len(messages), 1)
        self.idf = {t: math.log((1 + count) / (1 + n)) + 1 for t, n in self.df.items()}
        self.default_idf = math.log(1 + count) + 1


def pair_features(view: HistoryView) -> dict[str, list[float]]:
    """One feature vector (in `FEATURE_NAMES` order) per pair key of ``view.pairs``."""
    messages = view.messages
    index = _Index(messages, {pair.result_message for pair in view.pairs})
    total = max(len(messages), 1)
    goal = tokens(view.goal)
    goal_stems = stems(goal)
    following = tokens(view.next_action)
    recent: set[str] = set()
    for authored in index.authored[-RECENT_MESSAGES:]:
        recent |= authored
    recent |= following
    recent_stems = stems(recent)
    inputs_after = _later_inputs(view.pairs)
    out: dict[str, list[float]] = {}
    for n, pair in enumerate(view.pairs):
        out[pair.key] = _features(
            pair,
            n,
            len(view.pairs),
            index,
            total,
            goal,
            goal_stems,
            following,
            recent,
            recent_stems,
            inputs_after,
        )
    return out


def _later_inputs(pairs: Sequence[JudgedPair]) -> dict[tuple[str, str], int]:
    last: dict[tuple[str, str], int] = {}
    for n, pair in enumerate(pairs):
        last[(pair.tool, pair.input)] = n
    return last


def _features(
    pair: JudgedPair,
    n: int,
    count: int,
    index: _Index,
    total: int,
    goal: set[str],
    goal_stems: set[str],
    following: set[str],
    recent: set[str],
    recent_stems: set[str],
    inputs_after: Mapping[tuple[str, str], int],
) -> list[float]:
    r = pair.result_message
    text = pair.result_text
    found = index.result_tokens.get(r, set()) if text else set()
    new = {t for t in found if index.first_seen.get(t) == r}
    new_used = sum(1 for t in new if index.last_authored.get(t, -1) > r)
    lines = lines_of(text)
    repeated = seen_before = quoted = 0
    for line in lines:
        first, last = index.line_results.get(line, (r, r))
        repeated += last > r
        seen_before += first < r
        quoted += index.line_authored.get(line, -1) > r
    n_lines = max(len(lines), 1)
    input_tokens = tokens(pair.input)
    idf, default = index.idf, index.default_idf
    recent_used = len(found & recent)
    found_stems = stems(found)
    return [
        math.log1p(len(text)),
        math.log1p(text.count("\n") + 1),
        (total - 1 - r) / total,
        math.log1p(total - 1 - r),
        math.log1p(count - 1 - n),
        1.0 if _FAILURE.search(text[:2000].lower()) else 0.0,
        1.0 if len(text) < 80 else 0.0,
        math.log1p(len(new)),
        math.log1p(len(new) - new_used),
        new_used / len(new) if new else 0.0,
        _weighted_overlap(found, goal, idf, default),
        _weighted_overlap(found_stems, goal_stems, {}, 1.0),
        _weighted_overlap(found, following, idf, default),
        _weighted_overlap(found, recent, idf, default),
        _weighted_overlap(found_stems, recent_stems, {}, 1.0),
        _weighted_overlap(input_tokens, goal, idf, default),
        _weighted_overlap(input_tokens, recent, idf, default),
        1.0 if inputs_after.get((pair.tool, pair.input), n) > n else 0.0,
        repeated / n_lines,
        seen_before / n_lines,
        quoted / n_lines,
        math.log1p(recent_used),
    ]
