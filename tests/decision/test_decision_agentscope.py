"""`AgentScopeClassifierModel` with AgentScope 2.x from PyPI and classifiers defined here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from tracetrim.decision._agentscope import AgentScopeClassifierModel
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError

classifier = pytest.importorskip("agentscope.classifier")
credential = pytest.importorskip("agentscope.credential")

STATE = {"goal": "g", "records": []}
QUESTIONS = {
    "call_t1": BinaryQuestion("matters?"),
    "result_t1": BinaryQuestion("verbatim?", criteria_true="quoted", criteria_false="retrievable"),
}


class TableClassifier(classifier.ClassifierModelBase):  # type: ignore[misc,name-defined]
    """Answers binary questions from a table; refuses names listed in ``refuse``.

    A classifier of our own, because only one we control can refuse or fail on cue; AgentScope's real
    Jev and OpenAI classifiers run below against local servers.
    """

    def __init__(
        self, table: Mapping[str, float], refuse: frozenset[str] = frozenset(), fail: Exception | None = None
    ) -> None:
        super().__init__(credential.TypeSafeCredential(api_key="as-secret-1"), "table-classifier")
        self.table, self.refuse, self.fail = table, refuse, fail
        self.seen: list[tuple[Any, Mapping[str, Any]]] = []

    async def __call__(self, state: Any, questions: Mapping[str, Any], **kwargs: Any) -> Any:
        self.seen.append((state, questions))
        if self.fail is not None:
            raise self.fail
        content = {
            name: classifier.RefusalAnswer()
            if name in self.refuse
            else classifier.BinaryAnswer(probability=self.table[name])
            for name in questions
        }
        usage = classifier.ClassifierUsage(time=0.01, input_tokens=120, output_tokens=None)
        return classifier.ClassifierResponse(model="table-v1", content=content, usage=usage)


async def test_binary_answers_become_probabilities() -> None:
    inner = TableClassifier({"call_t1": 0.8, "result_t1": 0.1})
    response = await AgentScopeClassifierModel(inner)(STATE, QUESTIONS)
    assert response.answers == {"call_t1": 0.8, "result_t1": 0.1}
    assert response.model == "table-v1"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 0)
    state, questions = inner.seen[0]
    assert state == STATE
    assert isinstance(questions["result_t1"], classifier.BinaryQuestion)
    assert questions["result_t1"].criteria.true == "quoted"
    assert questions["call_t1"].criteria is None


async def test_refusal_is_an_invalid_answer() -> None:
    inner = TableClassifier({"call_t1": 0.8}, refuse=frozenset({"result_t1"}))
    response = await AgentScopeClassifierModel(inner)(STATE, QUESTIONS)
    assert response.answers["result_t1"] is None
    assert response.metadata["refusals"] == ["result_t1"]


async def test_classifier_errors_become_decision_model_errors() -> None:
    inner = TableClassifier({}, fail=RuntimeError("upstream 503"))
    with pytest.raises(DecisionModelError, match="TableClassifier failed: RuntimeError: upstream 503"):
        await AgentScopeClassifierModel(inner)(STATE, QUESTIONS)


def test_rejects_non_classifiers_and_hides_credentials() -> None:
    with pytest.raises(TypeError, match="ClassifierModelBase"):
        AgentScopeClassifierModel(object())
    assert "as-secret-1" not in repr(AgentScopeClassifierModel(TableClassifier({})))


async def test_wraps_agentscope_jev_classifier_against_the_jevcompat_mock() -> None:
    mock = pytest.importorskip("jevcompat.mock")
    from _decision_servers import jev_mock

    with jev_mock(mock.MockConfig(key="jev-key-1")) as server:
        jev = classifier.JevClassifierModel(
            credential.TypeSafeCredential(api_key="jev-key-1", base_url=server.url), max_retries=0
        )
        response = await AgentScopeClassifierModel(jev)(STATE, QUESTIONS)
    assert set(response.answers) == set(QUESTIONS)
    assert all(0.0 <= p <= 1.0 for p in response.answers.values())


def test_importing_tracetrim_decision_does_not_import_agentscope() -> None:
    code = (
        "import sys, tracetrim.decision, tracetrim.decision._agentscope; print('agentscope' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_wraps_agentscope_openai_classifier_against_the_decisions_stand_in() -> None:
    from _decision_servers import DecisionsStandIn

    with DecisionsStandIn(key="oa-key-1", refuse=frozenset({"call_t1"})) as server:
        oa = classifier.OpenAIClassifierModel(
            credential.OpenAICredential(api_key="oa-key-1", base_url=server.url + "/v1"), max_retries=0
        )
        response = await AgentScopeClassifierModel(oa)(STATE, QUESTIONS)
    assert response.answers["call_t1"] is None
    assert isinstance(response.answers["result_t1"], float)
    assert response.usage.input_tokens > 0
