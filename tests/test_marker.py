"""The marker contract has one home, `tracetrim._marker`: what the writers write, the readers read back."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import tracetrim
from tests._hang_guard import finishes
from tests.conftest import load_scenario
from tracetrim import Compactor, CompactorConfig
from tracetrim._marker import (
    MARKER_KEY,
    MARKER_PREFIX,
    RECALL_TOOL_NAME,
    ShortenedNote,
    is_shortened,
    mark_of,
    parse_shortened_note,
    shortened_note,
    summary_note,
)
from tracetrim.compactor import CompactionRequest
from tracetrim.decision import ScriptedDecisionModel

PACKAGE = Path(tracetrim.__file__).parent
REF = "ab" * 32


def test_note_texts_are_pinned() -> None:
    # Agents and stored histories carry these exact words; a change here is a format change.
    assert shortened_note("read_file", "c1", 5000, 700, REF) == (
        "[tracetrim: the result of read_file call c1 was shortened from 5000 to 700 characters. "
        f"The full result is archived under reference {REF}; recall it by call id c1 instead of running "
        "the tool again.]"
    )
    assert shortened_note("grep", "c2", 900, 100, "") == (
        "[tracetrim: the result of grep call c2 was shortened from 900 to 100 characters. "
        "The full result was not archived.]"
    )
    assert summary_note(3, ["m1", "m2", "m3"], ["c1"], 12345, REF) == (
        "[tracetrim: summary of 3 earlier messages (m1 to m3), about 12,345 tokens, which are archived "
        f"under reference {REF}; restore that reference, or recall a tool result by its call id, instead "
        "of running a tool again. Tool calls among them: c1.]"
    )
    assert summary_note(22, [], [f"c{n}" for n in range(22)], 9, "").endswith(
        "which are not archived. Tool calls among them: c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, "
        "c12, c13, c14, c15, c16, c17, c18, c19 and 2 more.]"
    )


@given(
    head=st.text(max_size=200),
    tool=st.text(min_size=1, max_size=30).filter(lambda t: "\n" not in t),
    call_id=st.from_regex(r"[A-Za-z0-9_.:-]{1,40}", fullmatch=True),
    original=st.integers(0, 10**9),
    kept=st.integers(0, 10**6),
    ref=st.sampled_from(["", REF, "0" * 64]),
)
def test_every_note_parses_back(
    head: str, tool: str, call_id: str, original: int, kept: int, ref: str
) -> None:
    text = f"{head}\n{shortened_note(tool, call_id, original, kept, ref)}"
    assert parse_shortened_note(text) == ShortenedNote(call_id, original, ref)


def test_text_without_a_closing_note_has_none() -> None:
    note = shortened_note("read_file", "c1", 5000, 700, "")
    assert parse_shortened_note("plain output") is None
    assert parse_shortened_note(note + "\nmore output") is None


async def test_the_rebuild_stage_writes_marks_the_readers_understand() -> None:
    scenario = load_scenario("payment_retry")
    # small cuts, so the scenario's ~1-3 kB reads are excerpted (an excerpt must keep <= 40% of a result)
    config = CompactorConfig(
        eligible_tools=frozenset({"read_file"}), truncate_head_chars=100, excerpt_chars=200
    )
    # every call kept, every result shortened: the rebuild writes its marks on each
    shorten = ScriptedDecisionModel(lambda name, question, state: 1.0 if name.startswith("call_") else 0.0)
    compactor = Compactor(shorten, config=config)
    outcome = await compactor.plan(CompactionRequest(messages=scenario["messages"], goal=scenario["goal"]))
    assert outcome.plan is not None
    shortened = [
        block for message in outcome.plan.messages for block in message["content"] if is_shortened(block)
    ]
    assert shortened
    for block in shortened:
        mark = mark_of(block)
        assert mark is not None
        note = parse_shortened_note(block["output"] if isinstance(block["output"], str) else "")
        assert note == ShortenedNote(block["id"], mark["original_chars"], mark["archive_ref"])


def test_the_key_and_the_recall_tool_name_are_defined_once() -> None:
    # "tracetrim" is also the product's name (the logger's, the command's, labels); only uses as a
    # metadata key count, and `_logging.LOGGER_NAME` is the logger's.
    key_uses = [
        f"{path.relative_to(PACKAGE)}:{lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_logging.py"
        for lineno in _key_uses(path, MARKER_KEY)
    ]
    assert key_uses == ["_marker.py:" + str(_line_of(PACKAGE / "_marker.py", "MARKER_KEY = "))]
    recall = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if f'"{RECALL_TOOL_NAME}"' in path.read_text(encoding="utf-8")
    ]
    assert recall == ["_marker.py"]


def _key_uses(path: Path, key: str) -> list[int]:
    """Lines where ``key`` is defined as a constant or used as a key: ``X = key``, ``{key: ...}``,
    ``m[key]``, ``m.get(key)`` (also pop/setdefault), ``key in m``."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        candidates: list[ast.expr | None] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            candidates.append(node.value)
        elif isinstance(node, ast.Dict):
            candidates.extend(node.keys)
        elif isinstance(node, ast.Subscript):
            candidates.append(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "pop", "setdefault") and node.args:
                candidates.append(node.args[0])
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            candidates.append(node.left)
        lines.extend(c.lineno for c in candidates if isinstance(c, ast.Constant) and c.value == key)
    return sorted(lines)


def _line_of(path: Path, start: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(start))


@given(
    head=st.lists(
        st.sampled_from(
            [
                MARKER_PREFIX,
                " call x",
                " was shortened from 1 to 2 characters",
                ". The full result was not archived.",
                "]",
                "text\n",
            ]
        ),
        max_size=30,
    )
)
def test_the_note_that_ends_a_result_is_found_whatever_the_result_quotes(head: list[str]) -> None:
    """A result may quote the note's prefix and pieces of notes (a page about tracetrim); only the
    note rebuild appended, at its end, is read."""
    note = shortened_note("read_file", "c9", 5000, 700, REF)
    assert parse_shortened_note("".join(head) + "\n" + note) == ShortenedNote("c9", 5000, REF)
    quoted = "".join(head) + "\nmore output"
    assert parse_shortened_note(quoted) is None


def test_reading_a_note_is_linear_in_what_the_result_quotes() -> None:
    """Megabytes quoting the prefix: each quote was once matched to the end of the text."""
    finishes(
        "from tracetrim._marker import MARKER_PREFIX, ShortenedNote, parse_shortened_note, shortened_note\n"
        "spam = (MARKER_PREFIX + 'x call y was shortened from 1 to 2 characters') * 40_000\n"
        "note = shortened_note('fetch', 'c1', 3_000_000, 900, '')\n"
        "assert parse_shortened_note(spam + note) == ShortenedNote('c1', 3_000_000, '')\n"
        "assert parse_shortened_note(spam + ']') is None\n"
        "removed = MARKER_PREFIX + ' call x (1 characters) was removed;' * 60_000 + ']'\n"
        "assert parse_shortened_note(removed) is None\n"
    )
