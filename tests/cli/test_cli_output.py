"""What `tracetrim compact` writes: the whole file in its own shape (``--emit history``), output names and
sources, records an HTML audit can chart, one detection line, archive failures said, the service guide's curl.

The fixtures are tests/data/whole_files (see its README for where each shape comes from).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._serve import serve_process
from tests.conftest import REPO
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, FileStyle, detect_format

WHOLE = Path(__file__).parents[1] / "data" / "whole_files"
AGENTS = Path(__file__).parents[1] / "data" / "agents"

# Each fixture, its format, and flags under which the default judge does shorten it.
FILES = {
    "run.v1.traj.json": ("mini-swe-agent", ["--minimum-reduction", "0"]),
    "fix.traj": ("swe-agent", ["--minimum-reduction", "0"]),
    "request.anthropic.json": ("anthropic", ["--minimum-reduction", "0"]),
    "task7.tau.json": ("tau-bench", ["--trigger-tokens", "2500", "--target-tokens", "2300"]),
}
TOOLS = ["--eligible-tools", "*"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _enforce(tmp_path: Path, archive: str) -> list[str]:
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    return ["--mode", "enforce", "--archive", f"sqlite:{tmp_path / archive}.db", *scope]


def _message_keys(messages: list[Any]) -> set[str]:
    return {key for message in messages if isinstance(message, dict) for key in message}


@pytest.mark.parametrize("name", list(FILES))
def test_emit_history_writes_the_whole_file_in_its_own_shape(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fmt, flags = FILES[name]
    source = WHOLE / name
    original = _load(source)
    out_dir = tmp_path / "out"
    argv = ["compact", str(source), *TOOLS, *flags]
    code, _, err = _run(
        [*argv, *_enforce(tmp_path, "one"), "--emit", "history", "--output-dir", str(out_dir)], capsys
    )
    assert code == 0, err
    assert [p.name for p in out_dir.iterdir()] == [name]  # the input's whole name, suffixes and all
    written = _load(out_dir / name)
    key = HISTORY_FORMATS[fmt].messages_key
    # every key of the file kept, in order, with its value; only the message list changed
    assert list(written) == list(original)
    assert {k: v for k, v in written.items() if k != key} == {k: v for k, v in original.items() if k != key}
    assert written[key] != original[key] and len(written[key]) <= len(original[key])
    assert _message_keys(written[key]) <= _message_keys(original[key])  # no message gains a field
    assert detect_format(written) == fmt

    # the same plan as a result document (another archive: the same reference in its tombstones) holds
    # the messages the whole file holds
    code, out, err = _run([*argv, *_enforce(tmp_path, "two")], capsys)
    document = json.loads(out)
    assert code == 0 and document["changed"] is True, err
    assert document["messages"] == written[key] and document["source"] == str(source)


@pytest.mark.parametrize("name", list(FILES))
def test_an_unchanged_history_is_written_as_the_input(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SHADOW adopts nothing, so the file to continue with is the input itself, byte for byte, however
    it was written (here: as the fixture is, minified, and with a byte-order mark and CRLF line ends)."""
    value = _load(WHOLE / name)
    layouts = {
        "as is": (WHOLE / name).read_bytes(),
        "minified": json.dumps(value, separators=(",", ":")).encode(),
        "bom crlf": b"\xef\xbb\xbf" + json.dumps(value, indent="\t").replace("\n", "\r\n").encode(),
    }
    for layout, data in layouts.items():
        source = tmp_path / f"{layout.replace(' ', '-')}-{name}"
        source.write_bytes(data)
        out_dir = tmp_path / f"out-{layout.replace(' ', '-')}"
        code, _, err = _run(
            ["compact", str(source), *TOOLS, "--emit", "history", "--output-dir", str(out_dir)], capsys
        )
        assert code == 0, err
        assert (out_dir / source.name).read_bytes() == data, layout
    code, out, err = _run(["compact", str(WHOLE / name), *TOOLS, "--emit", "history"], capsys)
    assert code == 0 and out == (WHOLE / name).read_text(encoding="utf-8"), err


# How JSON files are written in the wild: Python's json.dump at its defaults (one line, non-ASCII
# escaped), indented by 2 or 4, minified (JavaScript's JSON.stringify), tab-indented with Windows
# line ends and a byte-order mark.
LAYOUTS: dict[str, Any] = {
    "python-default": lambda v: json.dumps(v),
    "indent-4-ascii": lambda v: json.dumps(v, indent=4) + "\n",
    "indent-2-utf8": lambda v: json.dumps(v, indent=2, ensure_ascii=False) + "\n",
    "minified": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "tabs-crlf-bom": lambda v: "\ufeff" + json.dumps(v, indent="\t").replace("\n", "\r\n") + "\r\n",
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_compacted_history_is_written_the_way_its_file_was(
    layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ENFORCE writes the shorter history in the input's own layout: the same indent, separators,
    escaping, line ends and byte-order mark, so a diff against the input shows only what changed."""
    name = "run.v1.traj.json"
    value = _load(WHOLE / name)
    value["info"]["note"] = "non-ASCII kept as the file keeps it: café, 東京"  # escaped or not, per layout
    text = LAYOUTS[layout](value)
    source = tmp_path / name
    source.write_bytes(text.encode("utf-8"))
    out_dir = tmp_path / "out"
    argv = ["compact", str(source), *TOOLS, *FILES[name][1], *_enforce(tmp_path, layout), "--emit", "history"]
    code, _, err = _run([*argv, "--output-dir", str(out_dir)], capsys)
    assert code == 0, err
    written = (out_dir / name).read_bytes().decode("utf-8")
    compacted = json.loads(written.removeprefix("\ufeff"))
    assert compacted["messages"] != value["messages"] and compacted["info"] == value["info"]
    # the compacted value, written by the same writer as the input, gives exactly the output
    assert written == LAYOUTS[layout](compacted)
    assert FileStyle.of(written, compacted) == FileStyle.of(text, value)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_a_compacted_jsonl_session_keeps_its_line_layout(
    separators: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSONL as Claude Code writes it (compact) and as a Python tool writes it (json.dumps defaults)."""
    entries = [
        json.loads(line) for line in (AGENTS / "claude_code_session.jsonl").read_text().splitlines() if line
    ]
    source = tmp_path / "session.jsonl"
    source.write_text("".join(json.dumps(e, separators=separators) + "\n" for e in entries), encoding="utf-8")
    argv = ["compact", str(source), *TOOLS, "--minimum-reduction", "0", *_enforce(tmp_path, "jsonl")]
    code, out, err = _run([*argv, "--emit", "history"], capsys)
    assert code == 0, err
    lines = out.splitlines(keepends=True)
    written = [json.loads(line) for line in lines]
    assert written != entries and len(written) <= len(entries)
    assert all(
        line == json.dumps(entry, separators=separators) + "\n"
        for line, entry in zip(lines, written, strict=True)
    )


def test_a_lone_surrogate_is_written_escaped() -> None:
    """A string JSON can hold but UTF-8 cannot (a lone surrogate) is escaped, never a crash, even in a
    file that keeps its non-ASCII text unescaped."""
    style = FileStyle.of('{"a": "é"}', {"a": "é"})
    assert style.dump({"a": "é"}).decode("utf-8") == '{"a": "é"}'
    assert style.dump({"a": "\ud800 é"}).decode("utf-8") == '{"a": "\\ud800 \\u00e9"}'


def test_a_bare_message_list_stays_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tau = _load(WHOLE / "task7.tau.json")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(tau["traj"]), encoding="utf-8")
    flags = FILES["task7.tau.json"][1]
    argv = ["compact", str(chat), *TOOLS, *flags, *_enforce(tmp_path, "list"), "--emit", "history"]
    code, out, err = _run(argv, capsys)
    written = json.loads(out)
    assert code == 0 and "read as openai" in err, err
    assert isinstance(written, list) and len(written) < len(tau["traj"])
    assert detect_format(written) == "openai"


def test_output_names_keep_the_whole_input_name_and_name_their_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = shutil.copy(WHOLE / "run.v1.traj.json", tmp_path / "a" / "run.v1.traj.json")
    second = shutil.copy(WHOLE / "run.v1.traj.json", tmp_path / "b" / "run.v1.traj.json")
    items = tmp_path / "tau.v2.json"
    items.write_text(json.dumps([_load(WHOLE / "task7.tau.json")] * 2), encoding="utf-8")
    sources = [str(first), str(second), str(WHOLE / "fix.traj")]
    out_dir = tmp_path / "out"
    code, _, err = _run(["compact", *sources, *TOOLS, "--output-dir", str(out_dir)], capsys)
    assert code == 0, err
    code, _, err = _run(["compact", str(items), "--all", *TOOLS, "--output-dir", str(out_dir)], capsys)
    assert code == 0, err
    named = {p.name: _load(p)["source"] for p in out_dir.iterdir()}
    assert named == {
        "run.v1.traj.json": str(first),
        "run-2.v1.traj.json": str(second),  # two inputs of one name do not overwrite each other
        "fix.traj.json": str(WHOLE / "fix.traj"),  # a result document is JSON, whatever it read
        "tau.v2-0.json": f"{items}[0]",
        "tau.v2-1.json": f"{items}[1]",
    }

    history_dir = tmp_path / "whole"
    argv = ["compact", str(WHOLE / "fix.traj"), *TOOLS, "--emit", "history", "--output-dir", str(history_dir)]
    code, _, err = _run(argv, capsys)
    assert code == 0, err
    assert [p.name for p in history_dir.iterdir()] == ["fix.traj"]  # the whole file keeps its own name


def test_auto_detection_is_one_stderr_line_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [str(WHOLE / name) for name in FILES]
    code, _, err = _run(["compact", *sources, *TOOLS, "--output-dir", str(tmp_path / "out")], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "read as" in line]
    assert lines == [
        "tracetrim: 4 histories from 4 files read as anthropic (1), mini-swe-agent (1), swe-agent (1), "
        "tau-bench (1) (--format auto)"
    ]
    code, _, err = _run(["compact", sources[1], *TOOLS], capsys)
    assert err == f"tracetrim: {sources[1]}: read as swe-agent (--format auto)\n"
    code, _, err = _run(["compact", sources[1], *TOOLS, "--format", "swe-agent"], capsys)
    assert code == 0 and err == ""


def test_an_enforce_archive_failure_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    scope = ["--user", "u", "--agent", "a", "--session", "s"]
    argv = [
        "compact",
        *TOOLS,
        "--minimum-reduction",
        "0",
        "--mode",
        "enforce",
        "--archive",
        str(blocker / "a"),
    ]
    source = str(WHOLE / "run.v1.traj.json")
    code, out, err = _run([*argv, *scope, source], capsys)
    document = json.loads(out)  # the result document is still written
    assert code == 1 and (document["status"], document["reason"]) == ("ERROR", "ARCHIVE_ERROR")
    assert (
        document["changed"] is False and document["messages"] == _load(WHOLE / "run.v1.traj.json")["messages"]
    )
    (line,) = [line for line in err.splitlines() if "archive" in line]
    assert line.startswith(f"tracetrim: {source}: ENFORCE kept the original, the archive failed: ")
    assert "not a folder" in line

    several = [source, str(WHOLE / "fix.traj")]
    code, _, err = _run([*argv, *scope, *several, "--output-dir", str(tmp_path / "out")], capsys)
    (line,) = [line for line in err.splitlines() if "archive" in line]
    assert code == 1 and f"the archive failed for 2 of 2 histories (first: {source})" in line


def test_records_from_the_cli_make_a_full_html_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [str(WHOLE / name) for name in FILES]
    reports = {}
    for detail in ("pairs", "numbers"):
        records = tmp_path / f"{detail}.jsonl"
        argv = [
            "compact",
            *sources,
            *TOOLS,
            "--output-dir",
            str(tmp_path / detail),
            "--records",
            str(records),
        ]
        if detail == "numbers":
            argv += ["--record-detail", "numbers"]
        code, _, err = _run(argv, capsys)
        assert code == 0, err
        lines = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
        assert len(lines) == 4 and all(("pairs" in line) == (detail == "pairs") for line in lines)
        html = tmp_path / f"{detail}.html"
        code, _, err = _run(["audit", str(records), "--html", str(html)], capsys)
        assert code == 0, err
        reports[detail] = html.read_text(encoding="utf-8")
    empty = ("no per-pair detail", "no probabilities recorded", "No pair was shortened or dropped")
    assert all(marker in reports["numbers"] for marker in empty)  # what the CLI gave before
    assert not any(marker in reports["pairs"] for marker in empty)
    assert "get_order_details" in reports["pairs"] and "bash" in reports["pairs"]
    # with content, each pair carries its call input and result text too
    records = tmp_path / "content.jsonl"
    argv = ["compact", sources[0], *TOOLS, "--records", str(records), "--record-detail", "content"]
    code, _, err = _run(argv, capsys)
    (line,) = records.read_text(encoding="utf-8").splitlines()
    assert code == 0 and "ls -R src" in json.dumps(json.loads(line)["pairs"]), err


def _readme_curl() -> tuple[str, str]:
    """The service guide's curl example (``$ curl ...`` up to the answer) and the answer it shows."""
    guide = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    found = re.search(r"\n\$ (curl [^\n]*(?:\n {4}[^\n]*)*)\n(\{[^\n]*\})\n```", guide)
    assert found is not None, "the service guide's curl example is gone"
    return found.group(1), found.group(2)


def test_the_service_guide_curl_example_works_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run as written, against a real `tracetrim serve`: only the port is moved to a free one, after
    checking the guide's is the one `serve` listens on by default."""
    if shutil.which("curl") is None:
        pytest.skip("needs curl on PATH")
    command, answer = _readme_curl()
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "(default 8080)" in capsys.readouterr().out and "localhost:8080/" in command
    with serve_process(cwd=tmp_path) as (url, _):
        port = url.rsplit(":", 1)[1]
        done = subprocess.run(
            ["bash", "-c", command.replace("localhost:8080/", f"localhost:{port}/")],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == answer
