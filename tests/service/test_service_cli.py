"""`tracetrim serve`: a real server process, its flags, and a clear exit without the service extra."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._serve import serve_process
from tests.conftest import REPO, load_scenario, service_unavailable
from tracetrim.cli import main

SCOPE = {"user_id": "u", "agent_id": "a", "session_id": "s"}


def _has_service_extra() -> bool:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``python -m tracetrim serve`` with a file archive and a 200,000-byte body limit."""
    if not _has_service_extra():
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")
    archive = tmp_path / "archive"
    flags = ("--archive", str(archive), "--max-body-bytes", "200000", "--model-backend", "learned")
    with serve_process(*flags, "--log-level", "warning", cwd=tmp_path) as (url, _):
        yield url, archive


def test_serve_runs_the_service_with_its_flags(served: tuple[str, Path]) -> None:
    url, archive = served
    health = httpx.get(f"{url}/healthz").json()
    assert health["archive"] is True and health["model"] == "LearnedDecisionModel"
    scenario = load_scenario("payment_retry")
    body: dict[str, Any] = {
        key: scenario[key]
        for key in (
            "messages",
            "goal",
            "next_action",
            "eligible_tool_names",
            "protected_message_ids",
            "options",
        )
    }
    body["options"] = dict(body["options"], mode="enforce")
    body["scope"] = SCOPE
    answer = httpx.post(f"{url}/v1/compact_context", json=body, timeout=30).json()
    assert answer["status"] == "DECIDED" and answer["changed"] is True
    assert any(archive.rglob(f"{answer['archive_ref']}.json"))
    restored = httpx.post(
        f"{url}/v1/restore", json={"scope": SCOPE, "archive_ref": answer["archive_ref"]}
    ).json()
    assert restored["messages"] == scenario["messages"]
    too_big = httpx.post(
        f"{url}/v1/compact_context",
        content=json.dumps({"goal": "x" * 200_001}),
        headers={"Content-Type": "application/json"},
    )
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "body_too_large"


def test_serve_without_the_service_extra_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # makes `import uvicorn` fail
    assert main(["serve"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "install tracetrim[service]" in captured.err


def test_archive_and_redis_url_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--archive", "x", "--redis-url", "redis://127.0.0.1:6379/0"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--port", "0"], ["--port", "70000"], ["--max-body-bytes", "-1"]])
def test_bad_flag_values_are_usage_errors(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *flags])
    assert exited.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_importing_tracetrim_or_its_cli_does_not_import_the_service_stack() -> None:
    code = (
        "import sys, tracetrim, tracetrim.cli; "
        "loaded = sorted(m for m in ('starlette', 'uvicorn', 'tracetrim.service') if m in sys.modules); "
        "print(loaded)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
