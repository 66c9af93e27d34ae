"""`SystemOneModel`: any Jev-compatible ``POST /v1/systemone`` server, with ``noul`` questions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracetrim.decision._http import HostedModel, probability_or_none, usage_int
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError, DecisionResponse, Usage

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "jev-latest"
_PATH = "/v1/systemone"


def noul_question(question: BinaryQuestion) -> dict[str, Any]:
    """A ``noul`` question; criteria only for the sides that were given (one-sided is allowed)."""
    wire: dict[str, Any] = {"type": "noul", "instructions": question.instructions}
    criteria = {
        side: text
        for side, text in (("true", question.criteria_true), ("false", question.criteria_false))
        if text is not None
    }
    if criteria:
        wire["criteria"] = criteria
    return wire


class SystemOneModel(HostedModel):
    """A decision model served by TypeSafe's Jev or any server that speaks the same API.

    ``api_key`` defaults to ``TYPESAFE_API_KEY`` and ``base_url`` to ``TYPESAFE_BASE_URL`` (then
    https://api.typesafe.ai); a base with or without ``/v1`` works. Connection errors, 408, 429 and
    5xx are retried as ``retry`` says; other 4xx answers fail at once.
    """

    SERVICE = "System One server"
    API_KEY_ENV = "TYPESAFE_API_KEY"
    BASE_URL_ENV = "TYPESAFE_BASE_URL"
    DEFAULT_BASE_URL = DEFAULT_BASE_URL
    DEFAULT_MODEL = DEFAULT_MODEL

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Ask every question in one request; each answer is the ``noul`` probability."""
        payload = {
            "model": self.model,
            "state": dict(state),
            "questions": {name: noul_question(question) for name, question in questions.items()},
        }
        reply = await self._http.post(_PATH, payload)
        data = reply.data
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise DecisionModelError("System One server answered without an 'answers' object")
        answers: dict[str, Any] = {}
        for name, answer in data["answers"].items():
            is_noul = isinstance(answer, dict) and answer.get("type") == "noul"
            answers[name] = probability_or_none(answer.get("noul")) if is_noul else None
        usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
        return DecisionResponse(
            model=str(data.get("model") or self.model),
            answers=answers,
            usage=Usage(usage_int(usage.get("input_tokens")), usage_int(usage.get("output_tokens"))),
            metadata={"retries": reply.retries, "requests": reply.requests},
        )
