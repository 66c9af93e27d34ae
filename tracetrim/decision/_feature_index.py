"""The one pass over a history that every pair's features are looked up in.

Each message is tokenised once. What a judged message's results hold is reduced as soon as the
message is read (its overlaps with the goal, the next action and recent messages, and the tokens it
is first to show), so no token set outlives its message. What the features need from later
messages (the last mention of each token and line) is a lookup table filled on the way.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any, NamedTuple

import attrs

from tracetrim._snapshot import text_of_output
from tracetrim.decision._census import TermCensus
from tracetrim.decision._text import STOP_WORDS, TEXT_LIMIT, lines_of, stems, terms, tokens

RECENT_MESSAGES = 4
"""The messages whose authored tokens, with the next action's, make the "recent" token set."""


def result_text(block: Mapping[str, Any]) -> str:
    """A tool result's text ("" when its output is not all text: such pairs are never candidates)."""
    return text_of_output(block["output"]) or ""


def authored_text(message: Mapping[str, Any]) -> str:
    """What the agent (or the user) wrote in a message: text blocks and tool-call inputs."""
    parts = []
    for block in message.get("content", ()):
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "tool_call":
            parts.append(block.get("input", ""))
    return "\n".join(parts)


_OWN_TEXT = {"text": "text", "tool_call": "input", "tool_result": "output"}
"""The key of the text the features read in a block of each type."""


class _Read(NamedTuple):
    """One message's content, each text cut into words once (`_read`)."""

    parts: list[str]
    """What the author wrote (`authored_text`, before joining)."""
    part_terms: list[set[str]]
    """`terms` of each of ``parts``."""
    results: list[tuple[str, set[str]]]
    """Each tool result's text and its `tokens`."""
    every: list[set[str]]
    """`terms` of every text a `TermCensus` reads (`message_texts`); empty without one."""


def _read(content: Iterable[Mapping[str, Any]], census: bool) -> _Read:
    """The words of every text of a message's ``content``, each text cut once for both the features
    and (with ``census``) the census. The sets are shared: read them, never change them."""
    read = _Read([], [], [], [])
    for block in content:
        own = _OWN_TEXT.get(block.get("type", ""))
        own_terms = None
        if census:
            for key in ("text", "input", "output"):  # as `message_texts` reads them
                value = block.get(key)
                if value is None:  # the usual case: a block has one of the three
                    continue
                if isinstance(value, str):
                    found = terms(value)
                    read.every.append(found)
                    if key == own:
                        own_terms = found
                elif isinstance(value, list):
                    read.every.extend(terms(str(b.get("text", ""))) for b in value if isinstance(b, dict))
        if own is None:
            continue
        if own == "output":
            text = result_text(block)
            if len(text) > TEXT_LIMIT:
                read.results.append((text, tokens(text)))
                continue
            if own_terms is None or text is not block["output"]:  # a list output's parts, joined
                own_terms = terms(text)
            # `tokens(text)`, without cutting the text twice.
            read.results.append((text, own_terms - STOP_WORDS))
            continue
        part = block.get(own, "")
        read.parts.append(part)
        read.part_terms.append(own_terms if own_terms is not None else terms(part))
    return read


def _authored(read: _Read) -> set[str]:
    """The tokens of what the author wrote: `tokens` of `authored_text`, the same set."""
    parts = read.parts
    if sum(map(len, parts)) + len(parts) > TEXT_LIMIT:
        return tokens("\n".join(parts))  # clipped as a whole
    # A newline splits no word, so the words of the joined text are those of its parts.
    return set().union(*read.part_terms) - STOP_WORDS


def _authored_tokens(message: Mapping[str, Any]) -> set[str]:
    """Tokens of what a message's author wrote (none for system prompts)."""
    return tokens(authored_text(message)) if message.get("role") != "system" else set()


_FIRST_FIVE = operator.itemgetter(slice(5))


def _stem_overlap(found: set[str], prefixes: set[str], theirs: set[str]) -> float:
    """The share of the stems ``theirs`` that ``stems(found)`` holds (every stem weighs the same).

    ``prefixes`` are the first five letters of every token of ``found``: a stem of ``theirs`` among them
    is a stem of ``found`` unless only all-digit tokens (which have no stem) begin with it.
    """
    if not theirs:
        return 0.0
    shared = prefixes & theirs
    held = len(shared)
    for stem in filter(str.isdigit, shared):  # few stems are all digits: the rest are not looked at
        if not any(w[:5] == stem and not w.isdigit() for w in found):
            held -= 1
    return held / len(theirs)


@attrs.frozen
class Targets:
    """The token sets every pair is compared with: the goal, the next action, recent messages."""

    goal: set[str]
    following: set[str]
    recent: set[str]
    goal_stems: set[str]
    recent_stems: set[str]

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]], goal: str, next_action: str) -> Targets:
        """The targets of a history, its goal and its next action."""
        following = tokens(next_action)
        recent: set[str] = set()
        for message in messages[-RECENT_MESSAGES:]:
            recent |= _authored_tokens(message)
        recent |= following
        goal_tokens = tokens(goal)
        return cls(goal_tokens, following, recent, stems(goal_tokens), stems(recent))

    @property
    def weighted(self) -> set[str]:
        """Every token whose idf some feature reads."""
        return self.goal | self.following | self.recent


class Found(NamedTuple):
    """What a judged message's results hold, reduced to what the features read.

    (A tuple: one is made per judged message, and a tuple of strings and numbers is no work for the
    garbage collector.)
    """

    goal: tuple[str, ...] = ()
    following: tuple[str, ...] = ()
    recent: tuple[str, ...] = ()
    goal_stems: float = 0.0
    recent_stems: float = 0.0
    recent_used: int = 0
    new: tuple[str, ...] = ()
    """Tokens of the results that no earlier message held."""


def reduce_found(found: set[str], targets: Targets, new: set[str]) -> Found:
    """The reduction of ``found``, the union of one message's result tokens."""
    # Stems are five-letter prefixes: taking every token's (in C) and keeping the targets' is cheaper
    # than `stems(found)`, a Python test of every token.
    prefixes = set(map(_FIRST_FIVE, found))
    return Found(
        tuple(targets.goal & found),
        tuple(targets.following & found),
        tuple(targets.recent & found),
        _stem_overlap(found, prefixes, targets.goal_stems),
        _stem_overlap(found, prefixes, targets.recent_stems),
        len(found & targets.recent),
        tuple(new),
    )


NOTHING_FOUND = Found()
"""The reduction of an empty result."""


def count_after(r: int, places: Iterable[int]) -> int:
    """How many of ``places`` (message indices) come after message ``r``."""
    # map and sum run in C: these counts touch many lines of every judged result.
    return sum(map(r.__lt__, places))


class HistoryIndex:
    """One pass over the history for the messages in ``judged`` (the pairs' result messages).

    With a ``census`` the same pass fills it (`tracetrim.decision._census`): the words of each text are
    cut once for both.
    """

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        judged: Set[int],
        targets: Targets,
        census: TermCensus | None = None,
    ) -> None:
        self.found: dict[int, Found] = {}
        """Judged message to what its results hold."""
        self.result_lines: dict[tuple[int, str], tuple[tuple[str, ...], int]] = {}
        """A judged result's lines (by message and text), and how many of them earlier results held."""
        self.last_authored: dict[str, int] = {}
        """Token to the last assistant message that wrote it."""
        self.line_last: dict[str, int] = {}
        """Line to the last message whose results hold it."""
        self.repeated_lines: set[str] = set()
        """Lines that the results of more than one message hold (most lines of most histories do not)."""
        self.line_authored: dict[str, int] = {}
        """Line to the last assistant message that wrote it."""
        self._messages = messages
        self._first: dict[str, int] | None = None
        weighted = targets.weighted
        df: dict[str, int] = {}
        seen_before: set[str] = set()
        for i, message in enumerate(messages):
            is_judged = i in judged
            role = message.get("role")
            read = _read(message.get("content", ()), census is not None)
            authored = _authored(read) if role != "system" else set()
            result_tokens = [tokens_of_result for _, tokens_of_result in read.results]
            seen = authored.union(*result_tokens)
            # Most messages hold one result or none: its own set is the union, and no copy is made.
            found = result_tokens[0] if len(result_tokens) == 1 else set().union(*result_tokens)
            results = [(text, lines_of(text)) for text, _ in read.results]
            if census is not None:
                every = read.every
                census.add(every[0] if len(every) == 1 else set().union(*every))
            if is_judged:
                self.found[i] = reduce_found(found, targets, found - seen_before)
            for text, lines in results:
                # Lines "seen before" sat in an earlier message's results, not in this one's.
                again = self.line_last.keys() & lines
                self.repeated_lines |= again
                if is_judged:
                    self.result_lines[(i, text)] = (tuple(lines), len(again))
            for _, lines in results:
                self.line_last.update(dict.fromkeys(lines, i))
            seen_before |= seen
            # Few of a message's tokens are weighted: a loop over them costs less than Counter.update.
            for token in seen & weighted:
                df[token] = df.get(token, 0) + 1
            if role == "assistant":
                self.last_authored.update(dict.fromkeys(authored, i))
                self.line_authored.update(dict.fromkeys(lines_of("\n".join(read.parts)), i))
        count = max(len(messages), 1)
        default = math.log(1 + count) + 1
        self.idf = {
            t: math.log((1 + count) / (1 + n)) + 1 if (n := df.get(t, 0)) else default for t in weighted
        }
        """Inverse document frequency of each weighted token (a token no message holds weighs most)."""

    def line_counts(self, r: int, text: str) -> tuple[int, int, int, int]:
        """Of the lines of a result in message ``r``: how many there are, how many earlier messages'
        results held, how many later messages' results hold, and how many the agent wrote later."""
        known = self.result_lines.get((r, text))
        if known is not None:
            lines, earlier = known
            # Only lines more than one message holds can be repeated later: most lines are not.
            again = filter(self.repeated_lines.__contains__, lines)
            repeated = count_after(r, map(self.line_last.__getitem__, again))
        else:
            # Only a hand-made view names a text that is not one of its message's results.
            lines = tuple(lines_of(text))
            first = self._line_first()
            earlier = sum(1 for line in lines if first.get(line, r) < r)
            repeated = sum(1 for line in lines if self.line_last.get(line, r) > r)
        written = filter(self.line_authored.__contains__, lines)
        quoted = count_after(r, map(self.line_authored.__getitem__, written))
        return len(lines), earlier, repeated, quoted

    def _line_first(self) -> dict[str, int]:
        """Line to the first message whose results hold it: a second pass, made only when needed."""
        if self._first is None:
            self._first = {}
            for i, message in enumerate(self._messages):
                for block in message.get("content", ()):
                    if block.get("type") == "tool_result":
                        for line in lines_of(result_text(block)):
                            self._first.setdefault(line, i)
        return self._first
