"""`tracetrim replay`: files of any format in, the table out, JSON and HTML written, mistakes as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._replay_runs import lookup_run
from tests.conftest import DATA, REPO, require_data
from tracetrim.cli import main

SHAPES = REPO / "tests" / "data"


def _neutral(tmp_path: Path, name: str = "lookups.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"messages": lookup_run().messages}), encoding="utf-8")
    return path


def test_replay_prints_the_tables_and_writes_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    code = main(
        [
            "replay",
            str(_neutral(tmp_path)),
            str(SHAPES / "whole_files" / "run.v1.traj.json"),
            str(SHAPES / "whole_files" / "task7.tau.json"),
            "--trigger-tokens", "1500", "--target-tokens", "1000",
            "--strategies", "none,mask,anthropic,threshold,budget",
            "--mask-keep", "2", "--baseline-trigger", "1500", "--without-tombstones",
            "--json", str(out_json), "--html", str(out_html),
        ]
    )  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert "3 histories from 3 files read as mini-swe-agent (1), neutral (1), tau-bench (1)" in shown.err
    assert "all runs: 3 runs" in shown.out and "host rule: over 1,500 tokens, down to 1,000" in shown.out
    for name in (
        "none",
        "keep-last-2",
        "anthropic clear_tool_uses",
        "tracetrim threshold without tombstones",
    ):
        assert f"\n{name} " in shown.out
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert [s["name"] for s in report["strategies"]] == [
        "none", "keep-last-2", "anthropic clear_tool_uses", "tracetrim threshold", "tracetrim budget",
        "tracetrim threshold without tombstones", "tracetrim budget without tombstones",
    ]  # fmt: skip
    assert report["prices"] == {"name": "anthropic", "read": 0.1, "write": 1.25}
    assert len(report["runs"]) == 3 * 7 and {r["dataset"] for r in report["runs"]} == {
        "neutral", "mini-swe-agent", "tau-bench"
    }  # fmt: skip
    anthropic = next(s for s in report["strategies"] if s["name"] == "anthropic clear_tool_uses")
    assert "trigger 1,500 input tokens" in anthropic["models"]
    totals = [t for t in report["totals"] if t["dataset"] == "all"]
    assert [t["strategy"] for t in totals] == [s["name"] for s in report["strategies"]]
    assert out_html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_folder_is_every_history_in_it_and_the_cache_prices_can_be_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    _neutral(folder, "a.json")
    _neutral(folder, "b.json")
    (folder / "notes.json").write_text('{"not": "a history"}', encoding="utf-8")
    out = tmp_path / "r.json"
    code = main(
        ["replay", str(folder), "--every", "3", "--strategies", "none,mask", "--cache", "openai",
         "--cache-read", "0.25", "--json", str(out)]
    )  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert "skipped" in shown.err and "notes.json" in shown.err
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["prices"] == {"name": "custom", "read": 0.25, "write": 1.0}
    assert report["host"] == {"trigger_tokens": None, "target_tokens": None, "every_steps": 3}
    assert {r["run"] for r in report["runs"]} == {str(folder / "a.json"), str(folder / "b.json")}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--target-tokens", "10"], "--target-tokens needs --trigger-tokens"),
        (["--trigger-tokens", "10", "--target-tokens", "20"], "target_tokens (20) must be below"),
        (["--trigger-tokens", "10", "--context-window", "100"], "not both"),
        (["--strategies", "none,magic"], "unknown strategy magic"),
        (["--strategies", "none,none"], "names a strategy twice"),
    ],
)
def test_mistakes_are_one_line_and_a_non_zero_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    assert main(["replay", str(_neutral(tmp_path)), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracetrim: error: ") and error in err and "Traceback" not in err


def test_a_missing_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "absent.json")]) == 2
    assert "absent.json: no such file or folder" in capsys.readouterr().err


@pytest.mark.data
def test_replay_reads_every_shared_dataset_with_the_readers_compact_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mini = sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))[:2]
    swe = sorted(require_data(DATA / "swe-agent").glob("*.traj"))[:2]
    tau = require_data(DATA / "tau-bench" / "gpt-4o-airline.json")
    out = tmp_path / "r.json"
    code = main(
        ["replay", *map(str, mini + swe), str(tau), "--context-window", "16000", "--baseline-trigger", "9600",
         "--without-tombstones", "--json", str(out)]
    )  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    report = json.loads(out.read_text(encoding="utf-8"))
    datasets = {r["dataset"] for r in report["runs"]}
    assert datasets == {"mini-swe-agent", "swe-agent", "tau-bench"}
    assert len({r["run"] for r in report["runs"]}) == 2 + 2 + 200
    by = {t["strategy"]: t for t in report["totals"] if t["dataset"] == "all"}
    assert by["tracetrim threshold"]["compactions"] > 0 and by["tracetrim threshold"]["plans"] > 0
    assert by["none"]["billed_tokens"] > by["tracetrim threshold"]["billed_tokens"]
    # With tombstones (the default) every removal leaves a pointer: nothing later used is lost silently.
    assert by["tracetrim threshold"]["silent"] == by["tracetrim budget"]["silent"] == 0


def test_replay_walks_the_variants_and_gates_with_the_cache_prices_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "r.json"
    code = main(
        [
            "replay", str(_neutral(tmp_path)), "--trigger-tokens", "1500", "--target-tokens", "300",
            "--strategies", "budget,budget-target-or-nothing,threshold-cache-gate,budget-cache-gate",
            "--cache", "openai", "--json", str(out_json),
        ]
    )  # fmt: skip
    shown = capsys.readouterr()
    assert code == 0, shown.err
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert [s["name"] for s in report["strategies"]] == [
        "tracetrim budget", "tracetrim budget, target or nothing", "tracetrim threshold, cache gate 0.5/1",
        "tracetrim budget, cache gate 0.5/1",
    ]  # fmt: skip
    gated = [s for s in report["strategies"] if "cache gate" in s["name"]]
    assert all("cache_prices=(0.5, 1.0)" in s["models"] for s in gated)
    strict = next(r for r in report["runs"] if r["strategy"] == "tracetrim budget, target or nothing")
    assert "TARGET_NOT_REACHED" in strict["reasons"] and strict["compactions"] == 0


AGENT_FILES = sorted(p for p in (SHAPES / "agents").iterdir() if p.name != "README.md")
"""Files the agents themselves wrote, one per format they keep (tests/data/agents/README.md)."""


def test_replay_walks_the_files_every_agent_writes_and_tracetrim_never_loses_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every agent's own file replays under its own reader (a window small enough that the planners
    fire), and what a tracetrim strategy's prompts lacked later is recallable, never silent."""
    compacted: set[str] = set()
    for path in AGENT_FILES:
        out = tmp_path / f"{path.name}.json"
        code = main(
            ["replay", str(path), "--context-window", "2000", "--strategies", "none,threshold,budget,offload",
             "--json", str(out)]
        )  # fmt: skip
        shown = capsys.readouterr()
        assert code == 0, f"{path.name}: {shown.err}"
        report = json.loads(out.read_text(encoding="utf-8"))
        assert report["runs"], path.name
        for total in report["totals"]:
            if total["strategy"] != "none":
                assert total["silent"] == 0, (path.name, total)
            if total["compactions"]:
                compacted.add(report["runs"][0]["dataset"])
    # Most of these runs are short; enough of them pass the trigger that the walk compacts files of
    # many formats, the session formats among them.
    assert {"claude-code", "codex", "gemini-cli", "pi", "qwen-code", "openhands-v0"} <= compacted
