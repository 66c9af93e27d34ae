"""`LexicalDecisionModel`: the embedded, offline, deterministic default decision model."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._json import text_nesting_exceeds
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
# Words by which a request asks for exact text rather than a gist.
_VERBATIM_CUES = frozenset(
    {
        "quote",
        "quotes",
        "quoting",
        "quoted",
        "verbatim",
        "exact",
        "exactly",
        "copy",
        "paste",
        "cite",
        "citing",
        "literal",
        "literally",
        "evidence",
        "patch",
        "diff",
        "excerpt",
    }
)
# Discourse markers with which people open a digression, or relay someone else's request.
_DIGRESSION_CUES = frozenset(
    {
        "unrelated",
        "side",
        "different",
        "quick",
        "while",
        "also",
        "btw",
        "meanwhile",
        "separately",
        "aside",
        "another",
        "offtopic",
        "asked",
        "asking",
        "asks",
        "wants",
        "question",
        "wondering",
    }
)
_LINE_MIN = 10  # shorter lines ("}", "return x") reappear by chance
_RECENT_CALLS = 4  # a result this close to the end is still the agent's working context
# Words in a tool's name that say it changes the world: a re-run after one of these may differ.
_STATE_CHANGING = frozenset(
    {
        "edit",
        "write",
        "create",
        "patch",
        "apply",
        "insert",
        "replace",
        "delete",
        "remove",
        "move",
        "rename",
        "commit",
        "install",
        "update",
        "put",
        "post",
        "set",
        "str",
    }
)
_CLAUSE_SPLIT = re.compile(r"[,;:]\s+(?:and\s+|then\s+)?|\.\s+")
_IDENT_CHARS = frozenset("_./:#@=-")


def _stem(word: str) -> str:
    # Light suffix stripping so "logs"/"log", "failing"/"failed"/"fail" meet; never below 3 letters.
    for suffix in ("ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def terms(text: str) -> list[str]:
    """Lower-case, lightly stemmed word terms without stop words."""
    return [_stem(t) for t in _WORD.findall(text.lower()) if t not in _STOP and len(t) > 1]


def identifiers(text: str) -> set[str]:
    """Distinctive tokens (paths, ids, hosts, numbers with letters) that show a later reference."""
    return {t for t in _IDENTIFIER.findall(text) if any(c.isdigit() or c in _IDENT_CHARS for c in t)}


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= _LINE_MIN}


def _input_values(raw_input: str) -> list[str]:
    """The string and number values of a call's JSON input (what the call was about).

    An input that is not JSON, or nests deeper than `MAX_NESTING`, is judged as opaque text.
    """
    if text_nesting_exceeds(raw_input):
        return [raw_input]  # json's decoder would recurse past the interpreter's limit
    try:
        value = json.loads(raw_input)
    except ValueError:
        return [raw_input]
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            found.append(str(item))
    return found


@attrs.frozen
class _Call:
    key: str
    position: int
    tool: str
    input_text: str
    input_terms: frozenset[str]
    preview: str
    doc: Counter[str]


@attrs.frozen
class _Text:
    position: int
    role: str
    text: str


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
            values = " ".join(_input_values(str(call.get("input", ""))))
            preview = str(result.get("preview", ""))
            tool = str(call.get("tool", ""))
            doc = Counter(terms(f"{tool} {values} {preview}"))
            calls.append(
                _Call(str(call.get("key")), position, tool, values, frozenset(terms(values)), preview, doc)
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

    def score(self, query: Iterable[str], doc: Counter[str]) -> float:
        total = 0.0
        length = sum(doc.values())
        norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1.0))
        for term in set(query):
            tf = doc.get(term, 0)
            if tf:
                total += self.idf.get(term, 0.0) * tf * (self.k1 + 1) / (tf + norm)
        return total


def _normalised(scores: Sequence[float]) -> list[float]:
    top = max(scores, default=0.0)
    return [s / top if top > 0 else 0.0 for s in scores]


def _cosine(a: set[str], b: set[str]) -> float:
    return len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0


def _clauses(action: str) -> list[list[str]]:
    """The parts of an exact-text request that each name one thing, from the first cue word on
    ("quote verbatim X, the Y, and the Z"): what precedes the cue is what to write, not what to copy."""
    words = list(re.finditer(r"[A-Za-z]+", action))
    start = next((w.start() for w in words if w.group().lower() in _VERBATIM_CUES), len(action))
    return [found for part in _CLAUSE_SPLIT.split(action[start:]) if len(found := terms(part)) >= 2]


def _changes_state(tool: str) -> bool:
    return bool(_STATE_CHANGING & set(_WORD.findall(tool.lower())))


def _superseded(index: int, calls: Sequence[_Call]) -> bool:
    """A later call of the same tool covers this one's input, with no state change in between."""
    call = calls[index]
    if not call.input_terms:
        return False
    for later in calls[index + 1 :]:
        if later.tool == call.tool and call.input_terms <= later.input_terms:
            return True
        if _changes_state(later.tool):
            return False
    return False


class LexicalDecisionModel:
    """Judges calls from the observation alone: in-process, deterministic, no dependencies, no downloads.

    It reads the JSON state the planner sends (goal, next action, conversation text and one record
    per call with tool, input and a result preview) and derives, per candidate call:

    * **relevance**: Okapi BM25 of the call record (tool name, input values, result preview, lightly
      stemmed terms) against the next action and against the task (goal plus the first user message),
      normalised over every call in the state;
    * **demanded evidence**: when the next action asks for exact text (quote, verbatim, exact,
      evidence, patch, ...), it is split into clauses and each clause claims the calls that match it
      best (within 75% of the clause's top BM25 score). Those results must stay verbatim; every other
      result may be shortened, because the agent was told what it will copy;
    * **later quotation**: a line of the result preview (10+ characters) that reappears in later text
      or a later call's input, or a distinctive identifier (path, id, host, number with letters) of
      the preview that does: the agent is using this output, so it stays;
    * **supersession**: a later call of the same tool whose input covers every term of this one's
      (the same file read again, the same query re-run) makes this one stale: drop the pair, unless
      the agent quoted this output later, or a state-changing call (a tool named edit, write, patch,
      create, ...) ran in between, so the re-run may have printed something else;
    * **finished side task**: the last user message before the call opens a digression (discourse
      markers such as "unrelated", "side", "quick one", "while", or a relayed request: "X asked"),
      shares little vocabulary with the task, the call is closer to that message than to the task, the
      conversation moved on after it, and the next action does not need it: drop the pair;
    * **recency**: with no demand for exact text, a result among the last few calls, or one the
      agent still refers to, stays; an old result nobody refers to is shortened (its call stays).

    The two probabilities are far from 0.5 for clear cases (so a two-threshold setting drops them too)
    and near it only where the features disagree. Nothing in the model names a tool, a history or a
    value: only these general signals. A 100-call state takes about 10-20 ms.
    """

    name = "tracetrim-lexical-2"

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
        first_user = next((t.text for t in texts if t.role == "user"), "")
        task = f"{goal}\n{first_user}"
        focus = set(terms(f"{task}\n{next_action}"))

        bm25 = _BM25([c.doc for c in calls])
        rel_next = _normalised([bm25.score(terms(next_action), c.doc) for c in calls])
        rel_task = _normalised([bm25.score(terms(task), c.doc) for c in calls])
        superseded = [_superseded(i, calls) for i in range(len(calls))]
        demand = bool(_VERBATIM_CUES & set(_WORD.findall(next_action.lower())))
        demanded = self._demanded(calls, next_action, bm25, superseded) if demand else set()

        # Where each line and identifier was last seen (texts and call inputs), for later references.
        last_line: dict[str, int] = {}
        last_ident: dict[str, int] = {}
        for text in texts:
            for line in _lines(text.text):
                last_line[line] = text.position
            for ident in identifiers(text.text):
                last_ident[ident] = text.position
        for call in calls:
            for line in _lines(call.input_text):
                last_line[line] = max(last_line.get(line, -1), call.position)
            for ident in identifiers(call.input_text):
                last_ident[ident] = max(last_ident.get(ident, -1), call.position)

        scores: dict[str, tuple[float, float]] = {}
        for index, call in enumerate(calls):
            if not call.key.startswith("t"):
                continue
            own = identifiers(call.input_text)
            quoted = any(last_line.get(line, -1) > call.position for line in _lines(call.preview))
            referenced = any(
                last_ident.get(ident, -1) > call.position for ident in identifiers(call.preview) - own
            )
            later_calls = sum(1 for c in calls[index + 1 :] if c.key.startswith("t"))
            side = self._side(call, texts, focus, task) and rel_next[index] < 0.6
            relevant = max(rel_next[index], rel_task[index])

            if side:
                p_call, p_result = 0.08, 0.05
            elif superseded[index] and not quoted:
                p_call, p_result = 0.15, 0.08
            elif demand:
                p_call = 0.9 if relevant >= 0.15 or referenced else 0.3
                p_result = 0.92 if call.key in demanded else (0.6 if quoted else 0.15)
            else:
                p_call = 0.9 if relevant >= 0.1 or referenced else 0.3
                keep = quoted or referenced or later_calls < _RECENT_CALLS or rel_next[index] >= 0.5
                p_result = 0.75 if keep else 0.25
            scores[call.key] = (p_call, p_result)
        return scores

    @staticmethod
    def _demanded(calls: Sequence[_Call], action: str, bm25: _BM25, superseded: Sequence[bool]) -> set[str]:
        """Keys of the calls each clause of an exact-text request points at."""
        keys: set[str] = set()
        for clause in _clauses(action):
            found = [(bm25.score(clause, c.doc), c.key) for i, c in enumerate(calls) if not superseded[i]]
            top = max((score for score, _ in found), default=0.0)
            if top > 0:
                keys.update(key for score, key in found if score >= 0.75 * top)
        return keys

    @staticmethod
    def _side(call: _Call, texts: Sequence[_Text], focus: set[str], task: str) -> bool:
        """True when ``call`` served a digression the conversation has since moved on from."""
        trigger = next((t for t in reversed(texts) if t.position < call.position and t.role == "user"), None)
        if trigger is None or trigger.text == task.split("\n", 1)[-1]:
            return False
        words = set(_WORD.findall(trigger.text.lower()))
        if not words & _DIGRESSION_CUES:
            return False
        asked = set(terms(trigger.text))
        if not asked or len(asked & focus) / len(asked) >= 0.35:
            return False
        doc = set(call.doc)
        if _cosine(doc, asked) <= _cosine(doc, focus):
            return False
        return any(t.position > call.position for t in texts)
