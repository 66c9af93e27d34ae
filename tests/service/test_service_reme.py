"""ReMe's client drives ``POST /compact_context`` of a real ``tracetrim serve`` process, unchanged.

The client is ReMe's own ``HttpClient`` request path and its schema models, copied from reme-ai 0.4.2
(`tests/_reme_contract.py` says why the package itself is not imported): every request is first
validated with ReMe's ``CompactionRequest`` and every answer with ReMe's ``Response`` and
``CompactionResult``, so a field ReMe would refuse fails here.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._reme_contract import CompactionRequest, CompactionResult, ReMeHttpClient, Response
from tests._serve import serve_process
from tests.conftest import load_scenario, service_unavailable
from tracetrim.formats import to_openai_chat

SCOPE = {"user_id": "reme-user", "agent_id": "a", "session_id": "s"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``tracetrim serve`` with the learned judge and a SQLite archive."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")
    cwd = tmp_path_factory.mktemp("reme-serve")
    flags = ("--model-backend", "learned", "--archive", "sqlite:archive.db", "--log-level", "warning")
    with serve_process(*flags, cwd=cwd) as (url, _):
        yield url


def reme_request(**changes: Any) -> dict[str, Any]:
    """payment_retry as ReMe's ``CompactionRequest``, with a source reference for every call."""
    scenario = load_scenario("payment_retry")
    calls = [b["id"] for m in scenario["messages"] for b in m["content"] if b.get("type") == "tool_call"]
    body: dict[str, Any] = {
        "messages": scenario["messages"],
        "goal": scenario["goal"],
        "next_action": scenario["next_action"],
        "source_refs": {cid: f"host-archive://{cid}" for cid in calls},
        "protected_message_ids": scenario["protected_message_ids"],
        "eligible_tool_names": scenario["eligible_tool_names"],
        "options": {"preserve_recent_messages": 6, "drop_threshold": 0.3},
    }
    body.update(changes)
    return body


def call_reme(url: str, payload: dict[str, Any], *, validate: bool = True) -> Response:
    """Send ``payload`` with ReMe's client; the envelope, parsed as ReMe parses it."""
    if validate:
        CompactionRequest.model_validate(
            {k: v for k, v in payload.items() if k in CompactionRequest.model_fields}
        )
    address = httpx.URL(url)

    async def go() -> str:
        client = ReMeHttpClient(str(address.host), int(address.port or 80), timeout=60)
        try:
            return await client.call("compact_context", **payload)
        finally:
            await client._close()

    return Response.model_validate_json(asyncio.run(go()))


def tool_calls(messages: list[dict[str, Any]]) -> list[str]:
    return [b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_call"]


def test_previews_with_source_refs_in_remes_own_schema(server: str) -> None:
    payload = reme_request()
    envelope = call_reme(server, payload)
    assert envelope.success is True
    result = CompactionResult.model_validate(envelope.answer)  # ReMe's own model: keep|preview only
    assert result.changed is True and result.reason == "compacted" and result.schema_version == 2
    original = payload["messages"]
    assert result.messages != original
    assert len(json.dumps(result.messages)) < len(json.dumps(original))
    assert tool_calls(result.messages) == tool_calls(original)  # ReMe never removes a call
    previews = [d for d in result.decisions if d.action == "preview"]
    assert previews, result.decisions
    for decision in previews:
        assert decision.source_ref == f"host-archive://{decision.call_id}"
        assert decision.probability is not None and decision.probability <= 0.3
    assert {d.call_id for d in result.decisions} <= set(tool_calls(original))
    assert envelope.metadata["compaction"] == envelope.answer["stats"]
    assert envelope.metadata["compaction"]["candidates"] > 0
    assert envelope.metadata["outcome"]["mode"] == "shadow"


def test_without_source_refs_nothing_is_recoverable_so_nothing_changes(server: str) -> None:
    payload = reme_request(source_refs={})
    envelope = call_reme(server, payload)
    result = CompactionResult.model_validate(envelope.answer)
    assert (result.changed, result.reason) == (False, "no_candidates")
    assert result.messages == payload["messages"]
    assert all(d.action == "keep" for d in result.decisions)


def test_a_scope_archives_the_original_and_v1_restore_gives_it_back(server: str) -> None:
    payload = reme_request(source_refs={}, scope=SCOPE)  # an extra field, as ReMe's Request allows
    envelope = call_reme(server, payload)
    result = CompactionResult.model_validate(envelope.answer)
    assert (result.changed, result.reason) == (True, "compacted")
    verdict = envelope.metadata["outcome"]
    assert verdict["mode"] == "enforce" and len(verdict["archive_ref"]) == 64
    restored = httpx.post(
        f"{server}/v1/restore", json={"scope": SCOPE, "archive_ref": verdict["archive_ref"]}, timeout=30
    ).json()
    assert restored["messages"] == payload["messages"]


def text_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without the image parts of tool outputs, which OpenAI chat cannot carry."""
    out = copy.deepcopy(messages)
    for message in out:
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("output"), list):
                block["output"] = [p for p in block["output"] if p.get("type") == "text"]
    return out


def test_openai_chat_messages_come_back_in_openai_form(server: str) -> None:
    chat = to_openai_chat(text_only(load_scenario("payment_retry")["messages"]))
    ids = [c["id"] for m in chat for c in m.get("tool_calls") or ()]
    payload = reme_request(messages=chat, source_refs={cid: f"ref-{cid}" for cid in ids})
    envelope = call_reme(server, payload, validate=False)  # ReMe's schema takes AgentScope blocks only
    answer = envelope.answer
    assert envelope.success is True and answer["changed"] is True and answer["reason"] == "compacted"
    assert envelope.metadata["outcome"]["format"] == "openai"
    messages = answer["messages"]
    assert all("content" in m and m["role"] in ("system", "user", "assistant", "tool") for m in messages)
    assert [c["id"] for m in messages for c in m.get("tool_calls") or ()] == ids
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
        m["tool_call_id"] for m in chat if m["role"] == "tool"
    ]
    assert len(json.dumps(messages)) < len(json.dumps(chat))


def test_a_request_reme_refuses_is_success_false_with_the_reason(server: str) -> None:
    envelope = call_reme(server, reme_request(options={"drop_threshold": 2}), validate=False)
    assert envelope.success is False
    assert isinstance(envelope.answer, str) and "options.drop_threshold" in envelope.answer
    assert envelope.metadata["error"]["field"] == "options.drop_threshold"
    envelope = call_reme(server, reme_request(options={"drop_treshold": 0.2}), validate=False)
    assert envelope.success is False and "drop_treshold" in envelope.answer
    envelope = call_reme(server, reme_request(options={"total_timeout_seconds": 3600}))  # over --budget
    assert envelope.success is False and "options.total_timeout_seconds" in envelope.answer


def test_remes_options_reach_the_planner(server: str) -> None:
    everything_recent = call_reme(server, reme_request(options={"preserve_recent_messages": 1000}))
    result = CompactionResult.model_validate(everything_recent.answer)
    assert (result.changed, result.reason) == (False, "no_candidates")
    cautious = call_reme(server, reme_request(options={"drop_threshold": 0.0}))
    assert CompactionResult.model_validate(cautious.answer).changed is False
    short = call_reme(server, reme_request(options={"drop_threshold": 0.3, "preview_chars": 40}))
    long = call_reme(server, reme_request(options={"drop_threshold": 0.3, "preview_chars": 2000}))
    size = [len(json.dumps(e.answer["messages"])) for e in (short, long)]
    assert size[0] < size[1]


def test_unknown_top_level_fields_are_ignored_as_reme_does(server: str, tmp_path: Path) -> None:
    envelope = call_reme(server, reme_request(metadata={"trace": "x"}, chat_id="c"), validate=False)
    assert envelope.success is True
    assert envelope.metadata["outcome"]["ignored_fields"] == ["chat_id"]


def test_max_output_tokens_reports_whether_the_budget_was_met(server: str) -> None:
    tight = call_reme(server, reme_request(options={"drop_threshold": 0.3, "max_output_tokens": 100}))
    result = CompactionResult.model_validate(tight.answer)
    assert (result.budget_met, result.reason) == (False, "budget_exceeded")
    assert result.stats["tokens_after"] > 100
    roomy = call_reme(server, reme_request(options={"drop_threshold": 0.3, "max_output_tokens": 10**6}))
    result = CompactionResult.model_validate(roomy.answer)
    assert result.budget_met is True and result.changed is False  # under the trigger: nothing to do
