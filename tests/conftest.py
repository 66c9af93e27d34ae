"""Shared test helpers: the labelled scenarios, the real trajectories, and optional-service policy."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SCENARIOS = REPO / "tracetrim" / "_examples"
DATA = SHARED / "data"
SHAPES = REPO / "tests" / "data"
"""Small hand-written fixtures in the shapes of the real trajectories (``shape_*``), in every clone."""

DATA_REASON = "needs ../shared/data, the real trajectories; absent in a bare clone"
"""Why a ``data`` test skips: the same words as the marker's description in pyproject.toml."""

_running: list[pytest.Item] = []  # the test being set up, run or torn down (require_data checks its marks)


def load_scenario(name: str) -> dict[str, Any]:
    """One labelled scenario (bundled copy of ../shared/scenarios/NAME.json)."""
    with open(SCENARIOS / f"{name}.json", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


SCENARIO_NAMES = ("payment_retry", "replication_incident")


def in_ci() -> bool:
    """Whether the suite runs in CI (``CI=true``), where nothing it needs may be missing."""
    return os.environ.get("CI", "").lower() == "true"


def service_unavailable(reason: str) -> None:
    """Skip outside CI, fail in CI: an optional service the test needs is not there."""
    if in_ci():
        pytest.fail(f"required service unavailable in CI: {reason}")
    pytest.skip(reason)


def require_module(module: str, install: str) -> None:
    """Skip the test module outside CI, fail it in CI, when the framework ``module`` it drives is not
    installed (``install`` says how to get it)."""
    if importlib.util.find_spec(module) is None:
        if in_ci():
            pytest.fail(f"{module} is required in CI ({install})")
        pytest.skip(f"{module} is not installed ({install})", allow_module_level=True)


def require_data(path: Path) -> Path:
    """``path`` under ../shared, for a test marked ``@pytest.mark.data``.

    Without ../shared/data the test skips (before it starts: see `pytest_collection_modifyitems`). With
    it, a missing path is a failure in CI (the copy there is whole) and a skip elsewhere (a partial
    copy), and a test that is not marked ``data`` fails: unmarked, it would run in a bare clone.
    """
    item = _running[-1] if _running else None
    if item is not None and item.get_closest_marker("data") is None:
        pytest.fail(f"{item.nodeid} reads {path}: mark it @pytest.mark.data ({DATA_REASON})")
    if not DATA.is_dir():
        pytest.skip(DATA_REASON)
    if not path.exists():
        if in_ci():
            pytest.fail(f"{path} is missing from ../shared (CI has the whole copy)")
        pytest.skip(f"{path} is missing from this copy of ../shared")
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every ``data`` test when ../shared/data is absent, whatever ``CI`` says: a bare clone."""
    if DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=DATA_REASON)
    for item in items:
        if item.get_closest_marker("data") is not None:
            # first, so it wins over pytest's own "got empty parameter set" (a glob of the absent folder)
            item.add_marker(skip, append=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Remember which test is running, for `require_data`."""
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.fixture(params=SCENARIO_NAMES)
def scenario(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Each labelled scenario in turn."""
    return load_scenario(request.param)
