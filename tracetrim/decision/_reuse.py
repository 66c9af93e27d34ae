"""Which earlier results a history's later steps used again: the labels a run gives itself.

Cut a history at an assistant turn; the turns after the cut show which results before it the agent
still needed: identifiers and values it first saw in a result and then wrote into a later call or
message, and lines first shown by a result that it quoted later. `tracetrim.learn` labels its
training cuts with these; the learned judge reads them inside the history it is judging, to check
itself on the run's own past (`tracetrim.decision._calibration`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim.decision._feature_index import result_text
from tracetrim.decision._text import LINE_MIN

IDENTIFIER_LIKE = re.compile(r"[0-9_]|[a-z][A-Z]")
"""A word that looks like an identifier or a value: a digit, an underscore or camelCase (the same
pattern as `tracetrim.compactor._excerpt.IDENTIFIER_LIKE`; the decision layer does not import the
planner)."""
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_]{3,}")
"""A word evidence may be made of: four or more letters, digits or underscores."""
WORD = _WORD


@attrs.frozen
class Evidence:
    """The strings of one earlier result that the agent used after the cut."""

    call_id: str
    strings: frozenset[str]


def _result_texts(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(b["id"]), result_text(b)) for b in message.get("content", ()) if b.get("type") == "tool_result"
    ]


def _agent_parts(message: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """An assistant message's prose and its tool-call inputs."""
    prose, inputs = [], []
    for block in message.get("content", ()):
        if block.get("type") == "text":
            prose.append(str(block.get("text", "")))
        elif block.get("type") == "tool_call":
            inputs.append(str(block.get("input", "")))
    return prose, inputs


def all_text(message: Mapping[str, Any]) -> str:
    """Every text, input and output of one message, joined by newlines."""
    parts = []
    for block in message.get("content", ()):
        for key in ("text", "input", "output"):
            value = block.get(key)
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def evidence(messages: Sequence[Mapping[str, Any]], cut: int) -> dict[str, Evidence]:
    """Per call id with a result before ``cut``: the strings of that result used at or after ``cut``.

    A word counts when it looks like an identifier or a value (a digit, an underscore, camelCase),
    the result is where it first appeared (not the task, not an earlier result) and a later call or
    message contains it. A line (at least ``LINE_MIN`` characters) counts when the result is the first
    place it appeared and a later call or message contains it whole. Results with no such string are
    absent: nothing shows the agent needed them.
    """
    later_prose, later_inputs = [], []
    for message in messages[cut:]:
        if message.get("role") == "assistant":
            prose, inputs = _agent_parts(message)
            later_prose.extend(prose)
            later_inputs.extend(inputs)
    later_text = "\n".join(later_inputs + later_prose)
    later_words = set(_WORD.findall(later_text))
    used_words = {w for w in later_words if IDENTIFIER_LIKE.search(w)}

    seen: set[str] = set()
    seen_lines: set[str] = set()
    found: dict[str, Evidence] = {}
    for message in messages[:cut]:
        fresh_words: set[str] = set()
        fresh_lines: set[str] = set()
        for call_id, text in _result_texts(message):
            # Words never span lines, so the text's words are its lines' words: each line is cut once.
            words: set[str] = set()
            lines: dict[str, list[str]] = {}
            for line in text.splitlines():
                found_here = _WORD.findall(line)
                words.update(found_here)
                if len(s := line.strip()) >= LINE_MIN:
                    lines.setdefault(s, found_here)
            strings = {w for w in words if w in used_words and w.lower() not in seen}
            strings |= {
                s
                for s, line_words in lines.items()
                if s not in seen_lines and all(w in later_words for w in line_words) and s in later_text
            }
            if strings:
                found[call_id] = Evidence(call_id, frozenset(strings))
            fresh_words |= {w.lower() for w in words}
            fresh_lines |= lines.keys()
        # The results' own words and lines are in already: the rest of the message is cut here.
        rest = _other_text(message)
        seen |= fresh_words | {w.lower() for w in _WORD.findall(rest)}
        seen_lines |= fresh_lines | {s.strip() for s in rest.splitlines()}
    return found


def _other_text(message: Mapping[str, Any]) -> str:
    """`all_text` of ``message`` less the text outputs of its tool results (their words and lines
    are read on their own)."""
    parts = []
    for block in message.get("content", ()):
        for key in ("text", "input", "output"):
            value = block.get(key)
            if isinstance(value, str) and not (key == "output" and block.get("type") == "tool_result"):
                parts.append(value)
    return "\n".join(parts)


def credited(
    messages: Sequence[Mapping[str, Any]], cut: int, found: Mapping[str, Evidence] | None = None
) -> frozenset[str]:
    """The results a judge learns to keep: for each string used at or after ``cut``, the result it
    first appeared in (``found``, the `evidence`) and the last result before ``cut`` that shows it.

    Evidence names where a string came from; an agent reads it from the latest copy in its context,
    and the dedup stage keeps the latest whole copy and points the older ones at it. Labelled by
    first appearance alone, a re-run of a query or a re-read file looks spent, and the judge learns to
    drop the fresh copy and keep the stale one: on held-out folds of the shared runs, crediting both
    keeps the same mini-swe-agent curve and more of tau-bench's needed values and SWE-agent's results
    verbatim, and a held-out scenario's superseded read goes (`benchmarks/quality.py`; README, "The
    learned judge").
    """
    if found is None:
        found = evidence(messages, cut)
    strings = set().union(*(item.strings for item in found.values()))
    # Evidence words are matched as words of a result, evidence lines as text within it.
    words = {s for s in strings if _WORD.fullmatch(s)}
    lines = strings - words
    out = set(found)
    for message in reversed(messages[:cut]):
        if not words and not lines:
            break
        for call_id, text in _result_texts(message):
            shown_words = words.intersection(_WORD.findall(text)) if words else set()
            shown_lines = {s for s in lines if s in text}
            if shown_words or shown_lines:
                out.add(call_id)
                words -= shown_words
                lines -= shown_lines
    return frozenset(out)
