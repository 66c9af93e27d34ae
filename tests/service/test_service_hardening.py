"""Hostile load on the service (issue 35): bounded work before limits, errors that always render, strict Host.

Every request goes to a real uvicorn server on a loopback port (`tests._asgi.ThreadedServer`). The
converter is watched by wrapping `HistoryFormat.read`, the one entry every format's reader goes through,
so "refused before conversion" is asserted as "the converter was never called", not by timing.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._service_app import require_service_extra, serving
from tests.conftest import load_scenario
from tracetrim.archive import FileArchive
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HistoryFormat

SCOPE = {"user_id": "u", "agent_id": "a", "session_id": "s"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    require_service_extra()


@contextlib.contextmanager
def running(**settings: Any) -> Iterator[str]:
    """The app with ``settings`` (the learned judge unless given) on a real server; yields its URL."""
    with serving(**settings) as server:
        yield server.url


class Reads:
    """Every call of the converter (`HistoryFormat.read`): the thread it ran in; ``delay_s`` slows it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> None:
        self.threads: list[str] = []
        self._lock = threading.Lock()
        original = HistoryFormat.read

        def read(fmt: HistoryFormat, messages: Sequence[Any], fields: Any = None) -> list[Any]:
            with self._lock:
                self.threads.append(threading.current_thread().name)
            time.sleep(delay_s)
            return original(fmt, messages, fields)

        monkeypatch.setattr(HistoryFormat, "read", read)


def scenario_body(**changes: Any) -> dict[str, Any]:
    """payment_retry as a `POST /v1/compact_context` (or ReMe) body."""
    scenario = load_scenario("payment_retry")
    body = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    return body | changes


def tiny_messages_body(count: int) -> bytes:
    """``count`` one-line OpenAI chat messages: the most messages a body of its size can carry."""
    one = b'{"role":"user","content":"x"}'
    head = b'{"format":"openai","eligible_tool_names":["read_file"],"messages":['
    return head + b",".join([one] * count) + b"]}"


# --- 1. limits before work, work in the pool and under the deadline -----------------------------------


@pytest.mark.parametrize("path", ["/v1/compact_context", "/compact_context"])
def test_a_body_of_250000_tiny_messages_is_refused_before_any_conversion(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """7.5 MB, under the 8 MiB body limit: it used to be converted and validated for seconds (11.7 s
    on the attacker's machine) before the planner's size limit refused it. Now the message count
    refuses it right after parsing; the bound stated is parse plus count (0.12 s here), asserted
    loosely, while the converter not running at all is asserted exactly."""
    body = tiny_messages_body(250_000)
    from tracetrim.service import DEFAULT_MAX_BODY_BYTES

    assert 7_000_000 < len(body) < DEFAULT_MAX_BODY_BYTES
    reads = Reads(monkeypatch)
    with running() as url:
        started = time.perf_counter()
        response = httpx.post(f"{url}{path}", content=body, headers=JSON, timeout=60)
        elapsed = time.perf_counter() - started
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "transcript_too_large" and error["field"] == "messages"
    assert "250,000" in error["message"] and "50,000" in error["message"]
    assert reads.threads == []  # refused from the count alone
    assert elapsed < 10, elapsed


def test_blocks_are_counted_before_conversion_too(monkeypatch: pytest.MonkeyPatch) -> None:
    block = {"type": "text", "text": "x"}
    messages = [{"id": f"m{i}", "role": "user", "content": [block] * 30} for i in range(40)]
    reads = Reads(monkeypatch)
    with running(max_blocks=1000) as url:
        response = httpx.post(
            f"{url}/v1/compact_context", json={"messages": messages, "eligible_tool_names": ["x"]}
        )
        assert response.status_code == 413 and response.json()["error"]["code"] == "transcript_too_large"
        assert "1,000 blocks" in response.json()["error"]["message"]
        assert reads.threads == []
        small = httpx.post(
            f"{url}/v1/compact_context", json={"messages": messages[:30], "eligible_tool_names": ["x"]}
        )
        assert small.status_code == 200 and reads.threads  # 900 blocks: read as before


def test_conversion_runs_in_a_planning_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Converting is CPU work per message: on the event loop it held every other request (and
    outside the planning pool nothing bounded how many ran at once, nor their memory)."""
    reads = Reads(monkeypatch)
    with running() as url:
        for path in ("/v1/compact_context", "/compact_context"):
            assert httpx.post(f"{url}{path}", json=scenario_body()).status_code == 200
    assert len(reads.threads) == 2
    assert all(name.startswith("tracetrim-plan") for name in reads.threads), reads.threads


def test_conversion_time_comes_out_of_the_request_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A history that takes the whole budget to read is answered TIMEOUT at once, with its own
    messages, and no model is asked: before, the plan got its full budget after the conversion."""
    model = ScriptedDecisionModel({}, default=0.9)
    Reads(monkeypatch, delay_s=1.2)
    body = scenario_body()
    with running(model=model, budget_s=1.0) as url:
        native = httpx.post(f"{url}/v1/compact_context", json=body, timeout=30).json()
        reme = httpx.post(f"{url}/compact_context", json=body, timeout=30).json()
    assert native["status"] == "ERROR" and native["reason"] == "TIMEOUT", native["detail"]
    assert native["messages"] == body["messages"] and native["changed"] is False
    assert "1 s budget" in native["detail"]
    assert reme["success"] is True and reme["answer"]["changed"] is False
    assert reme["metadata"]["outcome"]["reason"] == "TIMEOUT"
    assert model.calls == []


def test_a_request_that_waits_for_a_thread_past_the_deadline_is_503(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With one planning thread held by a slow conversion, the request queued behind it is not
    started late (its client has given up by then): 503 server_busy, and nothing converted for it."""
    reads = Reads(monkeypatch, delay_s=1.5)
    body = scenario_body()
    with running(planning_threads=1, budget_s=1.0) as url:
        answers: list[httpx.Response] = []

        def post() -> None:
            answers.append(httpx.post(f"{url}/v1/compact_context", json=body, timeout=30))

        first = threading.Thread(target=post)
        first.start()
        deadline = time.monotonic() + 10
        while not reads.threads:  # the first request holds the thread
            assert time.monotonic() < deadline
            time.sleep(0.01)
        post()
        first.join()
    busy = [r for r in answers if r.status_code == 503]
    assert len(busy) == 1, [r.text for r in answers]
    assert busy[0].json()["error"]["code"] == "server_busy"
    assert len(reads.threads) == 1


# --- 3. every error renders ---------------------------------------------------------------------------


SURROGATE_BODIES = [
    ("/v1/compact_context", '{"messages": [], "\\ud800": 1}'),
    ("/compact_context", '{"messages": [], "\\ud800": 1}'),
    ("/v1/restore", '{"scope": {"user_id": "u", "agent_id": "a", "session_id": "s"}, "\\udfff": 1}'),
    ("/v1/archive/list", '{"\\ud800x": 1, "scope": {"user_id": "u", "agent_id": "a", "session_id": "s"}}'),
    ("/restore", '{"\\ud800": 1}'),
    ("/archive/list", '{"scope": {"user_id": "\\udc00", "agent_id": "a", "session_id": "s"}}'),
    ("/v1/compact_context", '{"messages": [], "eligible_tool_names": ["\\ud83d"], "goal": "x"}'),
    ("/compact_context", '{"messages": [], "options": {"\\ud800": 1}}'),
]


@pytest.fixture(scope="module")
def archive_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(archive=FileArchive(tmp_path_factory.mktemp("hardening"))) as url:
        yield url


@pytest.mark.parametrize(("path", "text"), SURROGATE_BODIES)
def test_a_lone_surrogate_anywhere_is_a_clear_400(archive_url: str, path: str, text: str) -> None:
    """Used to be HTTP 500 with a traceback: the 422 naming the unknown key could not be encoded."""
    response = httpx.post(f"{archive_url}{path}", content=text.encode("ascii"), headers=JSON)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_json"
    assert "lone UTF-16 surrogate" in error["message"] and "column" in error["message"]


def test_the_jev_endpoint_answers_a_lone_surrogate_in_its_own_shape(archive_url: str) -> None:
    text = b'{"model": "jev-latest", "state": "x", "questions": {"\\ud800": {"instructions": "?"}}}'
    response = httpx.post(f"{archive_url}/v1/systemone", content=text, headers=JSON)
    assert response.status_code == 422, response.text
    assert "surrogate" in response.json()["detail"][0]["msg"]


def test_a_megabyte_key_is_not_echoed_back_whole(archive_url: str) -> None:
    key = "k" * 1_000_000
    for path in ("/v1/compact_context", "/v1/archive/list"):
        response = httpx.post(
            f"{archive_url}{path}", json={"scope": SCOPE, "messages": [], key: 1}, headers=JSON
        )
        assert response.status_code == 422, response.text[:300]
        error = response.json()["error"]
        assert error["code"] == "unknown_field"
        assert len(error["message"]) < 2100 and "more characters" in error["message"]
        assert len(response.content) < 5000


def test_an_api_error_quoting_a_lone_surrogate_renders() -> None:
    """The second line of defence: whatever a message quotes, its answer encodes as UTF-8 JSON."""
    from tracetrim.service import ApiError

    error = ApiError(422, "unknown_field", "unknown field '\ud800'", field="options.\udfff")
    text = json.dumps(error.body(), ensure_ascii=False).encode("utf-8")
    assert b"\\\\ud800" in text and b"\\\\udfff" in text


# --- 5. strict Host -----------------------------------------------------------------------------------


VALID_HOSTS = [
    ("localhost", ("localhost", None)),
    ("localhost.", ("localhost", None)),
    ("LocalHost:9999", ("localhost", 9999)),
    ("127.0.0.1:8080", ("127.0.0.1", 8080)),
    ("[::1]:8080", ("::1", 8080)),
    ("[::1]", ("::1", None)),
    ("[0:0:0:0:0:0:0:1]", ("::1", None)),
    ("api.corp.example", ("api.corp.example", None)),
    ("my_service:80", ("my_service", 80)),
]


def test_host_syntax_is_parsed_into_name_and_port() -> None:
    """What is accepted comes back as the name the allow-list compares (IPv6 compressed, lower
    case, no trailing dot) and its port; what is not, as None (and "" from `host_name`)."""
    from tracetrim.service._guard import host_name, parse_host

    for value, parsed in VALID_HOSTS:
        assert parse_host(value) == parsed, value
        assert host_name(value) == parsed[0], value
    for value in ("", ".", " ", "[]", ":80"):
        assert parse_host(value) is None and host_name(value) == "", value


@pytest.mark.parametrize(
    "value",
    [
        "[::1].evil.example",
        "[::1]evil.example:80",
        "[::1]:",
        "[::1]:80:80",
        "localhost..",
        "localhost.:80.",
        ".localhost",
        "local..host",
        "::1",
        "[127.0.0.1]",
        "[fe80::1%25eth0]",
        "[v1.x]",
        "[::1",
        "localhost:",
        "localhost:0",
        "localhost:65536",
        "localhost:8o",
        "user@localhost",
        "local%68ost",
        "local host",
        "-localhost",
        "\u212aorp.example",
        "a" * 64 + ".example",
    ],
)
def test_invalid_hosts_are_refused(value: str) -> None:
    """Each of these was read as some host name before (most of them as a loopback one)."""
    from tracetrim.service._guard import host_name

    assert host_name(value) == ""


def test_host_and_origin_are_parsed_strictly_by_the_real_app(tmp_path: Path) -> None:
    """Before, the first three were served as ``::1`` and ``localhost``: a page at
    ``[::1].evil.example`` or ``localhost..`` would pass the loopback allow-list."""
    with running() as url:
        for host in ("[::1].evil.example", "[::1]evil.example:80", "localhost.."):
            response = httpx.get(f"{url}/healthz", headers={"Host": host})
            assert response.status_code == 421, (host, response.text)
            assert response.json()["error"]["code"] == "host_not_allowed"
        for host in ("localhost", "localhost.", "127.0.0.1:8080", "[::1]:8080"):
            assert httpx.get(f"{url}/healthz", headers={"Host": host}).status_code == 200, host
        body = {"scope": SCOPE}
        for origin in ("http://[::1].evil.example", "http://localhost..", "http://[::1]evil.example:80"):
            response = httpx.post(f"{url}/v1/archive/list", json=body, headers={"Origin": origin})
            assert response.status_code == 403, (origin, response.text)
        same_machine = httpx.post(
            f"{url}/v1/archive/list", json=body, headers={"Origin": "http://[::1]:3000"}
        )
        assert same_machine.status_code == 409  # past the guard: no archive configured here
