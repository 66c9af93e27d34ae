"""``tracetrim serve --workers 2`` over one shared archive: any process restores what another archived."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._archive_support import postgres_url
from tests._serve import serve_process
from tests.conftest import load_scenario, service_unavailable


def _redis_url() -> str:
    import redis

    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1.0).ping()
    except (redis.exceptions.ConnectionError, OSError) as exc:
        service_unavailable(f"no Redis on 127.0.0.1:6379 ({exc})")
    return "redis://127.0.0.1:6379/0"


def _archive_url(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'shared.db'}"
    if kind == "redis":
        return _redis_url()
    return asyncio.run(postgres_url())


def enforce_body(scope: dict[str, str]) -> dict[str, Any]:
    scenario = load_scenario("payment_retry")
    body = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    return body | {"options": {"mode": "enforce", "minimum_reduction": 0.0}, "scope": scope}


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgresql"])
def test_two_workers_share_one_archive(kind: str, tmp_path: Path) -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")
    url = _archive_url(kind, tmp_path)
    flags = ("--workers", "2", "--archive", url, "--model-backend", "learned", "--log-level", "warning")
    flags += ("--header-timeout", "1")
    run = uuid.uuid4().hex
    scopes = [{"user_id": f"workers-{run}", "agent_id": "a", "session_id": f"s{i}"} for i in range(8)]
    original = load_scenario("payment_retry")["messages"]
    fresh = httpx.Limits(max_keepalive_connections=0)  # a new connection, so any worker, each time
    with serve_process(*flags, cwd=tmp_path) as (base, _), httpx.Client(limits=fresh, timeout=60) as http:
        pids: set[int] = set()
        deadline = time.monotonic() + 60  # the second process may still be starting
        while len(pids) < 2 and time.monotonic() < deadline:
            pids.add(http.get(f"{base}/healthz").json()["pid"])
            time.sleep(0.02)
        assert len(pids) == 2, pids
        refs = []
        for scope in scopes:
            answer = http.post(f"{base}/v1/compact_context", json=enforce_body(scope)).json()
            assert answer["reason"] == "ARCHIVED_PROPOSAL", answer
            refs.append(answer["archive_ref"])
        for _ in range(3):  # every restore, from whichever process answers, finds every snapshot
            for scope, ref in zip(scopes, refs, strict=True):
                restored = http.post(f"{base}/v1/restore", json={"scope": scope, "archive_ref": ref})
                assert restored.status_code == 200 and restored.json()["messages"] == original
        # the limits reach every process too: a connection that never sends its head is closed
        silent = [socket.create_connection(("127.0.0.1", httpx.URL(base).port or 80)) for _ in range(4)]
        for sock in silent:
            sock.settimeout(15)
            assert sock.recv(1) == b""
            sock.close()
        _cleanup(url, scopes, refs)


def _cleanup(url: str, scopes: list[dict[str, str]], refs: list[str]) -> None:
    from tracetrim import Scope
    from tracetrim.archive import close_archive, open_archive

    async def go() -> None:
        archive = open_archive(url)
        try:
            for scope, ref in zip(scopes, refs, strict=True):
                assert await archive.delete(Scope(**scope), ref)
        finally:
            await close_archive(archive)

    asyncio.run(go())
