"""Decision replies are read to a byte cap (issue 35, item 2), against a real local server that floods.

The server is a plain ``http.server`` on a free loopback port that answers every POST with a reply far
larger than the client's cap: no length and the body until it hangs up, a huge announced
Content-Length, or a gzip bomb. It counts what it managed to send and notices when the client hangs
up, so "the client stopped reading" is asserted from the far end of the socket, not taken on trust.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Self

import pytest

import tracetrim as tt
from tests.conftest import load_scenario
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._http import (
    DEFAULT_MAX_REPLY_BYTES,
    JsonClient,
    ReplyTooLargeError,
    RetryPolicy,
)
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel
from tracetrim.decision._protocol import DecisionModel
from tracetrim.decision._systemone import SystemOneModel

MiB = 1024 * 1024
CHUNK = 64 * 1024
# A reply stops being "far over the cap" evidence only if the kernel's socket buffers (a few MiB on
# loopback) swallowed most of it; the bound leaves room for them and is still a fraction of the offer.
SLACK = 40 * MiB
FAST = RetryPolicy(max_retries=3, backoff_initial_s=0.001, backoff_max_s=0.002)
PREFIX = b'{"answers":{"q":"'


@dataclass
class Sent:
    """What the server did on one connection: bytes of body sent, and whether the client hung up."""

    sent: int = 0
    hung_up: bool = False
    done: bool = False


class FloodServer:
    """A real HTTP server on 127.0.0.1 answering every POST with ``offer`` bytes, as ``mode`` says.

    ``mode``: ``"until_close"`` (no length, the body until the connection ends), ``"announced"``
    (a Content-Length of 10 GiB, then body bytes), ``"gzip"`` (Content-Encoding gzip: ``offer``
    bytes of JSON that compress to a small fraction), or ``"exact"`` (a valid JSON reply of exactly
    ``offer`` bytes with its Content-Length).
    """

    def __init__(self, mode: str, offer: int) -> None:
        self.mode = mode
        self.offer = offer
        self.connections: list[Sent] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # A small send buffer keeps what the kernel holds for a stalled client near the cap.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
                self.connection.settimeout(20)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                record = Sent()
                with owner._lock:
                    owner.connections.append(record)
                try:
                    owner._answer(self, record)
                except (BrokenPipeError, ConnectionResetError):
                    record.hung_up = True
                except TimeoutError:
                    pass  # the client stopped reading but kept the socket open: not hung_up
                finally:
                    record.done = True
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _answer(self, handler: http.server.BaseHTTPRequestHandler, record: Sent) -> None:
        if self.mode == "exact":
            body = PREFIX + b"x" * (self.offer - len(PREFIX) - 3) + b'"}}'
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            record.sent = len(body)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Connection", "close")
        if self.mode == "announced":
            handler.send_header("Content-Length", str(10 * 1024 * MiB))
        if self.mode == "gzip":
            handler.send_header("Content-Encoding", "gzip")
        handler.end_headers()
        for chunk in self._chunks():
            handler.wfile.write(chunk)
            handler.wfile.flush()
            record.sent += len(chunk)

    def _chunks(self) -> Iterator[bytes]:
        if self.mode != "gzip":
            yield PREFIX
            for _ in range((self.offer - len(PREFIX)) // CHUNK):
                yield b"x" * CHUNK
            return
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        yield squeeze.compress(PREFIX)
        for _ in range(self.offer // MiB):
            if piece := squeeze.compress(b"x" * MiB):
                yield piece
        yield squeeze.compress(b'"}}') + squeeze.flush()

    def wait_done(self, timeout: float = 15.0) -> list[Sent]:
        """Every connection's record once all have ended (the client hung up or the body ran out)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.connections and all(c.done for c in self.connections):
                    return list(self.connections)
            time.sleep(0.02)
        raise AssertionError(f"the server's connections did not end: {self.connections}")

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


async def _post(url: str, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> Any:
    client = JsonClient(url, "k", retry=FAST, max_reply_bytes=max_reply_bytes)
    try:
        return (await client.post("/v1/x", {"a": 1})).data
    finally:
        await client.aclose()


async def test_a_reply_far_over_the_cap_is_cut_off_and_the_connection_dropped() -> None:
    with FloodServer("until_close", offer=192 * MiB) as server:
        with pytest.raises(ReplyTooLargeError) as refused:
            await _post(server.url, max_reply_bytes=64 * 1024)
        [connection] = server.wait_done()  # one request: an oversized reply is not retried
    assert "reply too large" in str(refused.value) and "max_reply_bytes=65536" in str(refused.value)
    assert connection.hung_up and connection.sent < SLACK


async def test_an_announced_length_over_the_cap_is_refused_before_the_body_is_read() -> None:
    with FloodServer("announced", offer=192 * MiB) as server:
        with pytest.raises(ReplyTooLargeError, match="announced 10737418240 bytes"):
            await _post(server.url, max_reply_bytes=MiB)
        [connection] = server.wait_done()
    assert connection.hung_up and connection.sent < SLACK


async def test_a_compressed_bomb_is_inflated_no_further_than_the_cap() -> None:
    # 256 MiB of JSON that gzip squeezes to a few hundred KiB: counting the bytes on the wire would let
    # it through, and inflating each network chunk whole would cost tens of MiB per chunk.
    with FloodServer("gzip", offer=256 * MiB) as server:
        tracemalloc.start()
        try:
            with pytest.raises(ReplyTooLargeError, match="sent more than 1048576 bytes"):
                await _post(server.url, max_reply_bytes=MiB)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        server.wait_done()
    assert peak < 16 * MiB


async def test_a_reply_of_exactly_the_cap_is_read_and_one_byte_more_is_not() -> None:
    with FloodServer("exact", offer=100_000) as server:
        assert (await _post(server.url, max_reply_bytes=100_000))["answers"]["q"].startswith("xxx")
        with pytest.raises(ReplyTooLargeError, match="announced 100000 bytes"):
            await _post(server.url, max_reply_bytes=99_999)


def test_the_cap_must_be_a_positive_integer() -> None:
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="max_reply_bytes must be a positive integer"):
            JsonClient("http://127.0.0.1:9", None, max_reply_bytes=bad)  # type: ignore[arg-type]


def test_from_env_reads_the_cap_and_names_a_bad_value() -> None:
    env = {"DECISION_MODEL_BACKEND": "systemone", "DECISION_MODEL_BASE_URL": "http://127.0.0.1:9"}
    default = tt.decision.from_env(env)
    assert default._http.max_reply_bytes == DEFAULT_MAX_REPLY_BYTES == 8 * MiB  # type: ignore[attr-defined]
    chosen = tt.decision.from_env({**env, "DECISION_MODEL_MAX_REPLY_BYTES": "4096"})
    assert chosen._http.max_reply_bytes == 4096  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="DECISION_MODEL_MAX_REPLY_BYTES must be a positive"):
        tt.decision.from_env({**env, "DECISION_MODEL_MAX_REPLY_BYTES": "8M"})


def _models(url: str) -> dict[str, DecisionModel]:
    return {
        "systemone": SystemOneModel(api_key="k", base_url=url, retry=FAST),
        "openai": OpenAIDecisionsModel(api_key="k", base_url=url, retry=FAST),
        "chat": ChatLogprobsModel(url, "local-model", retry=FAST, max_concurrency=4),
    }


@pytest.mark.parametrize("backend", ["systemone", "openai", "chat"])
async def test_replies_over_the_default_cap_fail_the_plan_whole(backend: str) -> None:
    scenario = load_scenario("payment_retry")
    before = [dict(m) for m in scenario["messages"]]
    request = tt.CompactionRequest(scenario["messages"], goal=scenario["goal"])
    config = tt.CompactorConfig(
        eligible_tools=scenario["eligible_tool_names"],
        minimum_reduction=0.0,
        max_questions=4,  # several batches (or, for chat, questions) in flight at once
        max_concurrency=4,
    )
    with FloodServer("until_close", offer=128 * MiB) as server:
        model = _models(server.url)[backend]
        compactor = tt.Compactor(model, config=config, execution=tt.ExecutionOptions(budget_s=60.0))
        outcome = await compactor.plan(request)
        await model.aclose()  # type: ignore[attr-defined]
        connections = server.wait_done()
    assert (outcome.status, outcome.reason, outcome.plan) == (tt.Status.ERROR, "MODEL_ERROR", None)
    assert "reply too large" in outcome.detail and f"max_reply_bytes={8 * MiB}" in outcome.detail
    assert scenario["messages"] == before
    # Every reply was cut off: each connection was dropped by the client long before its offer ran out.
    assert connections and all(c.hung_up and c.sent < 8 * MiB + SLACK for c in connections)
