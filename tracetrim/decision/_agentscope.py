"""`AgentScopeClassifierModel`: any AgentScope 2.x ``ClassifierModelBase`` as a decision model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracetrim._validators import FieldTypeError
from tracetrim.decision._http import probability_or_none, usage_int
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError, DecisionResponse, Usage


def _classifier_base() -> type[Any]:
    # Imported here so `import tracetrim.decision` never pulls in agentscope.
    try:
        from agentscope.classifier import ClassifierModelBase
    except ImportError as exc:
        raise ImportError(
            "AgentScopeClassifierModel needs AgentScope 2.x: pip install 'tracetrim[agentscope]'"
        ) from exc
    base: type[Any] = ClassifierModelBase
    return base


class AgentScopeClassifierModel:
    """Wraps an AgentScope classifier (e.g. its Jev or OpenAI classifier) as a ``DecisionModel``.

    Each question becomes an AgentScope ``BinaryQuestion``; a ``BinaryAnswer``'s probability is the
    answer, and a refusal or any other answer type becomes ``None``, which the planner rejects as
    an invalid answer. Errors the classifier raises become ``DecisionModelError``. Retries are the
    classifier's own business and are not visible here.
    """

    def __init__(self, classifier: Any, **call_options: Any) -> None:
        if not isinstance(classifier, _classifier_base()):
            raise FieldTypeError(
                f"expected an agentscope.classifier.ClassifierModelBase, got {type(classifier).__name__}"
            )
        self.classifier = classifier
        self._call_options = call_options

    def __repr__(self) -> str:
        return f"AgentScopeClassifierModel({type(self.classifier).__name__}, model={self.classifier.model!r})"

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Ask the classifier every question in one call."""
        from agentscope.classifier import BinaryAnswer, BinaryCriteria
        from agentscope.classifier import BinaryQuestion as ScopeQuestion

        scope_questions = {}
        for name, question in questions.items():
            criteria = None
            if question.criteria_true is not None or question.criteria_false is not None:
                criteria = BinaryCriteria(true=question.criteria_true, false=question.criteria_false)
            scope_questions[name] = ScopeQuestion(instructions=question.instructions, criteria=criteria)
        try:
            response = await self.classifier(dict(state), scope_questions, **self._call_options)
        except Exception as exc:
            raise DecisionModelError(
                f"AgentScope classifier {type(self.classifier).__name__} failed: {type(exc).__name__}"
                f"{': ' + _first_line(exc) if str(exc) else ''}"
            ) from None
        content = getattr(response, "content", None)
        if not isinstance(content, dict):
            raise DecisionModelError("AgentScope classifier returned no answer mapping")
        answers: dict[str, Any] = {}
        refusals: list[str] = []
        for name, answer in content.items():
            if isinstance(answer, BinaryAnswer):
                answers[name] = probability_or_none(answer.probability)
            else:
                answers[name] = None
                refusals.append(name)
        usage = getattr(response, "usage", None)
        tokens = Usage(
            usage_int(getattr(usage, "input_tokens", 0)), usage_int(getattr(usage, "output_tokens", 0))
        )
        metadata: dict[str, Any] = {"requests": 1}
        if refusals:
            metadata["refusals"] = refusals
        return DecisionResponse(
            model=str(getattr(response, "model", "") or self.classifier.model),
            answers=answers,
            usage=tokens,
            metadata=metadata,
        )


def _first_line(exc: Exception) -> str:
    line = str(exc).splitlines()[0] if str(exc) else ""
    return line[:200]
