"""Real agent files, broken a few places at a time, through the command line users run (shared by
``tests/formats/test_formats_mutated.py`` and ``benchmarks/fuzz.py --formats``).

A seed is a file of every format: the agents' own files in ``tests/data/agents`` and, for the formats
that have none there, what each format's writer makes of two neutral histories read from them. A
mutation deletes a key or a list entry, duplicates or swaps entries, or puts a value of another type
(or another string of the file, so ids collide) somewhere. `check` runs ``tracetrim compact`` on the
result in process and says what broke: an exception escaping the command (a reader or writer meeting
a shape it did not expect, where the user must get an error naming the place), an answer that is not
writable ("the result cannot be written"), an ENFORCE history written back that its own format no
longer reads, or an archived original that ``tracetrim restore --format sent`` does not give back
as the very text that was sent.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st

from tracetrim._snapshot import SnapshotError
from tracetrim.cli import main
from tracetrim.formats import (
    HISTORY_FORMATS,
    detect_format,
    parse_history_text,
    trajectory_items,
    trajectory_list,
)

AGENTS = Path(__file__).parent / "data" / "agents"
_NEUTRAL_SOURCES = ("request_anthropic.json", "request_openai.json")
_OTHER_VALUES: tuple[Any, ...] = (None, 0, -1, 1.5, True, "", "x", [], {}, [1], {"a": 1}, 10**30, "é")


@attrs.frozen
class Seed:
    """One file to break: its name, its format and its text (JSON Lines where ``lines``; a list of
    runs, compacted with ``--item 0``, where ``runs``)."""

    name: str
    format: str
    text: str
    lines: bool
    runs: bool = False

    def value(self) -> Any:
        """The file as one JSON value (a JSON Lines file as the list of its lines)."""
        if self.lines:
            return [json.loads(line) for line in self.text.splitlines() if line.strip()]
        return json.loads(self.text)

    def dumped(self, value: Any) -> str:
        """``value`` written as this seed's kind of file."""
        if self.lines:
            return "".join(json.dumps(line) + "\n" for line in value)
        return json.dumps(value)


def _neutral(name: str) -> list[dict[str, Any]]:
    data = parse_history_text((AGENTS / name).read_text(encoding="utf-8"))
    fmt = HISTORY_FORMATS[detect_format(data)]
    messages = fmt.read(*fmt.split(data))
    return [{k: v for k, v in m.items() if k != "metadata"} for m in messages if m["content"]]


@functools.cache
def seeds() -> tuple[Seed, ...]:
    """The agents' files, then every format written from two neutral histories (with and without
    their system message; a writer that refuses one is skipped for it)."""
    found: list[Seed] = []
    covered: set[str] = set()
    for path in sorted(AGENTS.iterdir()):
        if path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text(encoding="utf-8")
        data = parse_history_text(text)
        runs = trajectory_list(data) is not None
        fmt = detect_format(trajectory_items(data)[0] if runs else data)
        found.append(Seed(path.name, fmt, text, lines=path.suffix == ".jsonl", runs=runs))
        covered.add(fmt)
    histories = [_neutral(name) for name in _NEUTRAL_SOURCES]
    histories += [[m for m in h if m["role"] != "system"] for h in histories]
    for name, fmt in HISTORY_FORMATS.items():
        for k, history in enumerate(histories):
            try:
                document = fmt.write_document(history)
            except SnapshotError:
                continue  # e.g. a session format that holds no system message
            value = document[fmt.messages_key] if list(document) == [fmt.messages_key] else document
            found.append(Seed(f"{name}-written-{k}", name, json.dumps(value), lines=False))
    return tuple(found)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*path, index)))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def mutate(value: Any, data: st.DataObject) -> Any:
    """``value`` (owned) with one to three places broken."""
    strings = [s for p in _paths(value) if isinstance(s := _at(value, p), str) and len(s) < 40]
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(value) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent, key = _at(value, path[:-1]), path[-1]
        op = data.draw(st.sampled_from(["delete", "duplicate", "swap", "string", "other"]))
        if op == "delete":
            del parent[key]
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif op == "swap" and isinstance(parent, list):
            other = data.draw(st.integers(0, len(parent) - 1))
            parent[key], parent[other] = parent[other], parent[key]
        elif op == "string" and strings:
            parent[key] = data.draw(st.sampled_from(strings))
        else:
            parent[key] = copy.deepcopy(data.draw(st.sampled_from(_OTHER_VALUES)))
    return value


@st.composite
def broken_files(draw: st.DrawFn) -> tuple[Seed, str]:
    """A seed and its text with one to three places broken."""
    seed = draw(st.sampled_from(seeds()))
    return seed, seed.dumped(mutate(seed.value(), draw(st.data())))


@st.composite
def compact_options(draw: st.DrawFn) -> tuple[str, ...]:
    """How ``tracetrim compact`` is asked: mode, output, whether the format is named, how much goes."""
    keep, discard = draw(st.sampled_from([("0.5", "0.2"), ("0.999", "0.2"), ("0.999", "0.99")]))
    return (
        "--mode",
        draw(st.sampled_from(["enforce", "shadow"])),
        "--emit",
        draw(st.sampled_from(["result", "history"])),
        "--preserve-recent",
        draw(st.sampled_from(["0", "2"])),
        "--keep-threshold",
        keep,
        "--discard-threshold",
        discard,
        *draw(st.sampled_from([(), ("--named",)])),
    )


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def check(tmp: Path, seed: Seed, text: str, options: tuple[str, ...]) -> str | None:
    """What broke when ``tracetrim compact`` ran on ``text``, or None. An exception escaping the
    command is left to propagate, so the test shows its traceback."""
    named = "--named" in options
    options = tuple(o for o in options if o != "--named")
    fmt = ["--format", seed.format] if named else []
    item = ["--item", "0"] if seed.runs else []
    source = tmp / ("input.jsonl" if seed.lines else "input.json")
    source.write_text(text, encoding="utf-8")
    common = ["--eligible-tools", "*", "--minimum-reduction", "0", *fmt]
    archive = ["--archive", str(tmp / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    code, out, err = _run(["compact", str(source), *item, *common, *archive, *options])
    if "cannot be written" in err:
        return f"a file read is not written back: {err.strip()}"
    if code != 0:
        return None
    if options[options.index("--emit") + 1] != "history":
        result = json.loads(out)
        if result["reason"] == "INTERNAL_ERROR":
            return f"an internal error: {out[:500]}"
        if not result["changed"] or seed.runs:  # one run of a file of many is not sent (docs/archives.md)
            return None
        code, sent, err = _run(["restore", result["archive_ref"], *archive, "--format", "sent"])
        if code != 0 or sent != text:
            return f"the archived original does not restore as sent: {err.strip()}"
        return None
    again = tmp / ("again.jsonl" if seed.lines else "again.json")
    again.write_text(out, encoding="utf-8")
    code, _, err = _run(["compact", str(again), *common])  # --item writes back that one run
    if code != 0:
        return f"the history written back does not read again: {err.strip()}"
    return None
