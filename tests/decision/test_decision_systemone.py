"""`SystemOneModel` against a real third-party Jev-compatible server: the jevcompat reference mock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from tests._decision_servers import jev_mock
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError
from tracetrim.decision._systemone import SystemOneModel, noul_question

mock = pytest.importorskip("jevcompat.mock")

KEY = "ts-live-secret-key-42"
FAST = RetryPolicy(max_retries=4, backoff_initial_s=0.001, backoff_max_s=0.01)
STATE = {"goal": "fix the payment retry bug", "records": [{"key": "t1", "tool": "read_file"}]}
QUESTIONS = {
    "call_t1": BinaryQuestion("Does knowing this call happened still matter?"),
    "result_t1": BinaryQuestion("Must the result stay verbatim?", criteria_true="later steps quote it"),
    "call_t2": BinaryQuestion("Does knowing this call happened still matter?", criteria_false="superseded"),
}


@pytest.fixture
def server() -> Iterator[object]:
    with jev_mock(mock.MockConfig(key=KEY)) as running:
        yield running


def test_noul_question_sends_only_given_criteria() -> None:
    assert noul_question(BinaryQuestion("q")) == {"type": "noul", "instructions": "q"}
    assert noul_question(BinaryQuestion("q", criteria_true="yes")) == {
        "type": "noul",
        "instructions": "q",
        "criteria": {"true": "yes"},
    }
    assert noul_question(BinaryQuestion("q", "y", "n"))["criteria"] == {"true": "y", "false": "n"}


async def test_answers_every_question_with_a_probability_and_usage(server: mock.Running) -> None:
    model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
    response = await model(STATE, QUESTIONS)
    await model.aclose()
    assert set(response.answers) == set(QUESTIONS)
    assert all(isinstance(p, float) and 0.0 <= p <= 1.0 for p in response.answers.values())
    assert response.model == "jevcompat-mock-0.1"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens == 6
    assert response.metadata == {"retries": 0, "requests": 1}


async def test_base_url_with_v1_and_answers_are_deterministic(server: mock.Running) -> None:
    first = await SystemOneModel(api_key=KEY, base_url=server.url + "/v1/", retry=FAST)(STATE, QUESTIONS)
    second = await SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)(STATE, QUESTIONS)
    assert first.answers == second.answers


async def test_environment_supplies_key_and_base(
    server: mock.Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    monkeypatch.setenv("TYPESAFE_BASE_URL", server.url + "/v1")
    response = await SystemOneModel(retry=FAST)(STATE, QUESTIONS)
    assert set(response.answers) == set(QUESTIONS)


async def test_busy_server_429s_are_retried_and_counted() -> None:
    with jev_mock(mock.MockConfig(key=KEY, busy_every=2)) as server:
        model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
        retries = 0
        for _ in range(4):
            response = await model(STATE, QUESTIONS)
            assert set(response.answers) == set(QUESTIONS)
            retries += response.metadata["retries"]
        assert retries >= 2
        assert server.server.RequestHandlerClass.cfg.requests == 4 + retries


async def test_wrong_key_is_a_clear_authentication_error_without_the_key(
    server: mock.Running, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "ts-wrong-key-777"
    model = SystemOneModel(api_key=wrong, base_url=server.url, retry=FAST)
    with caplog.at_level(logging.DEBUG, "tracetrim"), pytest.raises(DecisionModelError) as caught:
        await model(STATE, QUESTIONS)
    message = str(caught.value)
    assert "authentication failed" in message and "401" in message
    logs = [record.getMessage() for record in caplog.records]
    assert wrong not in message and wrong not in repr(model) and not any(wrong in line for line in logs)


async def test_missing_key_is_an_authentication_error(server: mock.Running) -> None:
    with pytest.raises(DecisionModelError, match=r"authentication failed.*403"):
        await SystemOneModel(api_key="", base_url=server.url, retry=FAST)(STATE, QUESTIONS)


async def test_validation_errors_are_not_retried() -> None:
    config = mock.MockConfig(key=KEY, faults=frozenset({"noul-two-sided"}))
    with jev_mock(config) as server:
        model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
        with pytest.raises(DecisionModelError, match="HTTP 422"):
            await model(STATE, {"q": BinaryQuestion("one-sided", criteria_true="yes")})
        assert config.requests == 1


async def test_unknown_model_is_rejected_clearly(server: mock.Running) -> None:
    with pytest.raises(DecisionModelError, match=r"HTTP 400.*Unknown model"):
        await SystemOneModel(api_key=KEY, base_url=server.url, model="nope", retry=FAST)(STATE, QUESTIONS)


@pytest.mark.parametrize("fault", ["extra-answer", "first-question-only", "noul-range", "boolean-type"])
async def test_bad_answers_pass_through_for_the_planner_to_reject(fault: str) -> None:
    with jev_mock(mock.MockConfig(key=KEY, faults=frozenset({fault}))) as server:
        response = await SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)(STATE, QUESTIONS)
    answers = response.answers
    valid = set(answers) == set(QUESTIONS) and all(
        isinstance(p, float) and 0.0 <= p <= 1.0 for p in answers.values()
    )
    assert not valid


async def test_non_json_success_is_a_model_error() -> None:
    config = mock.MockConfig(key=KEY, faults=frozenset({"xssi-200"}))
    with jev_mock(config) as server, pytest.raises(DecisionModelError, match="not valid JSON"):
        await SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)(STATE, QUESTIONS)


async def test_concurrent_batches_share_one_model(server: mock.Running) -> None:
    model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
    responses = await asyncio.gather(*(model(STATE, QUESTIONS) for _ in range(8)))
    assert len({tuple(sorted(r.answers.items())) for r in responses}) == 1
    await model.aclose()


def test_repr_hides_the_key() -> None:
    assert KEY not in repr(SystemOneModel(api_key=KEY, base_url="http://127.0.0.1:9"))
