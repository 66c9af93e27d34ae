"""The excerpt a shortened result keeps: head, lines only it holds, error lines, a note counting lines."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tracetrim as tt
from tracetrim._marker import parse_shortened_note
from tracetrim.compactor._excerpt import excerpt, salience
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
