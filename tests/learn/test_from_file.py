"""`tracetrim.learn.from_file`: `fit` and `replay` read a run file exactly as `compact` reads it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHAPES
from tracetrim._snapshot import validate_messages
from tracetrim._validators import FieldValueError
from tracetrim.cli._formats import to_neutral
from tracetrim.cli._input import read_histories
from tracetrim.formats import trajectory_list
from tracetrim.learn import from_file
from tracetrim.learn._sources import as_seen

FIXTURES = SHAPES
SUFFIXES = {".json", ".jsonl", ".traj"}
RUN_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in SUFFIXES and p.name != "plan_identity.json")


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: p.name)
def test_a_run_file_reads_as_compact_reads_it(path: Path) -> None:
    """Every fixture, JSONL agent sessions and lists of trajectories among them: the same neutral
    messages (system prompts included), format and count as `tracetrim compact --all` sees."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.suffix != ".jsonl" else None
    histories = read_histories(str(path), every=data is not None and trajectory_list(data) is not None)
    runs = from_file(path)
    assert [r.dataset for r in runs] == [h.format for h in histories]
    assert [r.name for r in runs] == [h.source for h in histories]
    for run, history in zip(runs, histories, strict=True):
        assert run.messages == as_seen(validate_messages(to_neutral(history)))


def test_runs_of_two_folders_with_one_file_name_are_two_groups(tmp_path: Path) -> None:
    """Each file is its own held-out group, named by its path: ``a/run.json`` and ``b/run.json`` are
    two runs, never one group a fold would keep together."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(FIXTURES / "agents" / "request_openai.json", tmp_path / folder / "run.json")
    groups = {run.group for folder in ("a", "b") for run in from_file(tmp_path / folder / "run.json")}
    assert len(groups) == 2


def test_eligible_tools_come_from_the_file_then_the_format() -> None:
    (swe,) = from_file(FIXTURES / "whole_files" / "run.v1.traj.json")
    assert swe.tools() == frozenset({"bash"})  # mini-swe-agent's default
    (named,) = from_file(FIXTURES / "agents" / "request_openai.json", eligible_tools=frozenset({"run"}))
    assert named.tools() == frozenset({"run"})


def test_a_file_that_is_no_run_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "resolved.json"
    path.write_text('{"resolved": ["a"]}', encoding="utf-8")
    with pytest.raises(FieldValueError, match=r"resolved\.json: "):
        from_file(path)


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "codex_rollout.jsonl", "tau2_results.json"])
def test_fit_reads_agent_sessions_and_result_lists(name: str, tmp_path: Path) -> None:
    """These fixtures are too short to fit on: fit gets past reading them and says so."""
    path = FIXTURES / "agents" / name
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "fit", str(path), "-o", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "trajectories gave" in done.stderr and "cannot read" not in done.stderr, done.stderr
