"""`examples/shadow_audit.py`: every field of a history file is honoured, and the figures match the demo."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO, load_scenario
from tracetrim.audit._observer import read_audit
from tracetrim.cli._demo import plan_example


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shadow_audit", REPO / "examples" / "shadow_audit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(tmp_path: Path, histories: list[dict[str, Any]] | None = None) -> tuple[list[Any], list[Any]]:
    """Run the example in ``tmp_path`` on ``histories`` (the bundled ones when None): records, follow-ups."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "records.jsonl"
    paths = []
    for n, history in enumerate(histories or []):
        path = tmp_path / f"history-{n}.json"
        path.write_text(json.dumps(history))
        paths.append(str(path))
    asyncio.run(example().main(out, paths))
    found = read_audit(out.read_text().splitlines())
    assert not found.junk
    return list(found.records), list(found.followups)


def pairs_by_call(record: Any) -> dict[str, Any]:
    return {pair.call_id: pair for pair in record.pairs}


def test_bundled_examples_match_the_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records, followups = run(tmp_path)
    out = capsys.readouterr().out
    for name, record in zip(("payment_retry", "replication_incident"), records, strict=True):
        _, outcome = asyncio.run(plan_example(name))
        assert outcome.plan is not None
        assert record.chars_after == outcome.plan.stats.chars_after
        # the example prints its record's reduction, which records round to four places
        assert record.reduction == pytest.approx(outcome.plan.stats.reduction, abs=5e-5)
        assert f"{name}: DECIDED/SHADOW_PROPOSAL, would save {record.reduction:.1%}" in out
        assert record.scope["session_id"] == name
        scenario = load_scenario(name)
        wanted = sorted(scenario["labels"]["critical"] + scenario["labels"]["needed"])
        assert sorted(f.call_id for f in followups if f.scope == record.scope) == wanted
        for call_id in scenario["protected_call_ids"]:
            assert pairs_by_call(record)[call_id].action == "keep"
    assert "must_contain 6/6" in out and "must_contain 7/7" in out


def test_protected_ids_and_options_are_honoured(tmp_path: Path) -> None:
    base = load_scenario("payment_retry")
    (plain,), _ = run(tmp_path / "plain", [base])
    dropped = [p.call_id for p in plain.pairs if p.action != "keep"]
    assert len(dropped) >= 2
    first, second = dropped[:2]
    message_of = {
        block["id"]: message["id"]
        for message in base["messages"]
        for block in message["content"]
        if block["type"] == "tool_call"
    }
    changed = copy.deepcopy(base)
    changed["protected_call_ids"] = [*base["protected_call_ids"], first]
    changed["protected_message_ids"] = [*base["protected_message_ids"], message_of[second]]
    (protected,), _ = run(tmp_path / "protected", [changed])
    pairs = pairs_by_call(protected)
    assert pairs[first].action == "keep" and pairs[second].action == "keep"
    assert protected.protected > plain.protected and protected.chars_after > plain.chars_after

    wide = copy.deepcopy(base)
    wide["options"] = {"preserve_recent_messages": len(base["messages"])}  # everything is recent
    (recent,), _ = run(tmp_path / "wide", [wide])
    assert recent.candidates == 0 and recent.status == "SKIPPED"

    named = copy.deepcopy(base) | {"name": "renamed-session"}
    (record,), _ = run(tmp_path / "named", [named])
    assert record.scope["session_id"] == "renamed-session"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"protected_calls": ["c1"]}, "unknown field(s) protected_calls"),
        ({"options": {"keep_threshold": 0.5, "no_such_option": 1}}, "no_such_option are not CompactorConfig"),
        ({"options": {"keep_threshold": 2.0}}, "bad options"),
        ({"protected_call_ids": "c1"}, "'protected_call_ids' must be a list of strings"),
        ({"must_contain": [1]}, "'must_contain' must be a list of strings"),
    ],
)
def test_bad_fields_are_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    module = example()
    with pytest.raises(module.HistoryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        module.setup("history.json", load_scenario("payment_retry") | change)


def test_real_trajectory_files_in_any_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example reads what `tracetrim compact` reads (the same reader): a SWE-agent ``.traj``, a
    mini-swe-agent ``.traj.json``, an Anthropic request body and, with ``--all``, each item of a list of
    tau-bench items; with no eligible tools named, every tool the history calls is judged."""
    data = REPO / "tests" / "data" / "whole_files"
    items = tmp_path / "tau.json"
    items.write_text(json.dumps([json.loads((data / "task7.tau.json").read_text())] * 2))
    out = tmp_path / "records.jsonl"
    paths = [str(data / name) for name in ("fix.traj", "run.v1.traj.json", "request.anthropic.json")]
    asyncio.run(example().main(out, paths))
    printed = capsys.readouterr()
    asyncio.run(example().main(out, [str(items)], every=True))  # --all, as for `tracetrim compact`
    found = read_audit(out.read_text().splitlines())
    assert not found.junk and not found.followups  # no labels in these formats
    sessions = [(record.scope or {}).get("session_id") for record in found.records]
    assert sessions == ["fix.traj", "run.v1.traj", "request.anthropic", "tau-0", "tau-1"]
    tools = [sorted({pair.tool for pair in record.pairs or ()}) for record in found.records]
    assert tools[0] == ["cat", "grep", "ls", "python", "submit"] and tools[1] == ["bash"]
    assert tools[3] == ["get_order_details"]
    assert "3 histories from 3 files read as anthropic (1), mini-swe-agent (1), swe-agent (1)" in printed.err


def test_help_and_a_list_without_all(tmp_path: Path) -> None:
    script = str(REPO / "examples" / "shadow_audit.py")
    done = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, check=False)
    assert (
        done.returncode == 0 and "usage: shadow_audit.py" in done.stdout and "--eligible-tools" in done.stdout
    )
    items = tmp_path / "tau.json"
    items.write_text(
        json.dumps([json.loads((REPO / "tests/data/whole_files/task7.tau.json").read_text())] * 2)
    )
    done = subprocess.run(
        [sys.executable, script, str(tmp_path / "r.jsonl"), str(items)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "--item N (0..1)" in done.stderr and "Traceback" not in done.stderr
