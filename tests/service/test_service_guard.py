"""What a web page or a stranger can send is refused first: Host (421), Origin (403), token (401), JSON (415).

Each test talks to a real uvicorn server on a loopback port; the Host and Origin a browser on an
attacker's page would send are set by hand, which is all DNS rebinding changes on the wire.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import load_scenario, service_unavailable
from tracetrim.archive import FileArchive
from tracetrim.cli import main
from tracetrim.decision import LearnedDecisionModel

TOKEN = "guard-token-0123456789abcdef"
SCOPE = {"user_id": "u", "agent_id": "a", "session_id": "s"}


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")


@contextlib.contextmanager
def running(**settings: Any) -> Iterator[str]:
    from tests._asgi import ThreadedServer
    from tracetrim.service import ServiceSettings, create_app

    app = create_app(ServiceSettings(model=LearnedDecisionModel(), **settings))
    with ThreadedServer(app, lifespan="on") as server:
        yield server.url


def enforce_body() -> dict[str, Any]:
    scenario = load_scenario("payment_retry")
    body = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    return body | {"options": {"mode": "enforce", "minimum_reduction": 0.0}, "scope": SCOPE}


def error_of(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code
    return str(error["message"])


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("guard-archive")


@pytest.fixture(scope="module")
def open_url(archive_dir: Path) -> Iterator[str]:
    """Loopback names only, no token, a file archive."""
    with running(archive=FileArchive(archive_dir)) as url:
        yield url


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    with running(token=TOKEN, allowed_hosts=("127.0.0.1", "*.corp.example")) as url:
        yield url


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1.attacker.example", "localhost.evil", ""])
def test_a_foreign_host_is_421_on_every_path(open_url: str, host: str) -> None:
    """DNS rebinding: the page's own name arrives as Host; reads and writes alike are refused."""
    headers = {"Host": host}
    for method, path, body in (
        ("POST", "/v1/archive/list", {"scope": SCOPE}),
        ("POST", "/v1/restore", {"scope": SCOPE, "archive_ref": "0" * 64}),
        ("POST", "/v1/compact_context", enforce_body()),
        ("POST", "/compact_context", enforce_body()),
        ("POST", "/v1/systemone", {}),
        ("GET", "/healthz", None),
    ):
        response = httpx.request(method, f"{open_url}{path}", json=body, headers=headers)
        assert response.status_code == 421, (path, response.text)
        text = response.text
        assert host in text or "no Host" in text or '""' in text or "''" in text


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST.", "localhost:9999"])
def test_loopback_names_are_served_by_default(open_url: str, host: str) -> None:
    assert httpx.get(f"{open_url}/healthz", headers={"Host": host}).status_code == 200


def test_configured_names_and_wildcards(token_url: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{token_url}/healthz", headers={"Host": "api.corp.example"}).status_code == 200
    for host in ("corp.example", "localhost", "evilcorp.example"):
        response = httpx.get(f"{token_url}/healthz", headers={"Host": host} | auth)
        assert response.status_code == 421, host
    with running(allowed_hosts=("*",)) as url:
        assert httpx.get(f"{url}/healthz", headers={"Host": "anything.example"}).status_code == 200


def test_a_cross_site_request_is_403_and_writes_nothing(open_url: str, archive_dir: Path) -> None:
    """A page on another site posting to the service: its Origin gives it away."""
    for origin in ("https://attacker.example", "null", "http://localhost.attacker.example"):
        response = httpx.post(
            f"{open_url}/v1/compact_context", json=enforce_body(), headers={"Origin": origin}
        )
        assert origin in error_of(response, 403, "origin_not_allowed")
    assert not any(archive_dir.rglob("*.json"))
    same_machine = httpx.post(
        f"{open_url}/v1/archive/list", json={"scope": SCOPE}, headers={"Origin": "http://localhost:3000"}
    )
    assert same_machine.status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json"],
)
def test_bodies_must_be_json(open_url: str, archive_dir: Path, content_type: str | None) -> None:
    """The content types a browser sends without a CORS preflight are refused before any handler runs."""
    import json

    headers = {"Content-Type": content_type} if content_type else {}
    response = httpx.post(
        f"{open_url}/v1/compact_context", content=json.dumps(enforce_body()), headers=headers
    )
    error_of(response, 415, "unsupported_media_type")
    assert not any(archive_dir.rglob("*.json"))
    charset = httpx.post(
        f"{open_url}/v1/archive/list",
        content=json.dumps({"scope": SCOPE}),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert charset.status_code == 200


def test_the_bearer_token_guards_everything_but_healthz(token_url: str) -> None:
    body = {"messages": [], "eligible_tool_names": ["x"]}
    missing = httpx.post(f"{token_url}/v1/compact_context", json=body)
    error_of(missing, 401, "missing_token")
    assert missing.headers["www-authenticate"].startswith("Bearer")
    for value in (f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
        wrong = httpx.post(f"{token_url}/v1/compact_context", json=body, headers={"Authorization": value})
        error_of(wrong, 401, "invalid_token")
    for path in ("/compact_context", "/v1/archive/list", "/restore"):
        assert httpx.post(f"{token_url}{path}", json={}).status_code == 401
    good = httpx.post(
        f"{token_url}/v1/compact_context", json=body, headers={"Authorization": f"bearer {TOKEN}"}
    )
    assert good.status_code == 200 and good.json()["reason"] == "NO_CANDIDATES"
    assert httpx.get(f"{token_url}/healthz").json()["status"] == "ok"


def test_settings_refuse_weak_tokens_and_bad_host_lists() -> None:
    from tracetrim.service import ServiceSettings

    with pytest.raises(ValueError, match="at least 16"):
        ServiceSettings(token="short")
    with pytest.raises(ValueError, match="16 characters without spaces"):
        ServiceSettings(token="a token with spaces in it")
    with pytest.raises(TypeError, match="not one string"):
        ServiceSettings(allowed_hosts="localhost")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a host name"):
        ServiceSettings(allowed_hosts=("http://x.example/",))
    assert "guard-token" not in repr(ServiceSettings(token=TOKEN))


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--host", "0.0.0.0"], "bearer token"),
        (["--host", "10.1.2.3"], "bearer token"),
        (["--host", "0.0.0.0", "--token", TOKEN], "--allowed-host"),
        (["--token", "short"], "at least 16"),
        (["--archive", "bogus://x"], "unknown scheme"),
        (["--archive", "redis:/x"], "redis://"),
        (["--workers", "2", "--archive", "memory:"], "memory:"),
    ],
)
def test_serve_refuses_unsafe_or_wrong_settings_in_one_line(
    flags: list[str], needle: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACETRIM_API_TOKEN", raising=False)
    assert main(["serve", "--model-backend", "learned", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize(
    ("flags", "hosts"),
    [
        ([], ("localhost", "127.0.0.1", "::1")),
        (["--host", "10.1.2.3", "--token", TOKEN], ("localhost", "127.0.0.1", "::1", "10.1.2.3")),
        (
            [
                "--host",
                "0.0.0.0",
                "--token",
                TOKEN,
                "--allowed-host",
                "API.corp.example",
                "--allowed-host",
                "*.x.io",
            ],
            ("localhost", "127.0.0.1", "::1", "api.corp.example", "*.x.io"),
        ),
    ],
)
def test_serve_flags_make_the_settings(
    flags: list[str], hosts: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracetrim.cli._app import build_parser
    from tracetrim.cli._serve import _settings

    monkeypatch.delenv("TRACETRIM_API_TOKEN", raising=False)
    args = build_parser().parse_args(["serve", "--model-backend", "learned", "--read-timeout", "7", *flags])
    settings = _settings(args)
    assert settings.allowed_hosts == hosts and settings.read_timeout_s == 7.0
    assert settings.token == (TOKEN if "--token" in flags else None)
    monkeypatch.setenv("TRACETRIM_API_TOKEN", TOKEN)
    assert _settings(build_parser().parse_args(["serve", "--model-backend", "learned"])).token == TOKEN


def test_serve_flags_set_the_history_and_per_client_limits() -> None:
    from tracetrim.cli._app import build_parser
    from tracetrim.cli._serve import _limits, _settings
    from tracetrim.service import ServerLimits, ServiceSettings

    flags = ["--max-messages", "900", "--max-blocks", "5000", "--max-idle-per-client", "3"]
    args = build_parser().parse_args(["serve", "--model-backend", "learned", *flags])
    settings, limits = _settings(args), _limits(args)
    assert (settings.max_messages, settings.max_blocks) == (900, 5000)
    assert limits.max_idle_per_client == 3
    assert limits.max_connections_per_client == ServerLimits().max_connections_per_client
    defaults = _settings(build_parser().parse_args(["serve", "--model-backend", "learned"]))
    assert defaults.max_messages == ServiceSettings(model=defaults.model).max_messages
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--max-connections-per-client", "0"])
