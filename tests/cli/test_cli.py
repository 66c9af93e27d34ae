"""The `tracetrim` command: demo, compact, and one clear line for every user mistake."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._histories import tool_history
from tests.conftest import SCENARIOS, load_scenario, require_data
from tracetrim.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_demo_shows_decisions_and_savings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["demo"], capsys)
    assert code == 0
    assert "== payment_retry: DECIDED SHADOW_PROPOSAL ==" in out
    assert "== replication_incident: DECIDED SHADOW_PROPOSAL ==" in out
    assert "p_call" in out and "p_result" in out and "characters:" in out
    assert "read_file" in out and "tool_not_eligible" in out


def test_demo_runs_as_a_module_in_a_fresh_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tracetrim", "demo", "--example", "payment_retry"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "payment_retry" in proc.stdout and proc.stderr == ""


def test_compact_a_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["compact", str(SCENARIOS / "payment_retry.json")], capsys)
    document = json.loads(out)
    assert code == 0 and document["status"] == "DECIDED" and document["reason"] == "SHADOW_PROPOSAL"
    assert document["changed"] is False
    assert (
        len(document["decisions"]) == 19
        and document["stats"]["chars_before"] > document["stats"]["chars_after"]
    )
    assert {d["action"] for d in document["decisions"]} <= {"keep", "drop_result", "drop_call"}


def test_compact_bare_messages_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(tool_history(4))))
    code, out, _ = _run(["compact", "-", "--eligible-tools", "read_file", "--goal", "fix the parser"], capsys)
    assert code == 0 and json.loads(out)["stats"]["candidates"] == 4


def test_compact_enforce_writes_the_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A bundled scenario, on which the embedded model does shorten history (a bare tool_history
    # comes back INCONCLUSIVE, which would never reach the archive).
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    archive = tmp_path / "archive"
    code, out, _ = _run(
        [
            "compact",
            str(SCENARIOS / "payment_retry.json"),
            "--mode",
            "enforce",
            "--archive",
            str(archive),
            *scope,
            "--model-backend",
            "learned",
        ],
        capsys,
    )
    document = json.loads(out)
    assert code == 0 and (document["status"], document["reason"]) == ("DECIDED", "ARCHIVED_PROPOSAL")
    assert document["changed"] is True and len(document["archive_ref"]) == 64
    original = load_scenario("payment_retry")["messages"]
    assert document["messages"] != original
    code, out, _ = _run(["restore", "--archive", str(archive), *scope, document["archive_ref"]], capsys)
    assert code == 0 and json.loads(out) == original


def test_many_files_need_an_output_dir_and_write_one_result_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for n in range(3):
        path = tmp_path / f"h{n}.json"
        path.write_text(json.dumps(tool_history(3 + n)))
        files.append(str(path))
    code, _, err = _run(["compact", *files, "--eligible-tools", "read_file"], capsys)
    assert code == 2 and "--output-dir" in err
    out_dir = tmp_path / "out"
    code, out, err = _run(
        ["compact", *files, "--eligible-tools", "read_file", "--output-dir", str(out_dir)], capsys
    )
    # One summary line on stdout; no progress bar, since captured stderr is not a terminal.
    assert code == 0 and out.strip().startswith("3 plans:") and "3/3" not in err
    assert sorted(p.name for p in out_dir.iterdir()) == ["h0.json", "h1.json", "h2.json"]


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (None, ["compact", "missing.json"], "missing.json: no such file"),
        ("{not json", ["compact", "{file}"], "not valid JSON (line 1"),
        ('{"messages": 3}', ["compact", "{file}"], "expected a list of messages"),
        ("[]", ["compact", "{file}"], "no eligible tools"),
        ("[]", ["compact", "{file}", "--eligible-tools", "x", "--keep-threshold", "2"], "keep_threshold"),
        ('{"messages": [], "options": {"bogus": 1}}', ["compact", "{file}"], "unknown option(s) bogus"),
        ("[]", ["compact", "{file}", "--eligible-tools", "x", "--mode", "enforce"], "needs --archive"),
        (
            "[]",
            ["compact", "{file}", "--eligible-tools", "x", "--model-api-key-env", "NOPE_NOT_SET"],
            "NOPE_NOT_SET is not set",
        ),
    ],
)
def test_user_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str | None, args: list[str], message: str
) -> None:
    path = tmp_path / "input.json"
    if setup is not None:
        path.write_text(setup)
    code, _, err = _run([a.replace("{file}", str(path)) for a in args], capsys)
    assert code == 2
    # `--format auto` (the default) says on stderr which format it read; the error is then one line
    errors = [line for line in err.splitlines() if "(--format auto)" not in line]
    assert message in err and len(errors) == 1 and "Traceback" not in err


def test_invalid_history_is_reported_as_an_error_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"role": "user", "content": "not a list"}]))
    # (told by shape this is OpenAI chat; declared neutral, it is an invalid neutral history)
    code, out, _ = _run(
        ["compact", str(path), "--format", "neutral", "--eligible-tools", "read_file"], capsys
    )
    document: dict[str, Any] = json.loads(out)
    assert code == 1 and document["reason"] == "INVALID_TRANSCRIPT" and "message 0" in document["detail"]


@pytest.mark.data
def test_bundled_examples_match_the_shared_scenarios() -> None:
    shared = SCENARIOS.parents[2] / "shared" / "scenarios"
    require_data(shared)
    for name in ("payment_retry", "replication_incident"):
        assert load_scenario(name) == json.loads((shared / f"{name}.json").read_text())


@pytest.mark.data
def test_compact_openai_chat_messages_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real tau-bench trajectory (OpenAI chat-completions) compacts and comes back in the same format."""
    from tests.conftest import DATA, require_data

    trajectories = json.loads(require_data(DATA / "tau-bench" / "gpt-4o-airline.json").read_text())
    messages = max((t["traj"] for t in trajectories), key=len)
    path = tmp_path / "openai.json"
    path.write_text(json.dumps(messages))
    tools = {c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    code, out, _ = _run(
        [
            "compact",
            str(path),
            "--format",
            "openai",
            "--eligible-tools",
            ",".join(sorted(tools)),
            "--goal",
            "help the customer",
            "--keep-threshold",
            "0.99",
            "--preserve-recent",
            "2",
        ],
        capsys,
    )
    document = json.loads(out)
    assert code == 0 and document["status"] == "DECIDED" and document["changed"] is False
    returned = document["proposal"]  # SHADOW: `messages` is what was sent, the candidate is `proposal`
    assert all("role" in m and "content" in m for m in returned) and "metadata" not in returned[0]
    calls = [c["id"] for m in returned for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in returned if m["role"] == "tool"]
    assert sorted(calls) == sorted(results), "every call keeps its result and the reverse"
    dropped = {d["call_id"] for d in document["decisions"] if d["action"] == "drop_call"}
    assert dropped and not dropped & set(calls)
    assert [m["content"] for m in returned if m["role"] == "user"] == [
        m["content"] for m in messages if m["role"] == "user"
    ]


def test_compact_refuses_malformed_openai_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"role": "tool", "content": "x"}]))
    code, _, err = _run(["compact", str(path), "--format", "openai", "--eligible-tools", "x"], capsys)
    assert code == 2 and "not valid openai messages" in err and err.count("\n") == 1
