"""``POST /v1/systemone`` of a real ``tracetrim serve`` process, driven by real Jev clients.

AgentScope's own ``JevClassifierModel`` (over TypeSafe's SDK), tracetrim's `SystemOneModel` running a
whole plan, and the ``jevcompat`` conformance suite all talk to the same server, which requires a
bearer token.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._serve import serve_process
from tests.conftest import load_scenario, service_unavailable
from tracetrim.compactor import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode
from tracetrim.decision import BinaryQuestion, DecisionResponse, LexicalDecisionModel, SystemOneModel

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``tracetrim serve`` with the lexical model, requiring `TOKEN`."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")
    cwd = tmp_path_factory.mktemp("systemone-serve")
    flags = ("--model-backend", "lexical", "--log-level", "warning")
    with serve_process(*flags, cwd=cwd, env={"TRACETRIM_API_TOKEN": TOKEN}) as (url, _):
        yield url


class Recording:
    """Wraps a model and keeps every (state, questions) the planner asked it."""

    def __init__(self, model: LexicalDecisionModel) -> None:
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
    recording = Recording(LexicalDecisionModel())
    outcome = asyncio.run(Compactor(recording, config=config).plan(request))
    assert outcome.status.value == "DECIDED" and len(recording.asked) == 1
    return recording.asked[0]


def test_agentscope_jev_classifier_gets_the_lexical_judges_answers(server: str) -> None:
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
    expected = asyncio.run(LexicalDecisionModel()(state, questions)).answers
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
    assert response.model == LexicalDecisionModel.name
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
        local = await Compactor(LexicalDecisionModel(), config=config, execution=execution).plan(request)
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
    expected = asyncio.run(LexicalDecisionModel()(state, questions)).answers
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
