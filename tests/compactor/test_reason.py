"""Reason codes are one string enum, `tracetrim.Reason`; JSON still carries the bare code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest

import tracetrim
from tests.conftest import load_scenario
from tracetrim import Compactor, CompactorConfig, ExecutionOptions, Outcome, Reason, Record, Status
from tracetrim._convert import to_json_object
from tracetrim._json import canonical_json
from tracetrim.compactor import CompactionRequest
from tracetrim.decision import LearnedDecisionModel

PACKAGE = Path(tracetrim.__file__).parent


def test_reason_is_exported_and_each_member_is_its_code() -> None:
    assert "Reason" in tracetrim.__all__ and tracetrim.Reason is Reason
    assert len(Reason) >= 20
    for member in Reason:
        assert member == member.value == member.name and str(member) == member.name
        assert isinstance(member, str) and f"{member}" == member.name


def test_outcome_accepts_a_plain_code_and_stores_the_member() -> None:
    outcome = Outcome(status=Status.SKIPPED, reason="DISABLED")
    assert outcome.reason is Reason.DISABLED and outcome.reason == "DISABLED"
    assert Outcome(status=Status.SKIPPED, reason=Reason.NO_CANDIDATES).reason is Reason.NO_CANDIDATES
    with pytest.raises(ValueError):
        Outcome(status=Status.ERROR, reason="NOT_A_REASON")


async def test_plan_outcomes_and_records_carry_the_bare_code_in_json() -> None:
    scenario = load_scenario("payment_retry")
    records: list[Record] = []
    compactor = Compactor(
        LearnedDecisionModel(),
        config=CompactorConfig(eligible_tools=frozenset({"read_file", "grep"})),
        execution=ExecutionOptions(observer=records.append),
    )
    outcome = await compactor.plan(CompactionRequest(messages=scenario["messages"], goal=scenario["goal"]))
    assert type(outcome.reason) is Reason
    for encoded in (
        json.dumps({"reason": outcome.reason}),
        canonical_json({"reason": outcome.reason}),
        orjson.dumps({"reason": outcome.reason}).decode(),
    ):
        assert json.loads(encoded) == {"reason": outcome.reason.value}
    [record] = records
    assert json.loads(canonical_json(to_json_object(record)))["reason"] == outcome.reason.value


def test_the_library_makes_no_outcome_from_a_bare_code() -> None:
    # "ERROR", "CANCELLED", ... are also `Status` values; those are compared as statuses elsewhere.
    # Comparing with a bare code (``outcome.reason == "TIMEOUT"``) is fine: a member equals its code.
    statuses = {status.value for status in Status}
    literal = re.compile(r'"(' + "|".join(m.value for m in Reason if m.value not in statuses) + r')"')
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_outcome.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line) and not re.search(r"[!=]=", line)
    ]
    assert found == []
