"""The shared JSON client: retry rules, Retry-After, backoff, cancellation, and keys kept secret."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest
import structlog

from tracetrim.decision._http import JsonClient, RetryPolicy, Secret, api_root, retry_after_s
from tracetrim.decision._protocol import DecisionModelError

KEY = "sk-test-0123456789abcdef"
FAST = RetryPolicy(max_retries=3, backoff_initial_s=0.001, backoff_max_s=0.002)


def _client(handler: object, retry: RetryPolicy = FAST, key: str | None = KEY) -> JsonClient:
    transport = httpx.MockTransport(handler)  # type: ignore[arg-type]
    client = httpx.AsyncClient(transport=transport)
    return JsonClient("http://server.test/v1/", key, retry=retry, client=client)


def _sequence(*responses: httpx.Response) -> tuple[list[httpx.Request], object]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return seen, handler


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
    seen, handler = _sequence(
        httpx.Response(429, headers={"retry-after-ms": "1"}, json={"error": "busy"}),
        httpx.Response(503, text="overloaded"),
        httpx.Response(200, json={"ok": True}),
    )
    reply = await _client(handler).post("/v1/x", {"a": 1})
    assert reply.data == {"ok": True}
    assert (reply.retries, reply.requests, len(seen)) == (2, 3, 3)
    assert seen[0].url == "http://server.test/v1/x"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"


async def test_honours_retry_after_ms() -> None:
    _seen, handler = _sequence(
        httpx.Response(429, headers={"retry-after-ms": "150"}),
        httpx.Response(200, json={}),
    )
    started = time.perf_counter()
    await _client(handler).post("/v1/x", {})
    assert time.perf_counter() - started >= 0.14


@pytest.mark.parametrize("status", [400, 404, 409, 422])
async def test_never_retries_other_4xx(status: int) -> None:
    seen, handler = _sequence(httpx.Response(status, json={"detail": [{"msg": "bad field"}]}))
    with pytest.raises(DecisionModelError, match=f"HTTP {status}.*bad field"):
        await _client(handler).post("/v1/x", {})
    assert len(seen) == 1


async def test_authentication_error_is_clear_and_never_shows_the_key() -> None:
    seen, handler = _sequence(httpx.Response(401, json={"error": f"bad key {KEY}"}))
    with pytest.raises(DecisionModelError) as caught:
        await _client(handler).post("/v1/x", {})
    assert "authentication failed" in str(caught.value)
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert len(seen) == 1


async def test_gives_up_after_max_retries_with_the_last_problem() -> None:
    seen, handler = _sequence(*[httpx.Response(500, text="boom")] * 4)
    with pytest.raises(DecisionModelError, match="after 4 attempts: HTTP 500: boom"):
        await _client(handler).post("/v1/x", {})
    assert len(seen) == 4


async def test_malformed_json_is_a_model_error_not_a_retry() -> None:
    seen, handler = _sequence(httpx.Response(200, text='{"answers": '))
    with pytest.raises(DecisionModelError, match="not valid JSON"):
        await _client(handler).post("/v1/x", {})
    assert len(seen) == 1


async def test_nan_in_a_reply_is_rejected() -> None:
    _seen, handler = _sequence(httpx.Response(200, text='{"p": NaN}'))
    with pytest.raises(DecisionModelError, match="not valid JSON"):
        await _client(handler).post("/v1/x", {})


async def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = JsonClient(f"http://127.0.0.1:{port}", KEY, retry=FAST)
    with pytest.raises(DecisionModelError, match="after 4 attempts: ConnectError"):
        await client.post("/v1/x", {})
    await client.aclose()


async def test_cancellation_during_backoff_propagates() -> None:
    seen, handler = _sequence(*[httpx.Response(429, headers={"retry-after": "30"})] * 2)
    client = _client(handler, retry=RetryPolicy(max_retries=3))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await client.post("/v1/x", {})
    assert len(seen) == 1


async def test_retry_after_is_capped() -> None:
    _seen, handler = _sequence(
        httpx.Response(429, headers={"retry-after": "3600"}), httpx.Response(200, json={})
    )
    client = _client(handler, retry=RetryPolicy(max_retries=1, max_retry_after_s=0.01))
    reply = await client.post("/v1/x", {})
    assert reply.retries == 1


async def test_retry_logs_never_contain_the_key() -> None:
    _seen, handler = _sequence(httpx.Response(500, text=f"echo {KEY}"), httpx.Response(200, json={}))
    with structlog.testing.capture_logs() as logs:
        await _client(handler).post("/v1/x", {})
    assert logs and all(KEY not in repr(entry) for entry in logs)


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
