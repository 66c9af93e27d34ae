"""``POST /v1/systemone`` of the service on a real server, driven by real Jev clients.

AgentScope's own ``JevClassifierModel`` (over TypeSafe's SDK), tracetrim's `SystemOneModel` running a
whole plan, and the ``jevcompat`` conformance suite all talk to the same server, which requires a
bearer token and serves a configured question-answering model (a scripted one). A server whose only
model is the learned judge (``tracetrim serve``'s default) says that none is configured.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._serve import serve_process
from tests._service_app import require_service_extra, serving
from tests.conftest import load_scenario
from tracetrim.compactor import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode
from tracetrim.decision import BinaryQuestion, DecisionResponse, ScriptedDecisionModel, SystemOneModel

TOKEN = "test-token-0123456789abcdef"
SERVED = "scripted-jev"


def _answer(name: str, question: BinaryQuestion, state: Mapping[str, Any]) -> float:
    """A fixed probability per question's instructions, different from question to question (nothing
    defaulted) and never depending on the question's id, which Jev clients choose."""
    return (zlib.crc32(question.instructions.encode()) % 97) / 96


def served_model() -> ScriptedDecisionModel:
    """The question-answering model the server is configured with (and the local plans use)."""
    return ScriptedDecisionModel(_answer, name=SERVED)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The service serving `served_model`, requiring `TOKEN`."""
    require_service_extra()
    with serving(model=served_model(), token=TOKEN) as running:
        yield running.url


class Recording:
    """Wraps a model and keeps every (state, questions) the planner asked it."""

    def __init__(self, model: ScriptedDecisionModel) -> None:
        self.model = model
        self.asked: list[tuple[Mapping[str, Any], Mapping[str, BinaryQuestion]]] = []

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        self.asked.append((state, questions))
        return await self.model(state, questions)


def scenario_request() -> tuple[CompactionRequest, CompactorConfig]:
    scenario = load_scenario("payment_retry")
    request = CompactionRequest(
        scenario["messages"],
        scenario["goal"],
        scenario["next_action"],
        protected_message_ids=scenario["protected_message_ids"],
        protected_call_ids=scenario["protected_call_ids"],
    )
    config = CompactorConfig(eligible_tools=scenario["eligible_tool_names"], **scenario["options"])
    return request, config


def planner_questions() -> tuple[Mapping[str, Any], Mapping[str, BinaryQuestion]]:
    """The state and questions the planner sends a remote model for payment_retry."""
    request, config = scenario_request()
    recording = Recording(served_model())
    outcome = asyncio.run(Compactor(recording, config=config).plan(request))
    assert outcome.status.value == "DECIDED" and len(recording.asked) == 1
    return recording.asked[0]


def test_agentscope_jev_classifier_gets_the_configured_models_answers(server: str) -> None:
    from agentscope.classifier import (
        BinaryAnswer,
        BinaryCriteria,
        ChoiceAnswer,
        ChoiceQuestion,
        JevClassifierModel,
        ScoreAnswer,
        ScoreQuestion,
    )
    from agentscope.classifier import BinaryQuestion as ScopeQuestion
    from agentscope.credential import TypeSafeCredential
    from pydantic import SecretStr

    state, questions = planner_questions()
    expected = asyncio.run(served_model()(state, questions)).answers
    scope_questions: dict[str, Any] = {
        name: ScopeQuestion(
            instructions=q.instructions, criteria=BinaryCriteria(true=q.criteria_true, false=q.criteria_false)
        )
        for name, q in questions.items()
    }
    scope_questions["severity"] = ScoreQuestion(instructions="How severe?", criteria=["low", "mid", "high"])
    scope_questions["team"] = ChoiceQuestion(
        instructions="Which team?", criteria={"payments": "money", "infra": None}
    )
    credential = TypeSafeCredential(api_key=SecretStr(TOKEN), base_url=server)
    classifier = JevClassifierModel(credential, max_retries=0)
    response = asyncio.run(classifier(dict(state), scope_questions))
    assert response.model == SERVED
    for name, probability in expected.items():
        answer = response.content[name]
        assert isinstance(answer, BinaryAnswer) and answer.probability == pytest.approx(probability)
    assert len({a for a in expected.values()}) > 1  # the answers differ by pair: nothing was defaulted
    score, choice = response.content["severity"], response.content["team"]
    assert isinstance(score, ScoreAnswer) and {str(k): v for k, v in score.legend.items()} == {
        "0": "low",
        "1": "mid",
        "2": "high",
    }
    assert sum(score.probabilities.values()) == pytest.approx(1.0)
    assert isinstance(choice, ChoiceAnswer) and choice.choice in ("payments", "infra")


def test_systemone_model_runs_a_whole_plan_through_the_service(server: str) -> None:
    request, config = scenario_request()
    execution = ExecutionOptions(mode=Mode.SHADOW)

    async def plans() -> tuple[Any, Any]:
        remote = SystemOneModel(api_key=TOKEN, base_url=server)
        try:
            through = await Compactor(remote, config=config, execution=execution).plan(request)
        finally:
            await remote.aclose()
        local = await Compactor(served_model(), config=config, execution=execution).plan(request)
        return through, local

    through, local = asyncio.run(plans())
    assert through.status.value == "DECIDED", through.detail
    assert through.plan is not None and local.plan is not None
    assert through.plan.decisions == local.plan.decisions
    assert through.plan.messages == local.plan.messages
    assert any(d.action.value != "keep" for d in through.plan.decisions)


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": "Bearer wrong-token-0123456789"}, 401), ({"Authorization": TOKEN}, 401)],
)
def test_a_missing_or_wrong_key_is_a_jev_authentication_error(
    server: str, headers: dict[str, str], status: int
) -> None:
    body = {"model": "jev-latest", "state": "x", "questions": {"q": {"type": "noul", "instructions": "?"}}}
    response = httpx.post(f"{server}/v1/systemone", json=body, headers=headers)
    assert response.status_code == status
    assert response.json()["detail"]["error_type"] == "authentication_error"
    models = httpx.get(f"{server}/v1/models", headers=headers)
    assert models.status_code == 401


def test_jevcompat_conformance_suite_passes(server: str, tmp_path: Path) -> None:
    """The whole ``jevcompat test`` suite (spec 0.1), auth checks included, against the server."""
    report = tmp_path / "jevcompat.json"
    command = [sys.executable, "-m", "jevcompat.cli", "test", server, "--key", TOKEN, "--json", str(report)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert report.exists(), run.stdout + run.stderr
    results = json.loads(report.read_text())["results"]
    failed = [r["id"] for r in results if r["status"] == "fail"]
    assert failed == [], run.stdout
    # With a key, the suite cannot check that a server without auth ignores Authorization headers.
    must = {r["id"]: r["status"] for r in results if r["level"] == "MUST"}
    assert len(must) == 33 and must.pop("auth.ignored-when-off") != "fail"
    assert set(must.values()) == {"pass"}, must
    should = {r["id"]: r["status"] for r in results if r["level"] == "SHOULD"}
    assert should["auth.missing"] == should["auth.invalid"] == "pass"


def test_the_sdks_zstd_compressed_requests_are_read(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """TypeSafe's SDK compresses bodies of 1 KB and more with zstd wherever it has zstd (Python 3.14)."""
    import httpx2
    import zstandard
    from typesafe_sdk import AsyncTypeSafeClient, Noul, RetryPolicy
    from typesafe_sdk._core import compression

    monkeypatch.setitem(compression.COMPRESSORS, "zstd", zstandard.ZstdCompressor().compress)
    state, questions = planner_questions()
    expected = asyncio.run(served_model()(state, questions)).answers
    sent: list[str] = []

    async def ask() -> Any:
        async def record(request: httpx2.Request) -> None:
            sent.append(request.headers.get("content-encoding", ""))

        http = httpx2.AsyncClient(event_hooks={"request": [record]})
        client = AsyncTypeSafeClient(
            api_key=TOKEN, base_url=server, retry=RetryPolicy(max_retries=0), http_client=http
        )
        async with client:
            wire = {n: Noul(instructions=q.instructions) for n, q in questions.items()}
            return await client.system_one(state=dict(state), questions=wire)

    response = asyncio.run(ask())
    assert sent == ["zstd"]
    assert {n: a.noul for n, a in response.answers.items()} == pytest.approx(dict(expected))


def test_a_server_with_only_the_learned_judge_says_no_question_model_is_configured(
    tmp_path: Path,
) -> None:
    """``tracetrim serve``'s default model judges whole histories: the endpoint says how to configure
    one that answers questions, ``/v1/models`` lists none, and ``/healthz`` says the same."""
    require_service_extra()
    with serve_process("--log-level", "warning", cwd=tmp_path, env={"TRACETRIM_API_TOKEN": TOKEN}) as (
        url,
        _,
    ):
        auth = {"Authorization": f"Bearer {TOKEN}"}
        body = {
            "model": "jev-latest",
            "state": "x",
            "questions": {"q": {"type": "noul", "instructions": "?"}},
        }
        response = httpx.post(f"{url}/v1/systemone", json=body, headers=auth)
        models = httpx.get(f"{url}/v1/models", headers=auth)
        health = httpx.get(f"{url}/healthz").json()
    assert response.status_code == 501, response.text
    error = response.json()["detail"]
    assert error["error_type"] == "no_decision_model"
    assert "no question-answering decision model is configured" in error["message"]
    assert "DECISION_MODEL_BACKEND" in error["message"] and "LearnedDecisionModel" in error["message"]
    assert models.status_code == 200 and models.json() == {"models": []}
    assert health["model"] == "LearnedDecisionModel" and health["systemone_model"] is None


def test_healthz_names_the_model_the_endpoint_serves(server: str) -> None:
    health = httpx.get(f"{server}/healthz").json()
    assert health["model"] == "ScriptedDecisionModel" and health["systemone_model"] == SERVED
    names = [
        m["name"]
        for m in httpx.get(f"{server}/v1/models", headers={"Authorization": f"Bearer {TOKEN}"}).json()[
            "models"
        ]
    ]
    assert names == ["jev-latest", SERVED]
