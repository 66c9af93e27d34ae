"""Shared test helpers: the labelled scenarios, the real trajectories, and optional-service policy."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SCENARIOS = REPO / "tracetrim" / "_examples"
DATA = SHARED / "data"


def load_scenario(name: str) -> dict[str, Any]:
    """One labelled scenario (bundled copy of ../shared/scenarios/NAME.json)."""
    with open(SCENARIOS / f"{name}.json", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


SCENARIO_NAMES = ("payment_retry", "replication_incident")


def service_unavailable(reason: str) -> None:
    """Skip outside CI, fail in CI: an optional service the test needs is not there."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"required service unavailable in CI: {reason}")
    pytest.skip(reason)


def require_data(path: Path) -> Path:
    """A file under ../shared/data, or skip/fail as for a missing service."""
    if not path.exists():
        service_unavailable(f"{path} is not present")
    return path


@pytest.fixture(params=SCENARIO_NAMES)
def scenario(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Each labelled scenario in turn."""
    return load_scenario(request.param)
