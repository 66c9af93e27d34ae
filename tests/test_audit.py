"""Plan records as JSON lines, and `tracetrim audit` summarising them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracetrim as tt
from tests._histories import tool_history
from tracetrim._audit import RecordError, read_records, summarise
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel


async def _plans(path: Path) -> list[tt.Outcome]:
    """Three SHADOW plans (decided, no candidates, failed model) recorded to ``path``."""
    observer = tt.JsonLinesObserver(path)
    execution = tt.ExecutionOptions(mode=tt.Mode.SHADOW, observer=observer)
    config = tt.CompactorConfig(eligible_tools={"read_file"})

    async def broken(state: object, questions: object) -> tt.decision.DecisionResponse:
        raise ConnectionError("server down")

    outcomes = [
        await tt.Compactor(ScriptedDecisionModel({}, default=0.0), config=config, execution=execution).plan(
            tt.CompactionRequest(tool_history(4))
        ),
        await tt.Compactor(ScriptedDecisionModel({}, default=0.0), execution=execution).plan(
            tt.CompactionRequest(tool_history(4))
        ),
        await tt.Compactor(broken, config=config, execution=execution).plan(
            tt.CompactionRequest(tool_history(2))
        ),
    ]
    return outcomes


async def test_records_round_trip_through_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    outcomes = await _plans(path)
    records = read_records(path.read_text().splitlines(), str(path))
    assert [(r.status, r.reason) for r in records] == [(o.status.value, o.reason) for o in outcomes]
    decided = outcomes[0].plan
    assert decided is not None
    assert records[0].chars_after == decided.stats.chars_after and records[0].actions == {"drop_call": 4}


async def test_summary_counts_outcomes_savings_and_failures(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    outcomes = await _plans(path)
    summary = summarise(read_records(path.read_text().splitlines()))
    stats = outcomes[0].plan.stats if outcomes[0].plan else None
    assert stats is not None
    assert summary.plans == 3 and summary.modes == {"shadow": 3}
    assert summary.outcomes == {
        "DECIDED/SHADOW_PROPOSAL": 1,
        "SKIPPED/NO_CANDIDATES": 1,
        "ERROR/MODEL_ERROR": 1,
    }
    assert (summary.decided, summary.chars_before, summary.chars_after) == (
        1,
        stats.chars_before,
        stats.chars_after,
    )
    assert summary.actions == {"drop_call": 4}
    assert "server down" in summary.failures["ERROR/MODEL_ERROR"]


async def test_audit_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    await _plans(path)
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "plans: 3 (shadow 3)" in out and "ERROR/MODEL_ERROR 1" in out and "failure ERROR/MODEL_ERROR" in out
    )
    assert main(["audit", str(path), str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plans"] == 6 and data["decided"] == 2 and 0 < data["reduction"] < 1


@pytest.mark.parametrize(
    ("content", "message"), [("{not json\n", "line 1"), ('\n{"status": "x"}\n', "line 2")]
)
def test_a_bad_line_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(RecordError, match=message):
        read_records(content.splitlines(), "bad.jsonl")
    assert main(["audit", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"bad.jsonl, {message}: not a plan record" in err and err.count("\n") == 1


def test_missing_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "nowhere.jsonl"]) == 2
    assert "nowhere.jsonl: no such file" in capsys.readouterr().err
