"""Plans of the committed fixtures are exactly the recorded ones: actions, probabilities, messages out."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "plan_identity.py"


def _identity() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_identity", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IDENTITY = _identity()
EXPECTED: dict[str, object] = json.loads(IDENTITY.FIXTURE_RECORD.read_text(encoding="utf-8"))
HISTORIES = {name: (messages, tools) for name, messages, tools in IDENTITY.fixture_histories()}


def test_every_recorded_fixture_is_planned() -> None:
    assert sorted(HISTORIES) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_plan_is_the_recorded_one(name: str) -> None:
    messages, tools = HISTORIES[name]
    assert IDENTITY.plan_records(messages, tools) == EXPECTED[name]
