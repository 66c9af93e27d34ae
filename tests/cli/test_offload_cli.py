"""The `tracetrim offload` command, through its own parser (the app adds it to the full CLI)."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS, load_scenario
from tracetrim import Scope
from tracetrim.archive import FileArchive
from tracetrim.cli import _offload
from tracetrim.cli._errors import CliError


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tracetrim")
    _offload.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["offload", *argv])
    code: int = args.handler(args)
    return code


def test_compact_with_an_archive_adopts_and_can_be_restored(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code = _run(
        [
            str(SCENARIOS / "payment_retry.json"),
            "--mode",
            "compact",
            "--trigger-tokens",
            "2000",
            "--max-tool-message-tokens",
            "300",
            "--archive",
            str(tmp_path / "arch"),
            "--user",
            "u",
            "--agent",
            "a",
            "--session",
            "s",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["status"] == "DECIDED" and report["changed"] and len(report["archive_ref"]) == 64
    assert report["stats"]["chars_after"] < report["stats"]["chars_before"]
    assert any(d["action"] == "drop_result" for d in report["decisions"])
    assert "c18" not in {d["call_id"] for d in report["decisions"] if d["action"] != "keep"}  # protected
    archive = FileArchive(tmp_path / "arch")
    restored = asyncio.run(archive.restore(Scope("u", "a", "s"), report["archive_ref"]))
    assert restored == load_scenario("payment_retry")["messages"]


def test_shadow_without_an_archive_and_below_the_trigger(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([str(SCENARIOS / "payment_retry.json"), "--mode", "compact"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reason"] == "BELOW_TRIGGER" and not report["changed"]
    assert report["messages"] == load_scenario("payment_retry")["messages"]
    assert (
        _run(
            [
                str(SCENARIOS / "payment_retry.json"),
                "--mode",
                "compact",
                "--trigger-tokens",
                "100",
                "--max-tool-message-tokens",
                "300",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["reason"] == "SHADOW_PROPOSAL" and not report["changed"]


def test_user_mistakes_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CliError, match=r"missing\.json: no such file"):
        _run([str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CliError, match="not valid JSON"):
        _run([str(bad)])
    for name in ("SUMMARY_MODEL_BASE_URL", "SUMMARY_MODEL_NAME", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CliError, match="summary model"):
        _run([str(SCENARIOS / "payment_retry.json"), "--mode", "auto"])
    with pytest.raises(CliError, match="--user"):
        _run([str(SCENARIOS / "payment_retry.json"), "--mode", "compact", "--archive", str(tmp_path)])


def _offloaded(report: dict[str, object]) -> set[str]:
    decisions = report["decisions"]
    assert isinstance(decisions, list)
    return {d["call_id"] for d in decisions if d["action"] == "drop_result"}


def test_target_tokens_stops_once_reached_and_the_former_flag_is_gone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(SCENARIOS / "payment_retry.json")
    sizes = ["--mode", "compact", "--max-tool-message-tokens", "300"]
    assert _run([path, *sizes, "--trigger-tokens", "2000"]) == 0
    full = json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):  # --max-total-tokens, the former name of --trigger-tokens, retired
        _run([path, *sizes, "--max-total-tokens", "2000"])
    capsys.readouterr()
    before = full["stats"]["tokens_before"]
    target = before - (before - full["stats"]["tokens_after"]) // 3
    budget = ["--trigger-tokens", str(before - 1), "--target-tokens", str(target)]
    assert _run([path, *sizes, *budget]) == 0
    report = json.loads(capsys.readouterr().out)
    stats = report["stats"]
    assert stats["target_tokens"] == target and stats["target_met"] and stats["tokens_after"] <= target
    assert 0 < len(_offloaded(report)) < len(_offloaded(full))
    with pytest.raises(CliError, match=r"target_tokens \(3000\) must be below trigger_tokens \(2000\)"):
        _run([path, *sizes, "--trigger-tokens", "2000", "--target-tokens", "3000"])


def _markers(report: dict[str, object]) -> list[str]:
    return re.findall(r"\[tracetrim: the result of [^\]]*\]", json.dumps(report["proposal"]))


def test_excerpt_chars_zero_keeps_head_and_tail_only(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(SCENARIOS / "payment_retry.json")
    sizes = ["--mode", "compact", "--trigger-tokens", "2000", "--max-tool-message-tokens", "300"]
    sizes += ["--preview-chars", "300"]
    assert _run([path, *sizes, "--excerpt-chars", "0"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert _run([path, *sizes]) == 0
    excerpted = json.loads(capsys.readouterr().out)
    assert _offloaded(plain) == _offloaded(excerpted)
    assert _markers(plain) and not any("lines)" in marker for marker in _markers(plain))
    assert any("lines)" in marker for marker in _markers(excerpted))  # "kept N of M lines"
