"""The excerpt a shortened result keeps: head, lines only it holds, error lines, a note counting lines."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import tracetrim as tt
from tracetrim._marker import parse_shortened_note
from tracetrim.compactor._excerpt import (
    _ERROR_LINE,
    _error_units,
    _units,
    excerpt,
    excerpt_shorter_than,
    salience,
)
from tracetrim.decision import ScriptedDecisionModel


def _message(i: int, *blocks: dict[str, Any], role: str = "assistant") -> dict[str, Any]:
    return {"id": f"m{i}", "role": role, "content": list(blocks)}


def _history(listing: str) -> list[dict[str, Any]]:
    call = {"type": "tool_call", "id": "c1", "name": "read_file", "input": json.dumps({"path": "big.py"})}
    result = {"type": "tool_result", "id": "c1", "name": "read_file", "output": listing, "state": "success"}
    history = [
        _message(0, {"type": "text", "text": "Fix the reader."}, role="user"),
        _message(1, call | {"state": "finished"}),
        _message(2, result),
    ]
    history += [_message(3 + n, {"type": "text", "text": f"step {n} of filler"}) for n in range(8)]
    return history


def _listing() -> str:
    lines = ["    value = common_helper(value)"] * 400
    lines[211] = "    return decode_frame_v2(payload)"
    lines[305] = "ValueError: frame too short"
    return "\n".join(lines)


def test_a_line_only_this_result_holds_survives_from_the_middle() -> None:
    history = _history(_listing())
    index = salience(history)
    cut = excerpt(_listing(), 2, index, head=300, tail=0, budget=700)
    assert "return decode_frame_v2(payload)" in cut.text  # line 212 of 400: not in any head
    assert "ValueError: frame too short" in cut.text  # an error line
    assert cut.total_lines == 400
    assert cut.kept_lines < 20
    assert len(cut.text) <= 300 + 100 + 700  # head (whole lines), gaps, budget
    assert "…\n" in cut.text  # the skipped stretches are marked


def test_without_a_budget_the_cut_is_the_plain_head() -> None:
    cut = excerpt(_listing(), 2, salience(_history(_listing())), head=300, tail=0, budget=0)
    assert cut.text == _listing()[:300]


def test_compactor_excerpts_and_the_note_counts_lines() -> None:
    history = _history(_listing())
    model = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1)})
    config = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0)
    outcome = asyncio.run(tt.Compactor(model, config=config).plan(tt.CompactionRequest(history)))
    assert outcome.plan is not None
    output = outcome.plan.messages[2]["content"][0]["output"]
    assert "return decode_frame_v2(payload)" in output
    assert "of 400 lines)" in output
    note = parse_shortened_note(output)
    assert note is not None and note.call_id == "c1" and note.original_chars == len(_listing())
    assert history[2]["content"][0]["output"] == _listing()  # the caller's history is untouched

    seed = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0, excerpt_chars=0)
    outcome = asyncio.run(tt.Compactor(model, config=seed).plan(tt.CompactionRequest(history)))
    assert outcome.plan is not None
    output = outcome.plan.messages[2]["content"][0]["output"]
    assert output.startswith(_listing()[:300] + "\n[tracetrim:")  # the first round's head-only cut
    assert "decode_frame_v2" not in output


def test_a_huge_first_line_is_cut_at_the_head() -> None:
    text = "<a.txt>\n" + "r" * 3000 + "\nlast_line_only_here = 1\n"
    history = _history(text)
    cut = excerpt(text, 2, salience(history), head=300, tail=0, budget=700)
    assert cut.text.startswith(text[:300] + "\n…\n")
    assert "last_line_only_here = 1" in cut.text
    assert len(cut.text) < 400


def test_a_one_line_record_keeps_its_unshared_value_not_the_rest() -> None:
    record = (
        ", ".join(f'"field_{n}": "common"' for n in range(60))
        + ', "booking": "ZX81Q4", '
        + (", ".join(f'"more_{n}": "common"' for n in range(60)))
    )
    history = _history("{" + record + "}")
    for message in history[3:]:  # the field names appear elsewhere: only the booking code is news
        message["content"][0]["text"] += " " + record.replace("ZX81Q4", "")
    cut = excerpt("{" + record + "}", 2, salience(history), head=100, tail=0, budget=300)
    assert '"booking": "ZX81Q4"' in cut.text
    assert len(cut.text) < 100 + 300 + 20
    assert cut.total_lines == 1


def test_a_result_the_excerpt_would_barely_shorten_stays_whole() -> None:
    listing = "\n".join(f"unique_name_{n} = {n}" for n in range(110))  # every line has a name of its own
    history = _history(listing)
    cut = excerpt(listing, 2, salience(history), head=300, tail=0, budget=700)
    assert 0.4 * len(listing) < len(cut.text) + 300 < len(listing)  # shorter, but not by enough
    model = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1)})
    config = tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0)
    outcome = asyncio.run(tt.Compactor(model, config=config).plan(tt.CompactionRequest(history)))
    assert outcome.plan is not None
    (decision,) = outcome.plan.decisions
    assert (decision.action, decision.reason) == (tt.Action.KEEP, "already_short")
    assert outcome.plan.messages[2]["content"][0]["output"] == listing


# The fast paths below must give exactly what the plain definitions give: the plan's results may not
# change with them. Each is checked against a reference written the slow, obvious way.

_TERM = re.compile(r"[A-Za-z0-9_]{3,}")
_ALPHABET = "ab_Z1 \n\t,.:EeRrOoFfAaIiLlSsTtCcKkBbXxPpNn\u212a\u0130\u017f\u00e9\u2028\r"
_WORDS = ("error", "Traceback", "FAIL", "assert", "exception", "value_1", "fooBar", "the", "x" * 170)


def _reference_only_in(messages: list[dict[str, Any]]) -> dict[str, int]:
    """The salience index as first written: per term, the only message mentioning it."""
    only_in: dict[str, int] = {}
    for at, message in enumerate(messages):
        for block in message["content"]:
            for key in ("text", "input", "output"):
                value = block.get(key)
                texts = [value] if isinstance(value, str) else []
                if isinstance(value, list):
                    texts = [str(b.get("text", "")) for b in value if isinstance(b, dict)]
                for text in texts:
                    for term in set(_TERM.findall(text.lower())):
                        if only_in.setdefault(term, at) != at:
                            only_in[term] = -1
    return {term: at for term, at in only_in.items() if at != -1}


_texts = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_ALPHABET, max_size=40)), max_size=40
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=6))
def test_salience_matches_the_plain_definition(texts: list[str]) -> None:
    history = [_message(n, {"type": "text", "text": text}) for n, text in enumerate(texts)]
    history.append(_message(len(texts), {"type": "tool_result", "id": "c", "output": [{"text": texts[0]}]}))
    reference = _reference_only_in(history)
    index = salience(history)
    for at in range(len(history)):
        expected = {term for term, where in reference.items() if where == at}
        assert {term for term in index.unique_to(at) if len(term) >= 3} == expected


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_error_pieces_match_a_search_of_each_piece(text: str) -> None:
    units, _ = _units(text)
    starts = list(itertools.accumulate(map(len, units), initial=0))
    assert _error_units(text, units, starts) == {n for n, u in enumerate(units) if _ERROR_LINE.search(u)}


def test_an_error_word_cut_across_two_pieces_is_found_where_each_piece_alone_shows_one() -> None:
    # A 200-character line with no space is cut at 160: "assert" straddles the cut, and the second
    # piece starts with "traceback", which a scan of the whole text would step over.
    text = "x" * 155 + "assertraceback" + "y" * 31
    units, _ = _units(text)
    assert len(units) == 2 and units[1].startswith("traceback")
    starts = list(itertools.accumulate(map(len, units), initial=0))
    assert _error_units(text, units, starts) == {1}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_ALPHABET, max_size=30)), max_size=120),
    st.integers(0, 400),
    st.integers(0, 60),
    st.integers(0, 900),
    st.integers(0, 1500),
)
def test_an_excerpt_given_up_early_was_at_least_that_long(
    parts: list[str], head: int, tail: int, budget: int, chars: int
) -> None:
    text = "\n".join(" ".join(parts[n : n + 6]) for n in range(0, len(parts), 6))
    history = _history(text)
    history[4]["content"][0]["text"] += " value_1 fooBar"
    index = salience(history)
    full = excerpt(text, 2, index, head=head, tail=tail, budget=budget)
    early = excerpt_shorter_than(text, 2, index, head=head, tail=tail, budget=budget, chars=chars)
    assert early == full if early is not None else len(full.text) >= chars


def test_salience_reads_the_history_only_when_an_excerpt_needs_it() -> None:
    history = _history(_listing())
    index = salience(history)
    assert "unread" in repr(index)
    # Error lines alone fill more than the room left: no identifier can change that.
    text = "\n".join(["ok"] * 10 + [f"AssertionError: frame {n} too short" for n in range(30)])
    assert excerpt_shorter_than(text, 2, index, head=10, tail=0, budget=700, chars=100) is None
    assert "unread" in repr(index)
    excerpt(_listing(), 2, index, head=300, tail=0, budget=700)
    assert "unread" not in repr(index)
