"""The library never prints: its log lines go to the standard `logging` logger "tracetrim" only."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._decision_servers import SystemOneStandIn
from tests.conftest import SCENARIOS
from tracetrim._logging import LOGGER_NAME, get_logger
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._protocol import BinaryQuestion
from tracetrim.decision._systemone import SystemOneModel

KEY = "ts-logging-secret-key"
ROOT = Path(__file__).resolve().parent.parent


def test_compact_with_a_busy_model_server_prints_pure_json(tmp_path: Path) -> None:
    # A fresh process, as a user runs it: nothing configures logging or structlog beforehand.
    # The first round's head-only cuts, so the proposal clears minimum_reduction as it did then.
    scenario = json.loads((SCENARIOS / "payment_retry.json").read_text(encoding="utf-8"))
    scenario["options"] = {**scenario.get("options", {}), "excerpt_chars": 0}
    request_file = tmp_path / "payment_retry.json"
    request_file.write_text(json.dumps(scenario), encoding="utf-8")
    with SystemOneStandIn(key=KEY, busy_first=1) as server:
        env = {
            **os.environ,
            "DECISION_MODEL_API_KEY": KEY,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tracetrim",
                "compact",
                str(request_file),
                "--model-backend",
                "systemone",
                "--model-base-url",
                server.url,
                "--format",
                "neutral",  # an explicit format: --format auto says on stderr which one it chose
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,  # no stray ./.env
            env=env,
        )
        statuses = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["status"] == "DECIDED", document.get("detail")
    assert statuses >= 2  # the 429 was answered and retried
    assert proc.stderr == ""


async def test_retries_are_logged_to_the_tracetrim_logger(caplog: pytest.LogCaptureFixture) -> None:
    fast = RetryPolicy(max_retries=2, backoff_initial_s=0.001, backoff_max_s=0.01)
    with SystemOneStandIn(key=KEY, busy_first=1) as server, caplog.at_level(logging.INFO, LOGGER_NAME):
        model = SystemOneModel(api_key=KEY, base_url=server.url, retry=fast)
        response = await model({"goal": "g"}, {"q": BinaryQuestion("still needed?")})
        await model.aclose()
    assert response.metadata["retries"] == 1
    retries = [r for r in caplog.records if "decision_request_retry" in r.getMessage()]
    assert len(retries) == 1 and retries[0].name.startswith(LOGGER_NAME + ".")
    assert json.loads(retries[0].getMessage())["problem"].startswith("HTTP 429")


def test_unconfigured_warnings_reach_no_stream(capsys: pytest.CaptureFixture[str]) -> None:
    # Without a handler anywhere, logging's last-resort handler would print warnings to stderr.
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        get_logger(LOGGER_NAME + ".test").warning("tracetrim.test_warning", detail="x")
        logging.getLogger(LOGGER_NAME + ".service").error("plain stdlib record")
    finally:
        root.handlers[:] = saved
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_loggers_must_live_under_tracetrim() -> None:
    with pytest.raises(ValueError, match="tracetrim"):
        get_logger("somewhere.else")
