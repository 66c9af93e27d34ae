"""What each model call of a run used from earlier results: `tracetrim.learn.evidence`, per step.

`tracetrim.learn.evidence` cuts a run once and asks which earlier results the rest of the run used. A
replay needs the same question at every model call: which strings did *this* call write that an
earlier result was the first to show? The definition is the same: a word that looks like an
identifier or a value (a digit, an underscore, camelCase) whose first appearance in the run was that
result (not the task, not the agent's own text), or a line of at least `LINE_MIN` characters the result
first showed and the call quotes whole. One pass over the run, each message's words cut once; a line
is looked up by its first word, so the pass stays linear in the run (a line with no word in it, such
as a rule of dashes, is not counted: it names nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens
from tracetrim.compactor._excerpt import IDENTIFIER_LIKE
from tracetrim.decision._feature_index import authored_text, result_text
from tracetrim.decision._reuse import WORD
from tracetrim.decision._text import LINE_MIN
from tracetrim.learn._labels import history_text
from tracetrim.replay._book import model_turns


@attrs.frozen
class Use:
    """One model call's use of one earlier result: the strings it wrote that the result first showed."""

    step: int
    """The model call's message index."""
    call_id: str
    strings: frozenset[str]
    result_tokens: int
    """Tokens of the whole result: what recalling it brings back."""


def step_uses(
    messages: Sequence[Message], count: TokenCounter = estimate_tokens
) -> dict[int, tuple[Use, ...]]:
    """Per model call (by message index), the earlier results it used and the strings it used them for.

    The union of the uses at or after a cut equals `tracetrim.learn.evidence` at that cut for the
    results before it (a line is matched within one call's own text rather than all later text).
    """
    turns = set(model_turns(messages))
    seen_words: set[str] = set()
    seen_lines: set[str] = set()
    word_sources: dict[str, list[str]] = {}
    line_sources: dict[str, list[str]] = {}
    lines_by_word: dict[str, list[str]] = {}
    result_tokens: dict[str, int] = {}
    out: dict[int, tuple[Use, ...]] = {}
    for at, message in enumerate(messages):
        if at in turns:
            used = _used(authored_text(message), word_sources, line_sources, lines_by_word)
            if used:
                out[at] = tuple(
                    Use(at, call_id, frozenset(strings), result_tokens[call_id])
                    for call_id, strings in sorted(used.items())
                )
        fresh_words: set[str] = set()
        fresh_lines: set[str] = set()
        for block in message["content"]:
            if block.get("type") != "tool_result":
                continue
            call_id, text = str(block["id"]), result_text(block)
            words = set(WORD.findall(text))
            for word in words:
                if word.lower() not in seen_words:
                    word_sources.setdefault(word, []).append(call_id)
            lines = {s for line in text.splitlines() if len(s := line.strip()) >= LINE_MIN}
            for line in lines - seen_lines:
                line_sources.setdefault(line, []).append(call_id)
                first = WORD.search(line)
                if first is not None:
                    lines_by_word.setdefault(first.group(), []).append(line)
            result_tokens[call_id] = count(text)
            fresh_words |= {w.lower() for w in words}
            fresh_lines |= lines
        everything = history_text([message])
        seen_words |= fresh_words | {w.lower() for w in WORD.findall(everything)}
        seen_lines |= fresh_lines | {s.strip() for s in everything.splitlines()}
    return out


def _used(
    text: str,
    word_sources: dict[str, list[str]],
    line_sources: dict[str, list[str]],
    lines_by_word: dict[str, list[str]],
) -> dict[str, set[str]]:
    """Call id -> the strings of ``text`` (one call's prose and inputs) that its result first showed."""
    found: dict[str, set[str]] = {}
    if not text:
        return found
    words = set(WORD.findall(text))
    for word in words:
        if IDENTIFIER_LIKE.search(word):
            for call_id in word_sources.get(word, ()):
                found.setdefault(call_id, set()).add(word)
        for line in lines_by_word.get(word, ()):
            if line in text and all(w in words for w in WORD.findall(line)):
                for call_id in line_sources[line]:
                    found.setdefault(call_id, set()).add(line)
    return found
