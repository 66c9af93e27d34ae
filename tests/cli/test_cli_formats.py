"""`tracetrim compact/offload/restore` on history files of each format, in every format and archive URL.

The files are the small hand-made ones in ``tests/data/whole_files`` (shapes of the real runs) or written
from them; only the SWE-agent function-calling trajectory comes from the shared real runs."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._archive_support import postgres_url, redis_namespace
from tests._provider_rules import check_openai_chat
from tests.conftest import DATA, REPO, SHAPES, require_data
from tracetrim._json import canonical_bytes
from tracetrim._snapshot import validate_messages
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, from_openai_chat

FILES = SHAPES / "whole_files"
SWE_PLAIN = FILES / "fix.traj"
SWE_CALLS = DATA / "swe-agent" / "function_calling_simple.traj"
MINI = FILES / "run.v1.traj.json"
TAU_RUNS = 6


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _tau() -> list[dict[str, Any]]:
    """A tau-bench results list as tau-bench writes it: one item per task (the fixture's, renumbered)."""
    item = json.loads((FILES / "airline.tau.json").read_text(encoding="utf-8"))
    return [{**item, "task_id": n} for n in range(TAU_RUNS)]


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _inputs(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    """One file per format: the fixtures as they are, the others written from the tau-bench run."""
    neutral = from_openai_chat(_tau()[3]["traj"])
    return {
        "tau-bench": (_write(tmp_path / "tau.json", _tau()), ["--item", "3"]),
        "swe-agent": (SWE_PLAIN, []),
        "mini-swe-agent": (MINI, []),
        "openai": (_write(tmp_path / "chat.json", _tau()[3]["traj"]), []),
        "anthropic": (
            _write(tmp_path / "anthropic.json", HISTORY_FORMATS["anthropic"].write_messages(neutral)),
            [],
        ),
        "langchain": (_write(tmp_path / "lc.json", HISTORY_FORMATS["langchain"].write_messages(neutral)), []),
        "responses": (
            _write(tmp_path / "resp.json", HISTORY_FORMATS["responses"].write_messages(neutral)),
            [],
        ),
        "neutral": (_write(tmp_path / "neutral.json", {"messages": neutral}), []),
        "gemini": (_write(tmp_path / "gemini.json", HISTORY_FORMATS["gemini"].write_document(neutral)), []),
        "ai-sdk": (_write(tmp_path / "ai.json", HISTORY_FORMATS["ai-sdk"].write_messages(neutral)), []),
        "bedrock": (
            _write(
                tmp_path / "bedrock.json",
                {"modelId": "amazon.nova-pro-v1:0", **HISTORY_FORMATS["bedrock"].write_document(neutral)},
            ),
            [],
        ),
    }


def _original(path: Path, fmt: str, extra: list[str]) -> Any:
    """What a restore in ``fmt`` must give back: the file's messages (Anthropic: with ``system``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if extra:
        data = data[int(extra[1])]
    if isinstance(data, list):
        return data
    if fmt == "anthropic":
        return {k: data[k] for k in ("system", "messages") if k in data}
    return data[HISTORY_FORMATS[fmt].messages_key]


def _paired(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's messages read back to neutral; every finished call still has its result."""
    fmt = HISTORY_FORMATS[document["format"]]
    native = document["messages"]
    neutral = validate_messages(
        fmt.read(native, {"system": document["system"]} if "system" in document else {})
    )
    calls = {
        b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call" and b["state"] != "pending"
    }
    results = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert calls == results, sorted(calls ^ results)
    return neutral


@pytest.mark.parametrize(
    "fmt",
    [
        "tau-bench",
        "swe-agent",
        "mini-swe-agent",
        "openai",
        "anthropic",
        "langchain",
        "responses",
        "neutral",
        "gemini",
        "bedrock",
        "ai-sdk",
    ],
)  # the agents' own files (Claude Code, Codex, ...) are in test_formats_agents
def test_auto_reads_each_format_and_writes_it_back_paired(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, extra = _inputs(tmp_path)[fmt]
    argv = ["compact", str(path), *extra, "--eligible-tools", "*", "--minimum-reduction", "0"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    assert f"read as {fmt} (--format auto)" in err
    document = json.loads(out)
    assert document["format"] == fmt and document["status"] == "DECIDED", document["detail"]
    assert document["stats"]["chars_after"] < document["stats"]["chars_before"]
    _paired(document)
    # the output is itself a valid input in the same format
    again = _write(tmp_path / "again.json", {k: document[k] for k in ("messages", "system") if k in document})
    if fmt not in ("neutral", "swe-agent", "tau-bench", "gemini"):  # their files name the list otherwise
        code, _, err = _run(["compact", str(again), "--eligible-tools", "*"], capsys)
        assert code == 0 and f"read as {fmt}" in err, err


@pytest.mark.data
def test_swe_agent_function_calling_traj_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    path = require_data(SWE_CALLS)
    code, out, _ = _run(["compact", str(path), "--eligible-tools", "*", "--minimum-reduction", "0"], capsys)
    document = json.loads(out)
    assert code == 0 and document["format"] == "swe-agent"
    assert any("tool_call_ids" in m for m in document["messages"])
    _paired(document)


@pytest.fixture(params=["sqlite", "file", "redis", "postgres"])
async def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An archive URL of each kind; Redis and PostgreSQL are the real servers on 127.0.0.1."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'a.db'}"
    elif request.param == "file":
        yield f"file:{tmp_path / 'archive'}"
    elif request.param == "redis":
        async with redis_namespace():  # skips (fails in CI) when Redis is down
            yield "redis://127.0.0.1:6379/0"
    else:
        yield await postgres_url()


@contextlib.contextmanager
def _scope() -> Iterator[list[str]]:
    """Scope flags of a fresh session, so runs against shared servers never see each other's snapshots."""
    yield ["--user", "cli-test", "--agent", "a", "--session", uuid.uuid4().hex]


@pytest.mark.parametrize("fmt", ["tau-bench", "swe-agent", "mini-swe-agent", "anthropic", "langchain"])
def test_enforce_then_restore_gives_back_the_original(
    fmt: str, archive_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, extra = _inputs(tmp_path)[fmt]
    with _scope() as scope:
        argv = ["compact", str(path), *extra, "--eligible-tools", "*", "--minimum-reduction", "0"]
        code, out, err = _run([*argv, "--mode", "enforce", "--archive", archive_url, *scope], capsys)
        document = json.loads(out)
        assert code == 0 and document["reason"] == "ARCHIVED_PROPOSAL", err + document["detail"]
        ref = document["archive_ref"]
        code, out, err = _run(["restore", ref, "--archive", archive_url, *scope, "--format", fmt], capsys)
        assert code == 0, err
        if extra or fmt == "neutral":  # an item of a list was not sent on its own; neutral is the snapshot
            assert canonical_bytes(json.loads(out)) == canonical_bytes(_original(path, fmt, extra))
        else:  # the whole file was sent: it comes back byte for byte, every field kept
            assert out == path.read_text(encoding="utf-8")
        code, out, err = _run(["archive", "list", "--archive", archive_url, *scope], capsys)
        assert code == 0 and [e["ref"] for e in json.loads(out)] == [ref]
        code, _, err = _run(["archive", "delete", ref, "--archive", archive_url, *scope], capsys)
        assert code == 0, err


@pytest.mark.parametrize(
    ("url", "says"),
    [("redis:/x", "two slashes"), ("bogus://x", "unknown scheme 'bogus'"), ("s3://b/k", "unknown scheme")],
)
def test_a_wrong_archive_url_is_an_error_not_a_folder(
    url: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path / "h.json", _tau()[3]["traj"])
    with _scope() as scope:
        for argv in (
            ["compact", str(path), "--eligible-tools", "*", "--mode", "enforce", "--archive", url, *scope],
            ["restore", "0" * 64, "--archive", url, *scope],
            ["archive", "list", "--archive", url, *scope],
            ["offload", str(path), "--mode", "compact", "--archive", url, *scope],
        ):
            code, _, err = _run(argv, capsys)
            assert code == 2 and says in err and "Traceback" not in err, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.json"]


def test_an_archive_that_is_down_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _scope() as scope:
        code, _, err = _run(
            ["archive", "list", "--archive", "postgresql://root@127.0.0.1:1/test?connect_timeout=2", *scope],
            capsys,
        )
        assert code == 2 and "PostgreSQL archive" in err and err.count("\n") == 1
        code, _, err = _run(
            ["restore", "0" * 64, "--archive", f"sqlite:{tmp_path / 'none.db'}", *scope], capsys
        )
        assert code == 2 and "does not exist" in err


def test_a_list_of_trajectories_needs_item_or_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tau = _write(tmp_path / "tau.json", _tau())
    code, _, err = _run(["compact", str(tau), "--eligible-tools", "*"], capsys)
    assert code == 2
    last = TAU_RUNS - 1
    assert f"a list of {TAU_RUNS} tau-bench trajectories" in err and f"--item N (0..{last})" in err
    assert "--all" in err
    code, _, err = _run(["compact", str(tau), "--item", str(TAU_RUNS), "--eligible-tools", "*"], capsys)
    assert code == 2 and "out of range" in err
    code, _, err = _run(["compact", str(MINI), "--item", "0"], capsys)
    assert code == 2 and "this is one history" in err
    code, _, err = _run(["compact", str(tau), "--all", "--eligible-tools", "*"], capsys)
    assert code == 2 and "--all needs --output-dir" in err
    code, _, err = _run(["offload", str(tau), "--all"], capsys)
    assert code == 2 and "--item N" in err


def test_all_with_a_closing_summary_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    five = _write(tmp_path / "tau5.json", _tau()[:5])
    records = tmp_path / "records.jsonl"
    out_dir = tmp_path / "out"
    argv = ["compact", str(five), "--all", "--eligible-tools", "*", "--output-dir", str(out_dir)]
    code, out, err = _run([*argv, "--records", str(records), "--minimum-reduction", "0"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [f"tau5-{n}.json" for n in range(5)]
    documents = [json.loads((out_dir / f"tau5-{n}.json").read_text(encoding="utf-8")) for n in range(5)]
    saved = sum(
        d["stats"]["chars_before"] - d["stats"]["chars_after"] for d in documents if d["status"] == "DECIDED"
    )
    decided = sum(d["status"] == "DECIDED" for d in documents)
    line = out.strip().splitlines()[-1]
    assert line.startswith(f"5 plans: {decided} decided") and f"would save {saved:,} characters" in line
    assert len(line) <= 100
    lines = records.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and all(json.loads(x)["mode"] == "shadow" for x in lines)
    code, out, err = _run(["audit", str(records)], capsys)
    assert code == 0 and "5" in out, err


def test_progress_bar_only_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar redraws itself with carriage returns: captured stderr (a pipe, a CI log) gets none of
    it, a terminal gets one bar that ends its line. (A terminal is stood in for by ``isatty``.)"""
    three = _write(tmp_path / "tau3.json", _tau()[:3])
    argv = ["compact", str(three), "--all", "--eligible-tools", "*", "--output-dir", str(tmp_path / "out")]
    code, _, err = _run(argv, capsys)
    assert code == 0 and "\r" not in err and "3/3" not in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = _run(argv, capsys)
    assert code == 0 and err.count("\r[") == 3 and err.endswith("] 3/3\n")


def test_minimum_reduction_decides_what_is_adopted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "chat.json", _tau()[3]["traj"])
    base = ["compact", str(path), "--eligible-tools", "*"]
    code, out, _ = _run([*base, "--minimum-reduction", "0.99"], capsys)
    document = json.loads(out)
    assert code == 0 and (document["status"], document["reason"]) == (
        "INCONCLUSIVE",
        "INSUFFICIENT_REDUCTION",
    )
    code, out, _ = _run([*base, "--minimum-reduction", "0"], capsys)
    assert code == 0 and json.loads(out)["status"] == "DECIDED"
    code, _, err = _run([*base, "--minimum-reduction", "2"], capsys)
    assert code == 2 and "minimum_reduction" in err


def test_a_token_budget_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = MINI
    argv = ["compact", str(path), "--trigger-tokens", "1000000", "--target-tokens", "1"]
    code, out, err = _run(argv, capsys)
    below = json.loads(out)
    assert code == 0, err
    assert (below["status"], below["reason"], below["changed"]) == ("SKIPPED", "BELOW_TRIGGER", False)
    before = json.loads(_run(["compact", str(path), "--minimum-reduction", "0"], capsys)[1])["stats"]
    target = before["tokens_before"] * 3 // 4
    argv = ["compact", str(path), "--trigger-tokens", str(target + 1), "--target-tokens", str(target)]
    code, out, err = _run(argv, capsys)
    budgeted = json.loads(out)
    assert code == 0, err
    assert budgeted["status"] == "DECIDED", budgeted["detail"]
    stats = budgeted["stats"]
    assert stats["target_tokens"] == target and stats["target_met"] and stats["tokens_after"] <= target
    code, _, err = _run(["compact", str(path), "--trigger-tokens", "100"], capsys)
    assert code == 2 and "trigger_tokens go together" in err
    code, _, err = _run(["compact", str(path), "--trigger-tokens", "100", "--target-tokens", "100"], capsys)
    assert code == 2 and "must be below trigger_tokens" in err
    with pytest.raises(SystemExit) as exited:
        main(["compact", str(path), "--trigger-tokens", "-5", "--target-tokens", "1"])
    assert exited.value.code == 2 and "--trigger-tokens: must not be negative" in capsys.readouterr().err


def test_offload_speaks_the_files_format_and_restores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = SWE_PLAIN
    url = f"sqlite:{tmp_path / 'a.db'}"
    with _scope() as scope:
        argv = ["offload", str(path), "--mode", "compact", "--trigger-tokens", "100"]
        code, out, err = _run([*argv, "--max-tool-message-tokens", "100", "--archive", url, *scope], capsys)
        report = json.loads(out)
        assert code == 0 and "read as swe-agent" in err
        assert report["format"] == "swe-agent" and report["changed"], report["detail"]
        assert all("role" in m and "content" in m for m in report["messages"])
        code, out, _ = _run(
            ["restore", report["archive_ref"], "--archive", url, *scope, "--format", "swe-agent"], capsys
        )
        assert code == 0
        assert canonical_bytes(json.loads(out)) == canonical_bytes(_original(path, "swe-agent", []))
        code, _, err = _run(
            [
                "restore",
                report["archive_ref"],
                "--archive",
                url,
                *scope,
                "--format",
                "openai",
                "--call-id",
                "x",
            ],
            capsys,
        )
        assert code == 2 and "has no tool call 'x'" in err
        # the calls alone, as a history of their own in the format asked for: each call with its result
        calls = [d["call_id"] for d in report["decisions"]][:2]
        restore = ["restore", report["archive_ref"], "--archive", url, *scope, "--format", "openai"]
        code, out, err = _run([*restore, *(a for c in calls for a in ("--call-id", c))], capsys)
        assert code == 0, err
        written = json.loads(out)
        check_openai_chat(written)
        assert [c["id"] for m in written for c in m.get("tool_calls") or []] == calls
        code, _, err = _run([*restore[:-1], "sent", "--call-id", calls[0]], capsys)
        assert code == 2 and "name a format" in err


def test_version_and_help_fit_a_terminal() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "--version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert (
        done.returncode == 0
        and done.stdout.startswith("tracetrim ")
        and done.stdout.strip()[10:][0].isdigit()
    )


def test_demo_tables_fit_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["demo"], capsys)
    assert code == 0
    too_wide = [line for line in out.splitlines() if len(line) > 100]
    assert not too_wide, too_wide
    assert "strategy" in out and "crit" in out and "p_result" in out
