"""The shared JSON client against a real local server: retry rules, Retry-After, backoff, cancellation,
and keys kept secret."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import httpx
import pytest

from tests._decision_servers import Reply, ScriptedServer
from tracetrim.decision._http import JsonClient, JsonReply, RetryPolicy, Secret, api_root, retry_after_s
from tracetrim.decision._protocol import DecisionModelError

KEY = "sk-test-0123456789abcdef"
FAST = RetryPolicy(max_retries=3, backoff_initial_s=0.001, backoff_max_s=0.002)


async def _post(server: ScriptedServer, retry: RetryPolicy = FAST, key: str | None = KEY) -> JsonReply:
    """POST a small payload to ``/v1/x`` through a client that owns (and closes) its connections."""
    client = JsonClient(server.url + "/v1/", key, retry=retry)
    try:
        return await client.post("/v1/x", {"a": 1})
    finally:
        await client.aclose()


def test_api_root_accepts_a_base_with_or_without_v1() -> None:
    assert api_root("http://h:1/v1/") == api_root("http://h:1") == "http://h:1"
    with pytest.raises(ValueError, match="http"):
        api_root("h:1")


def test_retry_after_headers() -> None:
    assert retry_after_s(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_s(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after_s(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_s(httpx.Headers({"retry-after": "-1"})) is None
    assert retry_after_s(httpx.Headers({})) is None
    dated = retry_after_s(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}))
    assert dated == 0.0


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(backoff_initial_s=1.0, backoff_max_s=5.0, jitter=0.25)
    for retry, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)):
        delay = policy.backoff(retry)
        assert 0.75 * ceiling <= delay <= ceiling


async def test_retries_429_and_5xx_then_succeeds_and_counts_retries() -> None:
    with ScriptedServer(
        Reply.of_json(429, {"error": "busy"}, {"retry-after-ms": "1"}),
        Reply.of_text(503, "overloaded"),
        Reply.of_json(200, {"ok": True}),
    ) as server:
        reply = await _post(server)
    assert reply.data == {"ok": True}
    assert (reply.retries, reply.requests, len(server.requests)) == (2, 3, 3)
    first = server.requests[0]
    assert first["path"] == "/v1/x" and json.loads(first["body"]) == {"a": 1}
    assert first["headers"]["authorization"] == f"Bearer {KEY}"


async def test_honours_retry_after_ms() -> None:
    with ScriptedServer(
        Reply.of_text(429, headers={"retry-after-ms": "150"}), Reply.of_json(200, {})
    ) as server:
        started = time.perf_counter()
        await _post(server)
        assert time.perf_counter() - started >= 0.14


@pytest.mark.parametrize("status", [400, 404, 409, 422])
async def test_never_retries_other_4xx(status: int) -> None:
    with (
        ScriptedServer(Reply.of_json(status, {"detail": [{"msg": "bad field"}]})) as server,
        pytest.raises(DecisionModelError, match=f"HTTP {status}.*bad field"),
    ):
        await _post(server)
    assert len(server.requests) == 1


async def test_authentication_error_is_clear_and_never_shows_the_key() -> None:
    with (
        ScriptedServer(Reply.of_json(401, {"error": f"bad key {KEY}"})) as server,
        pytest.raises(DecisionModelError) as caught,
    ):
        await _post(server)
    assert "authentication failed" in str(caught.value)
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert len(server.requests) == 1


async def test_gives_up_after_max_retries_with_the_last_problem() -> None:
    with (
        ScriptedServer(*[Reply.of_text(500, "boom")] * 4) as server,
        pytest.raises(DecisionModelError, match="after 4 attempts: HTTP 500: boom"),
    ):
        await _post(server)
    assert len(server.requests) == 4


async def test_malformed_json_is_a_model_error_not_a_retry() -> None:
    with (
        ScriptedServer(Reply.of_text(200, '{"answers": ')) as server,
        pytest.raises(DecisionModelError, match="not valid JSON"),
    ):
        await _post(server)
    assert len(server.requests) == 1


async def test_nan_in_a_reply_is_rejected() -> None:
    with (
        ScriptedServer(Reply.of_text(200, '{"p": NaN}')) as server,
        pytest.raises(DecisionModelError, match="not valid JSON"),
    ):
        await _post(server)


async def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = JsonClient(f"http://127.0.0.1:{port}", KEY, retry=FAST)
    with pytest.raises(DecisionModelError, match="after 4 attempts: ConnectError"):
        await client.post("/v1/x", {})
    await client.aclose()


async def test_cancellation_during_backoff_propagates() -> None:
    with ScriptedServer(*[Reply.of_text(429, headers={"retry-after": "30"})] * 2) as server:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await _post(server, retry=RetryPolicy(max_retries=3))
        assert len(server.requests) == 1


async def test_retry_after_is_capped() -> None:
    with ScriptedServer(
        Reply.of_text(429, headers={"retry-after": "3600"}), Reply.of_json(200, {})
    ) as server:
        started = time.perf_counter()
        reply = await _post(server, retry=RetryPolicy(max_retries=1, max_retry_after_s=0.01))
        assert time.perf_counter() - started < 5.0
    assert reply.retries == 1


async def test_a_retry_after_hint_wins_over_backoff_and_is_capped(caplog: pytest.LogCaptureFixture) -> None:
    slow_backoff = RetryPolicy(max_retries=1, backoff_initial_s=30.0, max_retry_after_s=0.05)
    with (
        ScriptedServer(Reply.of_text(503, headers={"retry-after": "3600"}), Reply.of_json(200, {})) as server,
        caplog.at_level(logging.INFO, "tracetrim"),
    ):
        reply = await _post(server, retry=slow_backoff)
    messages = [record.getMessage() for record in caplog.records]
    [line] = [json.loads(m) for m in messages if "decision_request_retry" in m]
    assert (line["attempt"], line["delay_s"], reply.retries) == (1, 0.05, 1)
    assert line["problem"].startswith("HTTP 503")


async def test_retry_logs_never_contain_the_key(caplog: pytest.LogCaptureFixture) -> None:
    with (
        ScriptedServer(Reply.of_text(500, f"echo {KEY}"), Reply.of_json(200, {})) as server,
        caplog.at_level(logging.INFO, "tracetrim"),
    ):
        await _post(server)
    logs = [record.getMessage() for record in caplog.records]
    assert logs and all(KEY not in line for line in logs)


def test_reprs_hide_the_key() -> None:
    client = JsonClient("http://h", KEY)
    secret = Secret(KEY)
    for text in (repr(client), str(client), repr(secret), str(secret), f"{secret}"):
        assert KEY not in text
    assert secret.reveal() == KEY


def test_retry_policy_is_validated() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(backoff_initial_s=-1)
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
