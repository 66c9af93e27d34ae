"""`LexicalDecisionModel`: the embedded, offline, deterministic default decision model."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim.decision._protocol import BinaryQuestion, DecisionResponse

_WORD = re.compile(r"[a-z0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:#@=-]{4,}[A-Za-z0-9]")
_STOP = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "let",
        "me",
        "my",
        "no",
        "not",
        "now",
        "of",
        "on",
        "or",
        "our",
        "out",
        "please",
        "so",
        "some",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yes",
        "also",
        "any",
        "all",
        "about",
        "after",
        "before",
        "again",
        "over",
        "only",
        "very",
        "too",
        "here",
        "get",
        "got",
        "one",
        "two",
        "new",
        "old",
        "still",
        "see",
        "look",
        "check",
        "thing",
    }
)
_VERBATIM_CUES = frozenset(
    {
        "quote",
        "quotes",
        "quoting",
        "verbatim",
        "exact",
        "exactly",
        "copy",
        "paste",
        "cite",
        "literal",
        "patch",
        "diff",
        "lines",
        "output",
        "figures",
        "numbers",
        "values",
        "ids",
    }
)


def terms(text: str) -> list[str]:
    """Lower-case word terms without stop words."""
    return [t for t in _WORD.findall(text.lower()) if t not in _STOP and len(t) > 1]


def identifiers(text: str) -> set[str]:
    """Distinctive tokens (paths, ids, hosts, numbers with letters) that show a later reference."""
    return {t for t in _IDENTIFIER.findall(text) if any(c.isdigit() or c in "_./:#@=-" for c in t)}


@attrs.frozen
class _Call:
    key: str
    position: int
    tool: str
    primary: str
    doc: Counter[str]
    idents: frozenset[str]


@attrs.frozen
class _Text:
    position: int
    role: str
    text: str


def _primary_argument(raw_input: str) -> str:
    """The first string argument (a path, URL or query): what a later call 'redoes'."""
    try:
        value = json.loads(raw_input)
    except ValueError:
        return raw_input
    if isinstance(value, dict):
        for item in value.values():
            if isinstance(item, str):
                return item
    return raw_input


def _parse(state: Mapping[str, Any]) -> tuple[list[_Call], list[_Text]]:
    calls: list[_Call] = []
    texts: list[_Text] = []
    for position, entry in enumerate(state.get("history", ())):
        if not isinstance(entry, Mapping):
            continue
        call = entry.get("call")
        if isinstance(call, Mapping):
            result = call.get("result")
            result = result if isinstance(result, Mapping) else {}
            body = f"{call.get('tool', '')} {call.get('input', '')} {result.get('preview', '')}"
            calls.append(
                _Call(
                    str(call.get("key")),
                    position,
                    str(call.get("tool", "")),
                    _primary_argument(str(call.get("input", ""))),
                    Counter(terms(body)),
                    frozenset(identifiers(body)),
                )
            )
        elif isinstance(entry.get("text"), str):
            texts.append(_Text(position, str(entry.get("role", "")), entry["text"]))
    return calls, texts


class _BM25:
    """Okapi BM25 over the call records of one state."""

    def __init__(self, docs: Sequence[Counter[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.lengths = [sum(d.values()) for d in docs]
        self.average = (sum(self.lengths) / len(docs)) if docs else 1.0
        frequency: Counter[str] = Counter()
        for doc in docs:
            frequency.update(doc.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def score(self, query: Iterable[str], doc: Counter[str], length: int) -> float:
        total = 0.0
        norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1.0))
        for term in set(query):
            tf = doc.get(term, 0)
            if tf:
                total += self.idf.get(term, 0.0) * tf * (self.k1 + 1) / (tf + norm)
        return total


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _normalised(scores: Sequence[float]) -> list[float]:
    top = max(scores, default=0.0)
    return [s / top if top > 0 else 0.0 for s in scores]


def _overlap(text: str, reference: set[str]) -> float:
    own = {t for t in terms(text) if len(t) > 3}
    return len(own & reference) / len(own) if own else 0.0


class LexicalDecisionModel:
    """Judges calls from the observation alone, in-process and deterministically (no downloads).

    Features, each from the state the planner sends:

    * relevance: BM25 of the call record (tool, input, result preview) against the next action and,
      at half weight, the goal; normalised over the calls of the state;
    * side tasks: a call answering a user request that shares little vocabulary with the goal and the
      next action is a finished digression;
    * supersession: a later call of the same tool on the same first argument (path, URL, query) makes an
      earlier one stale;
    * later references: distinctive identifiers of the call (paths, ids, hosts) that reappear in later
      conversation text keep the call alive;
    * verbatim demand: a next action that asks to quote, copy or patch makes the results most relevant
      to it stay verbatim; otherwise results are shortened and only calls are kept.
    """

    name = "tracetrim-lexical-1"

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """One probability per ``call_<key>`` / ``result_<key>`` question."""
        scores = self.score(state)
        answers: dict[str, float] = {}
        for name in questions:
            kind, _, key = name.partition("_")
            p_call, p_result = scores.get(key, (0.5, 0.5))
            answers[name] = p_call if kind == "call" else p_result
        return DecisionResponse(model=self.name, answers=answers)

    def score(self, state: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
        """``{key: (p_call, p_result)}`` for every candidate call record in ``state``."""
        calls, texts = _parse(state)
        if not calls:
            return {}
        goal, next_action = str(state.get("goal", "")), str(state.get("next_action", ""))
        bm25 = _BM25([c.doc for c in calls])
        next_terms, goal_terms = terms(next_action), terms(goal)
        rel_next = _normalised([bm25.score(next_terms, c.doc, sum(c.doc.values())) for c in calls])
        rel_goal = _normalised([bm25.score(goal_terms, c.doc, sum(c.doc.values())) for c in calls])
        focus = {t for t in terms(f"{goal} {next_action}") if len(t) > 3}
        demand = 1.0 if _VERBATIM_CUES & set(_WORD.findall(next_action.lower())) else 0.3

        scores: dict[str, tuple[float, float]] = {}
        for index, call in enumerate(calls):
            if not call.key.startswith("t"):
                continue
            later_calls = calls[index + 1 :]
            superseded = any(c.tool == call.tool and c.primary == call.primary for c in later_calls)
            trigger = next(
                (t for t in reversed(texts) if t.position < call.position and t.role == "user"), None
            )
            side = 1.0 if trigger is not None and _overlap(trigger.text, focus) < 0.12 else 0.0
            later = " ".join(t.text for t in texts if t.position > call.position)
            referenced = min(len(call.idents & identifiers(later)), 3) / 3
            relevance = max(rel_next[index], 0.5 * rel_goal[index])
            p_call = _sigmoid(-1.0 + 3.0 * relevance + 1.0 * referenced - 2.0 * side - 3.0 * superseded + 0.5)
            p_result = _sigmoid(
                -2.5 + 4.5 * rel_next[index] * demand + 0.8 * referenced - 2.0 * side - 3.0 * superseded
            )
            scores[call.key] = (round(p_call, 6), round(p_result, 6))
        return scores
