"""Slow, vanishing and greedy clients, and big plans: the server keeps its slots and its loop.

Every test runs uvicorn with the configuration ``tracetrim serve`` uses (`tracetrim.service.server_config`)
and talks to it over raw sockets where a well-behaved HTTP client could not misbehave on purpose.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import service_unavailable
from tracetrim.decision import LearnedDecisionModel


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")


@contextlib.contextmanager
def running(limits: dict[str, Any] | None = None, **settings: Any) -> Iterator[Any]:
    from tests._asgi import ThreadedServer
    from tracetrim.service import ServerLimits, ServiceSettings, create_app

    settings.setdefault("model", LearnedDecisionModel())
    app = create_app(ServiceSettings(**settings))
    with ThreadedServer(app, lifespan="on", limits=ServerLimits(**(limits or {}))) as server:
        yield server


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def head(path: str = "/v1/compact_context", length: int = 1000) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_a_connection_that_never_finishes_its_head_is_closed() -> None:
    with running({"header_timeout_s": 0.5}) as server:
        silent = connect(server.port)
        trickle = connect(server.port)
        trickle.sendall(b"POST /v1/compact_context HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        assert closed_within(silent, 10) and closed_within(trickle, 10)
        assert time.monotonic() - started < 8
        assert httpx.get(f"{server.url}/healthz").status_code == 200  # the server itself is fine


def test_a_kept_alive_connection_gets_the_same_header_deadline() -> None:
    with running({"header_timeout_s": 0.5, "keep_alive_s": 60}) as server:
        sock = connect(server.port)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in sock.recv(4096)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # a second request, never finished
        assert closed_within(sock, 10)


def test_a_body_that_stops_arriving_is_408() -> None:
    with running(read_timeout_s=0.5) as server:
        sock = connect(server.port)
        sock.sendall(head(length=1000) + b'{"messages": [')
        sock.settimeout(10)
        answer = b""
        while b'"}}' not in answer:  # the head and the JSON body may come in separate segments
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408")
        assert b'"code":"read_timeout"' in answer.replace(b" ", b"")


def test_connections_beyond_the_cap_get_503_at_once() -> None:
    with running({"max_connections": 3, "header_timeout_s": 30}) as server:
        held = [connect(server.port) for _ in range(3)]
        time.sleep(0.2)
        response = httpx.get(f"{server.url}/healthz")
        assert response.status_code == 503
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while httpx.get(f"{server.url}/healthz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_client_that_hangs_up_is_one_quiet_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with running() as server:
        for _ in range(3):
            sock = connect(server.port)
            sock.sendall(head(length=5000) + b'{"messages": [')
            time.sleep(0.1)
            sock.close()
        deadline = time.monotonic() + 10
        while sum("disconnected before" in r.getMessage() for r in caplog.records) < 3:
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.05)
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    quiet = [r for r in caplog.records if "disconnected before" in r.getMessage()]
    assert len(quiet) == 3 and all(r.levelno == logging.INFO and r.exc_info is None for r in quiet)
    assert not any("Exception in ASGI application" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records)


def big_history(pairs: int, chars: int) -> list[dict[str, Any]]:
    """One user message, then ``pairs`` read_file calls with ``chars``-character results."""
    messages: list[dict[str, Any]] = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "Fix the failing retry test."}]}
    ]
    for i in range(pairs):
        line = f"line {i}: " + "x" * 60 + "\n"
        output = (line * (chars // len(line) + 1))[:chars]
        call = {"path": f"src/f{i}.py"}
        messages.append(
            {
                "id": f"a{i}",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading file {i}."},
                    {"type": "tool_call", "id": f"c{i}", "name": "read_file", "input": json.dumps(call)},
                    {"type": "tool_result", "id": f"c{i}", "name": "read_file", "output": output},
                ],
            }
        )
        messages[-1]["content"][1]["state"] = "finished"
        messages[-1]["content"][2]["state"] = "success"
    messages.append({"id": "last", "role": "user", "content": [{"type": "text", "text": "go on"}]})
    return messages


class _HeldJudge(LearnedDecisionModel):
    """The shipped judge, held inside its synchronous ``judge`` until the test releases it.

    A stand-in only for a long plan's timing: while it waits it holds its thread as CPU-bound judging
    does, so a server that judged on its event loop could answer nothing meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.judging = threading.Event()
        self.release = threading.Event()

    def judge(self, view: Any) -> Any:
        self.judging.set()
        if not self.release.wait(60):
            raise TimeoutError("the test never released the judge")
        return super().judge(view)


def test_healthz_answers_while_a_multi_megabyte_plan_is_judged() -> None:
    """Before plans left the event loop, a multi-megabyte request held /healthz for as long as it planned.

    Checked without timing: the judge is held mid-plan, and /healthz must answer meanwhile."""
    body = json.dumps(
        {
            "messages": big_history(1000, 3000),
            "eligible_tool_names": ["read_file"],
            "goal": "fix the test",
            "options": {"max_transcript_chars": 20_000_000},
        }
    ).encode()
    assert len(body) > 3_000_000
    judge = _HeldJudge()
    with running(model=judge, max_body_bytes=32 << 20) as server:
        result: dict[str, Any] = {}

        def plan() -> None:
            response = httpx.post(
                f"{server.url}/v1/compact_context",
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=300,
            )
            result["reason"] = response.json()["reason"]

        worker = threading.Thread(target=plan)
        worker.start()
        try:
            assert judge.judging.wait(120), "the plan never reached its judge"
            with httpx.Client(timeout=10) as client:
                answers = [client.get(f"{server.url}/healthz").status_code for _ in range(3)]
        finally:
            judge.release.set()
            worker.join()
    assert answers == [200, 200, 200]
    assert result["reason"] == "SHADOW_PROPOSAL"


def test_compressed_bodies_are_read_but_never_inflated_past_the_limit() -> None:
    import gzip

    import zstandard

    body = json.dumps({"scope": {"user_id": "u", "agent_id": "a", "session_id": "s"}}).encode()
    bomb = json.dumps({"goal": " " * 3_000_000}).encode()  # 3 MB that compresses to a few KB
    with running(max_body_bytes=1_000_000) as server:

        def post(content: bytes, encoding: str) -> httpx.Response:
            headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
            return httpx.post(f"{server.url}/v1/compact_context", content=content, headers=headers)

        gz = post(gzip.compress(json.dumps({"messages": [], "eligible_tool_names": ["x"]}).encode()), "gzip")
        assert gz.status_code == 200 and gz.json()["reason"] == "NO_CANDIDATES"
        zs = post(zstandard.ZstdCompressor().compress(body), "zstd")
        assert zs.status_code == 422 and zs.json()["error"]["field"] == "messages"  # read, then judged
        for encoding, packed in (
            ("gzip", gzip.compress(bomb)),
            ("zstd", zstandard.ZstdCompressor().compress(bomb)),
        ):
            assert len(packed) < 100_000
            response = post(packed, encoding)
            assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"
        assert post(b"\x28\xb5\x2f\xfd garbage", "zstd").json()["error"]["code"] == "invalid_encoding"
        assert post(gzip.compress(body)[:-8], "gzip").json()["error"]["code"] == "invalid_encoding"
        refused = post(body, "br")
        assert refused.status_code == 415 and refused.json()["error"]["code"] == "unsupported_encoding"
