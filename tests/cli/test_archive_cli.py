"""The `restore` and `archive list|delete|prune` commands, run through a real parser on a real folder."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from tests._archive_support import make_history
from tracetrim._scope import Scope
from tracetrim.archive import FileArchive
from tracetrim.cli._archive_commands import register
from tracetrim.cli._errors import CliError

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tracetrim")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def _scope_flags(root: Path, user: str = "u") -> list[str]:
    return ["--archive", str(root), "--user", user, "--agent", "a", "--session", "s"]


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, list[str]]:
    archive = FileArchive(tmp_path)

    async def save_three() -> list[str]:
        refs = []
        for i in range(3):
            refs.append(await archive.save(SCOPE, make_history(2, seed=i, tag=str(i))))
            await asyncio.sleep(0.015)
        return refs

    return tmp_path, asyncio.run(save_three())


Saved = tuple[Path, list[str]]


def test_restore_prints_the_whole_history(saved: Saved, capsys: pytest.CaptureFixture[str]) -> None:
    root, refs = saved
    assert _run(["restore", *_scope_flags(root), refs[1]]) == 0
    assert json.loads(capsys.readouterr().out) == make_history(2, seed=1, tag="1")


def test_restore_prints_chosen_calls(saved: Saved, capsys: pytest.CaptureFixture[str]) -> None:
    root, refs = saved
    assert _run(["restore", *_scope_flags(root), refs[0], "--call-id", "c1", "--call-id", "c0"]) == 0
    printed = json.loads(capsys.readouterr().out)
    history = make_history(2, seed=0, tag="0")
    assert [p["call_id"] for p in printed] == ["c1", "c0"]
    assert printed[1]["call"] == history[1]["content"][1]
    assert printed[1]["result"] == history[2]["content"][0]


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini-cli"])
def test_restore_writes_a_session_format_as_its_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """An archived history from elsewhere, restored as an agent's session, is printed as the agent keeps
    the file (one JSON value a line) and reads back as that format with every call and result."""
    from tests._foreign_histories import foreign_histories, said
    from tracetrim.formats import HISTORY_FORMATS, parse_history_text

    history = foreign_histories()["agentscope"]
    ref = asyncio.run(FileArchive(tmp_path).save(SCOPE, history))
    assert _run(["restore", *_scope_flags(tmp_path), ref, "--format", name]) == 0
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    assert parse_history_text(out) == lines and all(isinstance(line, dict) for line in lines)
    back = HISTORY_FORMATS[name].read(lines, {})
    assert said(back, "tool_call") == said(history, "tool_call")
    assert said(back, "tool_result") == said(history, "tool_result")


def test_list_delete_and_prune(saved: Saved, capsys: pytest.CaptureFixture[str]) -> None:
    root, refs = saved
    assert _run(["archive", "list", *_scope_flags(root)]) == 0
    assert [e["ref"] for e in json.loads(capsys.readouterr().out)] == refs
    assert _run(["archive", "delete", *_scope_flags(root), refs[0]]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": [refs[0]]}
    with pytest.raises(CliError, match="no snapshot") as caught:
        _run(["archive", "delete", *_scope_flags(root), refs[0]])
    assert caught.value.exit_code == 1
    assert _run(["archive", "prune", *_scope_flags(root), "--keep-last", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": [refs[1]]}
    assert _run(["archive", "prune", *_scope_flags(root), "--older-than-days", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": []}
    assert _run(["archive", "list", *_scope_flags(root)]) == 0
    assert [e["ref"] for e in json.loads(capsys.readouterr().out)] == refs[2:]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["restore", "REF-PLACEHOLDER", "--user", "x"], "no snapshot"),
        (["restore", "../etc/passwd"], "invalid archive reference"),
        (["restore", "0" * 64], "no snapshot"),
        (["restore", "0" * 64, "--user", ""], "user_id must not be empty"),
        (["archive", "prune"], "--keep-last N, --older-than-days D or both"),
        (["archive", "delete", "A" * 64], "invalid archive reference"),
    ],
)
def test_user_mistakes_are_one_clear_line(saved: Saved, argv: list[str], message: str) -> None:
    root, refs = saved
    command = argv[: 2 if argv[0] == "archive" else 1]
    rest = [refs[0] if a == "REF-PLACEHOLDER" else a for a in argv[len(command) :]]
    flags = _scope_flags(root)
    if "--user" in rest:
        i = rest.index("--user")
        flags[flags.index("--user") + 1] = rest[i + 1]
        rest = rest[:i] + rest[i + 2 :]
    with pytest.raises(CliError, match=message) as caught:
        _run([*command, *flags, *rest])
    assert "\n" not in str(caught.value)


def test_missing_archive_folder_and_bad_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CliError, match="does not exist"):
        _run(["archive", "list", *_scope_flags(tmp_path / "nope")])
    with pytest.raises(SystemExit):
        _run(["archive", "prune", *_scope_flags(tmp_path), "--keep-last", "-1"])
    assert "must not be negative" in capsys.readouterr().err
