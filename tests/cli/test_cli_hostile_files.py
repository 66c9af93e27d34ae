"""Files no JSON reader should choke on: every command that reads a history names what is wrong in one line.

Python's JSON decoder raises a bare ``RecursionError`` past about a thousand levels of nesting and a bare
``ValueError`` for an integer longer than 4,300 digits; a lone surrogate (which JavaScript agents write when
they cut a string between the halves of a pair) is JSON that UTF-8 cannot hold. None of these may end in a
traceback, and a file that reads must be written out as valid UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tracetrim._json import pretty_json, strict_loads
from tracetrim._validators import FieldValueError
from tracetrim.cli import main

DEEP = 3_000


def _openai(arguments: str = "{}", tool_output: str = '"x"') -> str:
    return (
        '{"messages": [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": null, '
        '"tool_calls": [{"id": "a", "type": "function", "function": {"name": "read_file", '
        f'"arguments": {json.dumps(arguments)}}}}}]}}, '
        f'{{"role": "tool", "tool_call_id": "a", "content": {tool_output}}}]}}'
    )


UNREADABLE: dict[str, tuple[str, str]] = {
    "deep.json": (_openai(tool_output="[" * DEEP + "]" * DEEP), "nested too deeply"),
    "deep-line.jsonl": (
        '{"type": "user", "message": {"role": "user", "content": "hi"}}\n' + "[" * DEEP + "]" * DEEP + "\n",
        "line 2: JSON nested too deeply",
    ),
    "long-number.json": (_openai(tool_output="1" * 5_000), "too long to read"),
    # an Agent Framework session whose state holds two histories, neither the default one
    "two-histories.json": (
        json.dumps({"type": "session", "state": {"a": {"messages": []}, "b": {"messages": []}}}),
        "2 message histories (state keys 'a', 'b')",
    ),
}

COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "compact": lambda path: ["compact", str(path), "--eligible-tools", "*"],
    "offload": lambda path: ["offload", str(path)],
    "replay": lambda path: ["replay", str(path), "--eligible-tools", "*"],
    "fit": lambda path: ["fit", str(path), "-o", str(path.with_suffix(".weights.json"))],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_an_unreadable_file_is_one_clear_line(
    name: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, says = UNREADABLE[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code = main(COMMANDS[command](path))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and says in err and name in err, err
    assert err.count(name) == 1, err  # the file named once, not once per layer


@pytest.mark.parametrize("command", ["compact", "replay"])
def test_a_lone_surrogate_in_a_result_never_crashes_the_writer(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "js-agent.json"
    path.write_text(_openai(tool_output='"cut here \\ud83d"'), encoding="utf-8")
    code = main(COMMANDS[command](path))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    assert code in (0, 1, 2), captured.err
    if captured.out:
        json.loads(captured.out.encode("utf-8"))  # what was written is UTF-8 JSON


def test_the_strict_decoder_names_each_limit() -> None:
    with pytest.raises(FieldValueError, match="nested too deeply"):
        strict_loads("[" * DEEP + "]" * DEEP)
    with pytest.raises(FieldValueError, match="too long to read"):
        strict_loads("1" * 5_000)
    assert strict_loads("[" * 200 + "]" * 200) is not None  # deep, but within what JSON readers follow


def test_pretty_json_escapes_only_lone_surrogates() -> None:
    value = {"cut": "a \ud83d", "whole": "\U0001f600 é"}
    text = pretty_json(value)
    assert "\\ud83d" in text and "\U0001f600 é" in text
    assert json.loads(text.encode("utf-8")) == value
