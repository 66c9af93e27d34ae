"""Full plans over the bundled scenario histories with every HTTP backend against real local servers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._decision_servers import ChatStandIn, DecisionsStandIn, jev_mock
from tests.conftest import load_scenario
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel
from tracetrim.decision._protocol import DecisionModel
from tracetrim.decision._systemone import SystemOneModel

mock = pytest.importorskip("jevcompat.mock")

KEY = "plan-test-key-31337"
FAST = RetryPolicy(max_retries=6, backoff_initial_s=0.001, backoff_max_s=0.01)


def _request(name: str = "payment_retry") -> tuple[dict[str, Any], tt.CompactionRequest]:
    scenario = load_scenario(name)
    request = tt.CompactionRequest(
        scenario["messages"],
        goal=scenario["goal"],
        next_action=scenario["next_action"],
        protected_message_ids=scenario["protected_message_ids"],
        protected_call_ids=scenario["protected_call_ids"],
    )
    return scenario, request


def _compactor(
    model: DecisionModel,
    scenario: dict[str, Any],
    *,
    mode: tt.Mode = tt.Mode.SHADOW,
    budget_s: float = 20.0,
    archive: Any = None,
    max_questions: int = 6,
    observer: Any = None,
) -> tt.Compactor:
    config = tt.CompactorConfig(
        eligible_tools=scenario["eligible_tool_names"],
        minimum_reduction=0.0,
        max_questions=max_questions,
        max_concurrency=4,
    )
    execution = tt.ExecutionOptions(mode=mode, budget_s=budget_s, observer=observer)
    return tt.Compactor(model, config=config, execution=execution, archive=archive)


def _assert_decided(outcome: tt.Outcome) -> tt.PlanStats:
    assert outcome.status == tt.Status.DECIDED, (outcome.reason, outcome.detail)
    assert outcome.reason == "SHADOW_PROPOSAL"
    assert outcome.plan is not None
    stats = outcome.plan.stats
    assert stats.candidates > 0 and stats.requests >= 2
    assert stats.input_tokens > 0 and stats.output_tokens > 0
    return stats


async def test_systemone_plan_is_decided_in_shadow_mode() -> None:
    scenario, request = _request()
    with jev_mock(mock.MockConfig(key=KEY)) as server:
        model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
        stats = _assert_decided(await _compactor(model, scenario).plan(request))
    assert stats.retries == 0


async def test_systemone_plan_survives_429s_and_counts_the_retries() -> None:
    scenario, request = _request()
    config = mock.MockConfig(key=KEY, busy_every=2)
    with jev_mock(config) as server:
        model = SystemOneModel(api_key=KEY, base_url=server.url, retry=FAST)
        stats = _assert_decided(await _compactor(model, scenario).plan(request))
    assert stats.retries >= 1
    assert config.requests == stats.requests + stats.retries


async def test_wrong_key_is_an_error_outcome_and_the_history_is_unchanged(tmp_path: Path) -> None:
    scenario, request = _request()
    before = copy.deepcopy(scenario["messages"])
    records: list[Any] = []
    with jev_mock(mock.MockConfig(key=KEY)) as server:
        model = SystemOneModel(api_key="not-the-key-000", base_url=server.url, retry=FAST)
        outcome = await _compactor(model, scenario).plan(request)
        enforce = _compactor(
            model,
            scenario,
            mode=tt.Mode.ENFORCE,
            observer=records.append,
            archive=tt.archive.FileArchive(tmp_path / "archive", max_bytes=10_000_000),
        )
        history = await enforce.compact(request)
    assert outcome.status == tt.Status.ERROR and outcome.reason == "MODEL_ERROR"
    assert "authentication failed" in outcome.detail and "not-the-key-000" not in outcome.detail
    assert history == before and scenario["messages"] == before
    assert records and all("not-the-key-000" not in repr(record) for record in records)


@pytest.mark.parametrize("name", ["payment_retry", "replication_incident"])
async def test_openai_decisions_plan_is_decided(name: str) -> None:
    scenario, request = _request(name)
    with DecisionsStandIn(key=KEY, fail_first=1) as server:
        model = OpenAIDecisionsModel(api_key=KEY, base_url=server.url, retry=FAST)
        stats = _assert_decided(await _compactor(model, scenario).plan(request))
    assert stats.retries == 1
    assert len(server.requests) == stats.requests + stats.retries


async def test_openai_refusal_is_an_invalid_answer_outcome() -> None:
    scenario, request = _request()
    refuse = frozenset(f"result_t{i}" for i in range(1, 40))
    with DecisionsStandIn(key=KEY, refuse=refuse) as server:
        model = OpenAIDecisionsModel(api_key=KEY, base_url=server.url, retry=FAST)
        outcome = await _compactor(model, scenario).plan(request)
    assert outcome.status == tt.Status.ERROR and outcome.reason == "INVALID_ANSWER"


@pytest.mark.parametrize("logprobs", [True, False])
async def test_chat_logprobs_plan_is_decided(logprobs: bool) -> None:
    scenario, request = _request()
    with ChatStandIn(logprobs=logprobs) as server:
        model = ChatLogprobsModel(server.url, "local-model", retry=FAST)
        stats = _assert_decided(await _compactor(model, scenario).plan(request))
    assert stats.output_tokens >= stats.candidates * 2


async def test_a_hanging_server_times_the_plan_out() -> None:
    scenario, request = _request()
    with ChatStandIn(hang=True) as server:
        model = ChatLogprobsModel(server.url, "local-model", retry=FAST)
        outcome = await _compactor(model, scenario, budget_s=0.5).plan(request)
    assert outcome.status == tt.Status.ERROR and outcome.reason == "TIMEOUT"


async def test_malformed_json_is_a_model_error_outcome() -> None:
    scenario, request = _request()
    with DecisionsStandIn(key=KEY, malformed=True) as server:
        model = OpenAIDecisionsModel(api_key=KEY, base_url=server.url, retry=FAST)
        outcome = await _compactor(model, scenario).plan(request)
    assert outcome.status == tt.Status.ERROR and outcome.reason == "MODEL_ERROR"


async def test_agentscope_jev_classifier_plan_is_decided() -> None:
    classifier = pytest.importorskip("agentscope.classifier")
    credential = pytest.importorskip("agentscope.credential")
    from tracetrim.decision._agentscope import AgentScopeClassifierModel

    scenario, request = _request()
    with jev_mock(mock.MockConfig(key=KEY)) as server:
        jev = classifier.JevClassifierModel(credential.TypeSafeCredential(api_key=KEY, base_url=server.url))
        _assert_decided(await _compactor(AgentScopeClassifierModel(jev), scenario).plan(request))
