"""A key inside a URL never shows (issue 35, item 7): not in reprs, log lines, errors or plan records.

The decision model's base URL carries the key twice, as user-info and as a query value, the way
``DECISION_MODEL_BASE_URL=https://user:KEY@host/v1?api_key=KEY`` would. The model talks to a real
local server (which must receive the key: the request still has to authenticate), every log record
of every logger is captured at DEBUG, and every text a user could see is grepped for the key.
"""

from __future__ import annotations

import base64
import http.server
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest

import tracetrim as tt
from tests._hang_guard import finishes
from tests.conftest import load_scenario
from tracetrim._logging import redact_url, redact_urls
from tracetrim.archive import ArchiveError, open_archive
from tracetrim.cli import main
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._http import JsonClient, RetryPolicy
from tracetrim.decision._protocol import BinaryQuestion, DecisionModelError
from tracetrim.decision._systemone import SystemOneModel

PASSWORD = "pw-7f3a9c1e5b2d4f60"
QUERY_KEY = "qk-0e1d2c3b4a5f6e7d"
FAST = RetryPolicy(max_retries=2, backoff_initial_s=0.001, backoff_max_s=0.002)
QUESTIONS = {"q": BinaryQuestion("still needed?")}


def _assert_hidden(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and QUERY_KEY not in text, text


class RecordingServer:
    """A real HTTP server on 127.0.0.1 playing back ``(status, body)`` replies; records path and headers."""

    def __init__(self, *replies: tuple[int, Any]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, str]]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, payload = owner.replies.pop(0) if owner.replies else (599, "script exhausted")
                body = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def base_url(self, port: int | None = None) -> str:
        """The server's base URL with the key as user-info and as a query value."""
        return f"http://user:{PASSWORD}@127.0.0.1:{port or self.port}/v1?api_key={QUERY_KEY}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def every_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of every logger (httpx's and httpcore's included) at DEBUG."""
    with caplog.at_level(logging.DEBUG):
        for name in ("httpx", "httpcore", "tracetrim"):
            logging.getLogger(name).setLevel(logging.DEBUG)
        try:
            yield caplog
        finally:
            for name in ("httpx", "httpcore", "tracetrim"):
                logging.getLogger(name).setLevel(logging.NOTSET)


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records] + [caplog.text]


def test_redact_url_blanks_user_info_query_values_and_fragment() -> None:
    url = f"https://user:{PASSWORD}@host:8443/v1?api_key={QUERY_KEY}&v=2#{QUERY_KEY}"
    assert redact_url(url) == "https://***@host:8443/v1?api_key=***&v=***#***"
    assert redact_url(f"https://{PASSWORD}@host") == "https://***@host"
    assert redact_url(f"redis:/u:{PASSWORD}@h:6379") == "redis:/***@h:6379"  # one slash: a typo
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url("/var/archive") == "/var/archive"
    text = f"POST {url} failed; see 'https://{PASSWORD}@h/x'"
    assert (
        redact_urls(text)
        == "POST https://***@host:8443/v1?api_key=***&v=***#*** failed; see 'https://***@h/x'"
    )


def test_urls_are_found_after_any_run_of_scheme_characters_and_in_one_pass() -> None:
    """A server may echo anything: "a.a.a..." (each letter a word start) was once read from every
    letter to its end before each "://" (a hundred kilobytes took seconds, a megabyte minutes)."""
    assert redact_urls(f"{'a' * 100}https://u:{PASSWORD}@h/x") == f"{'a' * 100}https://***@h/x"
    assert redact_urls(f"_https://u:{PASSWORD}@h") == "_https://***@h"
    assert redact_urls("é.https://h?k=1 and 1http://h?k=2") == "é.https://h?k=*** and 1http://h?k=***"
    finishes(
        "from tracetrim._logging import redact_urls\n"
        "text = 'a.' * 1_000_000 + 'https://u:secret-password@h'\n"
        "assert redact_urls(text) == 'a.' * 1_000_000 + 'https://***@h'\n"
    )


async def test_a_key_in_the_base_url_is_sent_but_never_shown(every_log: pytest.LogCaptureFixture) -> None:
    answer = {"answers": {"q": {"type": "noul", "noul": 0.25}}, "model": "m"}
    with RecordingServer((503, f"busy, {PASSWORD} {QUERY_KEY}"), (200, answer)) as server:
        model = SystemOneModel(api_key="header-key-0123", base_url=server.base_url(), retry=FAST)
        response = await model({"goal": "g"}, QUESTIONS)
        await model.aclose()
    assert response.answers == {"q": 0.25} and response.metadata["retries"] == 1
    # The key still reaches the server: as the query the base URL carries, and as Basic auth.
    [(path, headers), _] = server.requests
    assert path == f"/v1/systemone?api_key={QUERY_KEY}"
    assert headers["authorization"] == "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    lines = _logged(every_log)
    assert any("HTTP Request: POST http://***@127.0.0.1" in line for line in lines)  # httpx's own line
    assert any("decision_request_retry" in line for line in lines)
    _assert_hidden(*lines, repr(model), str(model), repr(model._http))
    assert "http://***@127.0.0.1" in repr(model)


async def test_errors_never_show_the_key(every_log: pytest.LogCaptureFixture) -> None:
    with RecordingServer((401, f"bad credentials for {PASSWORD}?api_key={QUERY_KEY}")) as server:
        model = SystemOneModel(base_url=server.base_url(), retry=FAST)
        with pytest.raises(DecisionModelError) as refused:
            await model({"goal": "g"}, QUESTIONS)
        await model.aclose()
        port = server.port
    assert "authentication failed" in str(refused.value)
    # Nothing listens there any more: each attempt is a transport error, logged and then reported.
    client = JsonClient(server.base_url(port), None, retry=FAST)
    with pytest.raises(DecisionModelError) as unreachable:
        await client.post("/v1/x", {})
    await client.aclose()
    assert "failed after 3 attempts" in str(unreachable.value)
    with pytest.raises(ValueError) as malformed:
        ChatLogprobsModel(f"ftp://user:{PASSWORD}@h/?api_key={QUERY_KEY}", "m")
    assert "must start with http://" in str(malformed.value)
    _assert_hidden(str(refused.value), str(unreachable.value), str(malformed.value), *_logged(every_log))


def test_from_env_model_repr_hides_the_key() -> None:
    url = f"https://user:{PASSWORD}@api.example/v1?api_key={QUERY_KEY}"
    for backend in ("systemone", "openai", "chat"):
        env = {"DECISION_MODEL_BACKEND": backend, "DECISION_MODEL_BASE_URL": url, "DECISION_MODEL_NAME": "m"}
        model = tt.decision.from_env(env)
        _assert_hidden(repr(model), str(model))
        assert "https://***@api.example?api_key=***" in repr(model)


async def test_plan_outcomes_and_records_never_show_the_key(tmp_path: Path) -> None:
    scenario = load_scenario("payment_retry")
    records: list[Any] = []
    with RecordingServer(*[(500, f"echo {PASSWORD} {QUERY_KEY}")] * 20) as server:
        model = SystemOneModel(base_url=server.base_url(), retry=FAST)
        compactor = tt.Compactor(
            model,
            config=tt.CompactorConfig(eligible_tools=scenario["eligible_tool_names"], minimum_reduction=0.0),
            execution=tt.ExecutionOptions(observer=records.append),
        )
        outcome = await compactor.plan(tt.CompactionRequest(scenario["messages"], goal=scenario["goal"]))
        await model.aclose()
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "MODEL_ERROR")
    assert records
    _assert_hidden(outcome.detail, repr(outcome), *(repr(record) for record in records))


@pytest.mark.parametrize(
    "url",
    [
        f"redis:/user:{PASSWORD}@127.0.0.1:6379/0",  # one slash
        f"postgresql:user:{PASSWORD}@127.0.0.1/db",  # no slashes
        f"mongodb://user:{PASSWORD}@127.0.0.1/db?key={QUERY_KEY}",  # unknown scheme
    ],
)
def test_archive_url_errors_hide_the_password(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ArchiveError) as refused:
        open_archive(url)
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    assert main(["restore", "--archive", url, *scope, "0" * 64]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracetrim: error: --archive: archive URL") and err.count("\n") == 1
    _assert_hidden(str(refused.value), err)
