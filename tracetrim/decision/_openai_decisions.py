"""`OpenAIDecisionsModel`: ``POST /v1/decisions`` with ``predicate`` questions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracetrim._json import compact_json
from tracetrim.decision._http import HostedModel, probability_or_none, usage_int
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError, DecisionResponse, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-6-luna"
_PATH = "/v1/decisions"


def predicate_instructions(question: BinaryQuestion) -> str:
    """The instructions with the outcome criteria appended, as predicates have no criteria field."""
    text = question.instructions
    if question.criteria_true is not None:
        text += f"\nTrue: {question.criteria_true}"
    if question.criteria_false is not None:
        text += f"\nFalse: {question.criteria_false}"
    return text


class OpenAIDecisionsModel(HostedModel):
    """A decision model served by the OpenAI Decisions API (or a server speaking it).

    ``api_key`` defaults to ``OPENAI_API_KEY`` and ``base_url`` to ``OPENAI_BASE_URL`` (then
    https://api.openai.com/v1). The state goes in as one JSON text ``input``. A ``refusal`` answer
    becomes ``None`` for that question, which the planner rejects as an invalid answer; the refused
    names are listed in ``metadata["refusals"]``.
    """

    SERVICE = "OpenAI Decisions"
    API_KEY_ENV = "OPENAI_API_KEY"
    BASE_URL_ENV = "OPENAI_BASE_URL"
    DEFAULT_BASE_URL = DEFAULT_BASE_URL
    DEFAULT_MODEL = DEFAULT_MODEL

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Ask every question in one request; answers come back keyed by ``name``."""
        payload = {
            "model": self.model,
            "input": compact_json(state),
            "questions": [
                {"type": "predicate", "name": name, "instructions": predicate_instructions(question)}
                for name, question in questions.items()
            ],
        }
        reply = await self._http.post(_PATH, payload)
        data = reply.data
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            raise DecisionModelError("OpenAI Decisions answered without an 'answers' list")
        answers: dict[str, Any] = {}
        refusals: list[str] = []
        for answer in data["answers"]:
            name = answer.get("name") if isinstance(answer, dict) else None
            if not isinstance(name, str):
                raise DecisionModelError("OpenAI Decisions returned an answer without a question name")
            kind = answer.get("type")
            if kind == "refusal":
                refusals.append(name)
            # A repeated name must not let a later answer hide an earlier invalid one.
            value = probability_or_none(answer.get("probability")) if kind == "predicate" else None
            answers[name] = None if name in answers else value
        usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
        metadata: dict[str, Any] = {"retries": reply.retries, "requests": reply.requests}
        if refusals:
            metadata["refusals"] = refusals
        return DecisionResponse(
            model=str(data.get("model") or self.model),
            answers=answers,
            usage=Usage(usage_int(usage.get("input_tokens")), usage_int(usage.get("output_tokens"))),
            metadata=metadata,
        )
