"""`OpenAIDecisionsModel` against a local stand-in that speaks the Decisions wire format."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests._decision_servers import DecisionsStandIn, fake_probability
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel, predicate_instructions
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError

KEY = "sk-proj-abcdefghijklmnop"
FAST = RetryPolicy(max_retries=3, backoff_initial_s=0.001, backoff_max_s=0.01)
STATE = {"goal": "ship the fix", "records": [{"key": "t1", "tool": "search_code", "input": "retry"}]}
QUESTIONS = {
    "call_t1": BinaryQuestion("Does knowing this call happened still matter?"),
    "result_t1": BinaryQuestion(
        "Must the result stay verbatim?", criteria_true="quoted later", criteria_false="retrievable"
    ),
}


def _model(server: DecisionsStandIn, key: str = KEY) -> OpenAIDecisionsModel:
    return OpenAIDecisionsModel(api_key=key, base_url=server.url + "/v1", retry=FAST)


async def test_sends_predicates_and_reads_answers_by_name() -> None:
    with DecisionsStandIn(key=KEY) as server:
        response = await _model(server)(STATE, QUESTIONS)
    body = server.requests[0]["body"]
    assert body["model"] == "gpt-6-luna"
    assert json.loads(body["input"]) == STATE
    assert body["questions"] == [
        {"type": "predicate", "name": name, "instructions": predicate_instructions(q)}
        for name, q in QUESTIONS.items()
    ]
    assert "\nTrue: quoted later\nFalse: retrievable" in body["questions"][1]["instructions"]
    assert response.answers == {
        name: fake_probability(predicate_instructions(q)) for name, q in QUESTIONS.items()
    }
    assert response.usage.input_tokens > 0 and response.usage.output_tokens == 2
    assert response.metadata == {"retries": 0, "requests": 1}


async def test_refusal_is_an_invalid_answer_for_that_question() -> None:
    with DecisionsStandIn(key=KEY, refuse=frozenset({"result_t1"})) as server:
        response = await _model(server)(STATE, QUESTIONS)
    assert response.answers["result_t1"] is None
    assert isinstance(response.answers["call_t1"], float)
    assert response.metadata["refusals"] == ["result_t1"]


async def test_500_then_success_is_retried() -> None:
    with DecisionsStandIn(key=KEY, fail_first=2) as server:
        response = await _model(server)(STATE, QUESTIONS)
    assert response.metadata == {"retries": 2, "requests": 3}
    assert len(server.requests) == 3


async def test_malformed_json_is_a_model_error() -> None:
    server = DecisionsStandIn(key=KEY, malformed=True)
    with server, pytest.raises(DecisionModelError, match="not valid JSON"):
        await _model(server)(STATE, QUESTIONS)
    assert len(server.requests) == 1


async def test_a_hang_past_the_deadline_is_cancelled_promptly() -> None:
    with DecisionsStandIn(key=KEY, hang=True) as server:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await _model(server)(STATE, QUESTIONS)
        assert loop.time() - started < 2.0


async def test_wrong_key_error_redacts_the_echoed_key() -> None:
    wrong = "sk-wrong-zyxwvutsrq"
    with DecisionsStandIn(key=KEY) as server, pytest.raises(DecisionModelError) as caught:
        await _model(server, key=wrong)(STATE, QUESTIONS)
    assert "authentication failed" in str(caught.value)
    assert wrong not in str(caught.value)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {wrong}"


async def test_environment_supplies_key_and_base(monkeypatch: pytest.MonkeyPatch) -> None:
    with DecisionsStandIn(key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        response = await OpenAIDecisionsModel(retry=FAST)(STATE, QUESTIONS)
    assert set(response.answers) == set(QUESTIONS)


def test_repr_hides_the_key() -> None:
    assert KEY not in repr(OpenAIDecisionsModel(api_key=KEY))
