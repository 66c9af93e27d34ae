"""``POST /v1/systemone``: a decision model served to Jev-compatible clients (TypeSafe System One API).

The wire format is the one `tracetrim.decision.SystemOneModel`, TypeSafe's SDK (and AgentScope's
``JevClassifierModel`` over it) and ``jevcompat`` speak: ``{"model", "state", "questions": {id:
{"type": "noul"|"choice"|"score", "instructions", "criteria"}}}`` in, ``{"model", "answers",
"usage"}`` out; validation errors are 422 ``{"detail": [{"loc", "msg", "type"}]}``, other errors
``{"detail": {"error_type", "message"}}``. A decision model answers yes/no questions, so a choice or
score question is asked as one yes/no question per option or level, normalised to a distribution.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from tracetrim._errors import TracetrimError
from tracetrim._json import canonical_json
from tracetrim._validators import FieldValueError, is_number
from tracetrim.decision import BinaryQuestion, DecisionResponse
from tracetrim.service._errors import shown

MODEL_ALIAS = "jev-latest"
"""The model name Jev clients send by default; every name is served by the one configured model."""

RELEASE_DATE = "2026-12-01"
"""Reported by ``GET /v1/models``: the date this API version of tracetrim's server was released."""

MAX_OPTIONS = 255
MAX_LEVELS = 10
MAX_SUB_QUESTIONS = 4096
"""The most yes/no questions one request may amount to (choice options and score levels count one each)."""

_TEXT = (str, dict, list)
# The planner's two questions (tracetrim.decision._remote._batches) name their pair only in the text; the
# model is asked under the planner's own names, so the answer never depends on the client's ids.
_PLANNER = (
    (re.compile(r"^Tool call (\S+) \("), "call_"),
    (re.compile(r"^Must the full result of tool call (\S+) \("), "result_"),
)


class JevValidationError(TracetrimError, ValueError):
    """A request the spec refuses: a list of ``{"loc", "msg", "type"}`` items (FastAPI's shape)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation error(s)")
        self.errors = errors


@attrs.frozen
class JevQuestion:
    """One question of a request: its id, type, text, and the yes/no questions it is asked as."""

    qid: str
    kind: str
    options: tuple[str, ...]
    levels: tuple[Any, ...]
    binary: tuple[tuple[str, BinaryQuestion], ...]


def _error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": ["body", *loc], "msg": msg, "type": kind}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return canonical_json(value)


def _model_name(qid: str, instructions: str | None) -> str:
    for pattern, prefix in _PLANNER:
        found = pattern.match(instructions or "")
        if found:
            return prefix + found.group(1)
    return qid


def _noul(qid: str, q: Mapping[str, Any], loc: list[Any], errors: list[dict[str, Any]]) -> JevQuestion:
    criteria = q.get("criteria")
    true = false = None
    if criteria is not None:
        if not isinstance(criteria, dict) or set(criteria) - {"true", "false"}:
            errors.append(
                _error(
                    [*loc, "criteria"], "Input should be an object with 'true' and/or 'false'", "model_type"
                )
            )
        else:
            for side in ("true", "false"):
                if criteria.get(side) is not None and not isinstance(criteria[side], _TEXT):
                    errors.append(
                        _error([*loc, "criteria", side], "Input should be a valid string", "string_type")
                    )
            true, false = _text(criteria.get("true")), _text(criteria.get("false"))
    instructions = _text(q.get("instructions")) or ""
    question = BinaryQuestion(instructions, criteria_true=true, criteria_false=false)
    return JevQuestion(qid, "noul", (), (), ((_model_name(qid, instructions), question),))


def _choice(qid: str, q: Mapping[str, Any], loc: list[Any], errors: list[dict[str, Any]]) -> JevQuestion:
    criteria = q.get("criteria")
    if not isinstance(criteria, dict):
        kind = "dict_type" if criteria is not None else "missing"
        errors.append(_error([*loc, "criteria"], "Input should be a valid dictionary", kind))
        return JevQuestion(qid, "choice", (), (), ())
    if not criteria or len(criteria) > MAX_OPTIONS:
        errors.append(
            _error(
                [*loc, "criteria"],
                f"expected 1 to {MAX_OPTIONS} options, got {len(criteria)}",
                "too_long" if criteria else "too_short",
            )
        )
    instructions = _text(q.get("instructions")) or ""
    binary = []
    for name, description in criteria.items():
        if description is not None and not isinstance(description, _TEXT):
            errors.append(_error([*loc, "criteria", name], "Input should be a valid string", "string_type"))
            continue
        text = f"{instructions}\nIs the answer this option? {name}"
        if description is not None:
            text += f": {_text(description)}"
        binary.append((f"{qid}\x00{name}", BinaryQuestion(text)))
    return JevQuestion(qid, "choice", tuple(criteria), (), tuple(binary))


def _score(qid: str, q: Mapping[str, Any], loc: list[Any], errors: list[dict[str, Any]]) -> JevQuestion:
    criteria = q.get("criteria")
    if not isinstance(criteria, list):
        kind = "list_type" if criteria is not None else "missing"
        errors.append(_error([*loc, "criteria"], "Input should be a valid list", kind))
        return JevQuestion(qid, "score", (), (), ())
    if not criteria or len(criteria) > MAX_LEVELS:
        errors.append(
            _error(
                [*loc, "criteria"],
                f"expected 1 to {MAX_LEVELS} levels, got {len(criteria)}",
                "too_long" if criteria else "too_short",
            )
        )
    instructions = _text(q.get("instructions")) or ""
    binary = []
    for index, level in enumerate(criteria):
        if not isinstance(level, _TEXT):
            errors.append(_error([*loc, "criteria", index], "Input should be a valid string", "string_type"))
            continue
        text = f"{instructions}\nIs the score level {index}? {_text(level)}"
        binary.append((f"{qid}\x00{index}", BinaryQuestion(text)))
    return JevQuestion(qid, "score", (), tuple(criteria), tuple(binary))


_KINDS = {"noul": _noul, "choice": _choice, "score": _score}


def parse_systemone(body: Any) -> tuple[str, Mapping[str, Any], list[JevQuestion]]:
    """The model name, the state as a mapping and the questions; `JevValidationError` otherwise.

    A string or array state is handed to the model as ``{"state": ...}``; unknown top-level fields
    are ignored, as the spec asks.
    """
    if not isinstance(body, dict):
        raise JevValidationError([_error([], "Input should be a valid dictionary", "dict_type")])
    errors = [
        _error([k], "Field required", "missing") for k in ("state", "model", "questions") if k not in body
    ]
    state = body.get("state")
    if "state" in body and not isinstance(state, _TEXT):
        errors.append(_error(["state"], "Input should be a valid string, object or array", "union_type"))
    model = body.get("model")
    if "model" in body and not isinstance(model, str):
        errors.append(_error(["model"], "Input should be a valid string", "string_type"))
    questions = body.get("questions")
    parsed: list[JevQuestion] = []
    if "questions" in body:
        if not isinstance(questions, dict):
            errors.append(_error(["questions"], "Input should be a valid dictionary", "dict_type"))
        elif not questions:
            errors.append(_error(["questions"], "at least one question is required", "too_short"))
        else:
            for qid, q in questions.items():
                loc: list[Any] = ["questions", qid]
                if not qid:
                    errors.append(_error(loc, "a question id must not be empty", "string_too_short"))
                    continue
                if not isinstance(q, dict):
                    errors.append(_error(loc, "Input should be a valid dictionary", "model_attributes_type"))
                    continue
                kind = q.get("type")
                if not isinstance(kind, str) or kind not in _KINDS:  # an object is no tag (nor hashable)
                    errors.append(
                        _error(
                            [*loc, "type"],
                            f"expected 'noul', 'choice' or 'score', got {shown(repr(kind), 200)}",
                            "union_tag_invalid",
                        )
                    )
                    continue
                if q.get("instructions") is not None and not isinstance(q["instructions"], _TEXT):
                    errors.append(
                        _error([*loc, kind, "instructions"], "Input should be a valid string", "string_type")
                    )
                    continue
                parsed.append(_KINDS[kind](qid, q, [*loc, kind], errors))
    if sum(len(q.binary) for q in parsed) > MAX_SUB_QUESTIONS:
        errors.append(
            _error(
                ["questions"], f"more than {MAX_SUB_QUESTIONS} yes/no questions in one request", "too_long"
            )
        )
    if errors:
        raise JevValidationError(errors)
    mapping = state if isinstance(state, dict) else {"state": state}
    return str(model), mapping, parsed


def binary_questions(questions: list[JevQuestion]) -> tuple[dict[str, BinaryQuestion], bool]:
    """The yes/no questions to ask the model, by name (a planner question under the planner's name),
    and whether they had to be named by question id instead (two different questions, one name)."""
    asked: dict[str, BinaryQuestion] = {}
    for question in questions:
        for name, binary in question.binary:
            if asked.get(name, binary) != binary:
                return {f"{q.qid}\x00{n}": b for q in questions for n, b in q.binary}, True
            asked[name] = binary
    return asked, False


def _probability(value: Any, name: str) -> float:
    if not is_number(value):
        raise FieldValueError(f"the model gave no probability for {name!r} (got {value!r})")
    if not 0.0 <= value <= 1.0:
        raise FieldValueError(f"the model's probability for {name!r} is outside [0, 1]: {value!r}")
    return float(value)


def _distribution(values: list[float]) -> list[float]:
    total = sum(values)
    if total <= 0:
        return [1.0 / len(values)] * len(values)
    return [v / total for v in values]


def _choice_confidence(probs: list[float]) -> float:
    n = len(probs)
    return 1.0 if n <= 1 else max(0.0, (max(probs) - 1 / n) / (1 - 1 / n))


def _score_confidence(probs: list[float]) -> float:
    n = len(probs)
    if n <= 1:
        return 1.0
    mode = max(range(n), key=lambda i: probs[i])
    spread = sum(p * abs(i - mode) for i, p in enumerate(probs))
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return max(0.0, 1 - spread / uniform)


def answers_document(questions: list[JevQuestion], by_id: bool, response: DecisionResponse) -> dict[str, Any]:
    """The ``{"model", "answers", "usage"}`` document; ``ValueError`` when the model answered badly.

    ``by_id`` is what `binary_questions` said about how the questions were named.
    """

    def p(question: JevQuestion, name: str) -> float:
        key = f"{question.qid}\x00{name}" if by_id else name
        return _probability(response.answers.get(key), key)

    answers: dict[str, Any] = {}
    for q in questions:
        values = [p(q, name) for name, _ in q.binary]
        if q.kind == "noul":
            answers[q.qid] = {"type": "noul", "noul": values[0]}
        elif q.kind == "choice":
            probs = _distribution(values)
            best = max(range(len(probs)), key=lambda i: probs[i])
            answers[q.qid] = {
                "type": "choice",
                "choice": q.options[best],
                "probabilities": dict(zip(q.options, probs, strict=True)),
                "confidence": _choice_confidence(probs),
            }
        else:
            probs = _distribution(values)
            answers[q.qid] = {
                "type": "score",
                "score": sum(i * v for i, v in enumerate(probs)),
                "legend": {str(i): level for i, level in enumerate(q.levels)},
                "probabilities": {str(i): v for i, v in enumerate(probs)},
                "confidence": _score_confidence(probs),
            }
    usage = response.usage
    return {
        "model": response.model,
        "answers": answers,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }


def models_document(served: str) -> dict[str, Any]:
    """``GET /v1/models``: the alias and the served model's own name."""
    names = [MODEL_ALIAS] + ([served] if served != MODEL_ALIAS else [])
    return {
        "models": [
            {
                "name": name,
                "description": f"tracetrim decision model ({served})",
                "release_date": RELEASE_DATE,
            }
            for name in names
        ]
    }
