"""What goes back is valid where today's agents read it: OpenHands event streams (the SDK's and V0's),
ATIF trajectories, tau2-bench simulations and request bodies, drawn provider-valid, compacted in ENFORCE
with every mix of actions, tombstones on and off, written back and checked by each agent's or
provider's own rules."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given

from tests import _agent_rules as agents
from tests import _provider_histories as histories
from tests import _provider_rules as rules
from tests._compact_plans import SETTINGS, compact, plans, write_back
from tracetrim.formats import HISTORY_FORMATS, detect_format


@SETTINGS
@given(events=histories.openhands_events(), plan=plans)
def test_openhands_event_streams_stay_valid(events: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(events)
    agents.check_openhands(events, sent)  # the generator draws what the SDK accepts
    shape = HISTORY_FORMATS["openhands"]
    written = shape.write(compact(shape.read(events, {}), plan))["messages"]
    assert events == sent, "the caller's events were changed"
    agents.check_openhands(written, sent)
    rules.check_calls_as_sent("openhands", written, sent)
    assert detect_format(written) == "openhands"


@SETTINGS
@given(events=histories.openhands_v0_events(), plan=plans)
def test_openhands_v0_histories_stay_valid(events: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(events)
    agents.check_openhands_v0(events)  # the generator draws what V0 sends whole
    shape = HISTORY_FORMATS["openhands-v0"]
    written = shape.write(compact(shape.read(events, {}), plan))["messages"]
    assert events == sent, "the caller's events were changed"
    agents.check_openhands_v0(written)
    rules.check_calls_as_sent("openhands-v0", written, sent)
    assert detect_format(written) == "openhands-v0"
    assert shape.write(shape.read(written, {}))["messages"] == written


@SETTINGS
@given(trajectory=histories.atif_trajectories(), plan=plans)
def test_atif_trajectories_stay_valid(trajectory: dict[str, Any], plan: dict[str, Any]) -> None:
    agents.check_atif(trajectory, trajectory)
    written = write_back("atif", trajectory, plan)
    agents.check_atif(written, trajectory)
    rules.check_calls_as_sent("atif", written, trajectory)
    assert {k: v for k, v in written.items() if k != "steps"} == {
        k: v for k, v in trajectory.items() if k != "steps"
    }


@SETTINGS
@given(messages=histories.tau2_messages(), plan=plans)
def test_tau2_simulations_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    agents.check_tau2(messages)
    shape = HISTORY_FORMATS["tau2"]
    written = shape.write(compact(shape.read(messages, {}), plan))["messages"]
    agents.check_tau2(written)
    rules.check_calls_as_sent("tau2", written, messages)


@SETTINGS
@given(messages=histories.openai_chat_histories(), plan=plans)
def test_chat_request_bodies_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    body = {"model": "gpt-4.1", "messages": messages, "tools": [], "temperature": 0}
    assert detect_format(body) == "openai"
    written = write_back("openai", body, plan)
    rules.check_openai_chat(written["messages"])
    rules.check_calls_as_sent("openai", written, body)
    assert list(written) == list(body) and written["model"] == "gpt-4.1"


@SETTINGS
@given(items=histories.responses_inputs(), plan=plans)
def test_responses_request_bodies_stay_valid(items: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    body = {"model": "gpt-5", "input": items, "store": False}
    assert detect_format(body) == "responses-request"
    written = write_back("responses-request", body, plan)
    rules.check_responses(written["input"], items)
    rules.check_calls_as_sent("responses", written, body)
    assert list(written) == list(body)


@SETTINGS
@given(session=histories.adk_sessions(), plan=plans)
def test_adk_sessions_stay_valid(session: dict[str, Any], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(session)
    agents.check_adk(session, sent)  # the generator's own sessions are valid
    written = write_back("adk", session, plan)
    assert session == sent, "the caller's session was mutated"
    agents.check_adk(written, sent)
    rules.check_calls_as_sent("gemini", written, sent)
    assert {k: v for k, v in written.items() if k != "events"} == {
        k: v for k, v in sent.items() if k != "events"
    }
    assert detect_format(written) == "adk"
