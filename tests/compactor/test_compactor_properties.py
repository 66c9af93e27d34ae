"""Properties of the planner over generated histories and random probabilities."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracetrim as tt
from tests._histories import assistant, call, result, text, thinking, user
from tracetrim._json import canonical_json
from tracetrim._marker import is_tombstone, tombstone_call_id
from tracetrim.decision import ScriptedDecisionModel

_KINDS = (
    "same",
    "split",
    "pending",
    "orphan_result",
    "duplicate",
    "error",
    "other_tool",
    "note",
    "list_output",
)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A task message, then a random mix of healthy pairs, broken pairs and plain text."""
    messages: list[dict[str, Any]] = [user("m0", draw(st.text(max_size=30)))]
    for n, kind in enumerate(draw(st.lists(st.sampled_from(_KINDS), max_size=14))):
        cid, size = f"c{n}", draw(st.integers(0, 1500))
        words = draw(st.text(max_size=20))
        if kind == "same":
            messages.append(
                assistant(f"a{n}", thinking(words), text(words), call(cid), result(cid, size=size))
            )
        elif kind == "split":
            messages += [
                assistant(f"a{n}", call(cid)),
                assistant(f"b{n}", text(words), result(cid, size=size)),
            ]
        elif kind == "pending":
            messages.append(assistant(f"a{n}", call(cid, state="pending")))
        elif kind == "orphan_result":
            messages.append(assistant(f"a{n}", result(cid, size=size)))
        elif kind == "duplicate":
            messages.append(assistant(f"a{n}", call(cid), result(cid), call(cid), result(cid, size=size)))
        elif kind == "error":
            messages.append(assistant(f"a{n}", call(cid), result(cid, state="error", size=size)))
        elif kind == "other_tool":
            messages.append(assistant(f"a{n}", call(cid, "write_file"), result(cid, "write_file", size=size)))
        elif kind == "list_output":
            output = [{"type": "text", "text": "x" * size}]
            messages.append(assistant(f"a{n}", call(cid), result(cid, output=output)))
        else:
            messages.append(user(f"u{n}", words))
    return messages


def _blocks(messages: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(b["type"], b.get("id", ""), canonical_json(b)) for m in messages for b in m["content"]]


def _plan(messages: list[dict[str, Any]], probabilities: list[float], recent: int) -> tt.Outcome:
    def answer(name: str, question: Any, state: Any) -> float:
        kind, _, key = name.partition("_")
        index = (int(key[1:]) * 2 + (kind == "result")) % len(probabilities)
        return probabilities[index]

    config = tt.CompactorConfig(
        eligible_tools={"read_file"}, preserve_recent_messages=recent, minimum_reduction=0.0
    )
    compactor = tt.Compactor(ScriptedDecisionModel(answer), config=config)
    return asyncio.run(compactor.plan(tt.CompactionRequest(messages)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.lists(st.floats(0, 1), min_size=1, max_size=20), st.integers(0, 4))
def test_planner_invariants(messages: list[dict[str, Any]], probabilities: list[float], recent: int) -> None:
    original = copy.deepcopy(messages)
    outcome = _plan(messages, probabilities, recent)
    assert messages == original, "the caller's messages were mutated"
    # Every generated history is valid and small, so planning always reaches a plan (possibly
    # NO_CANDIDATES); a None here would silently skip every check below.
    assert outcome.plan is not None, (outcome.status, outcome.reason, outcome.detail)
    proposal = outcome.plan.messages
    stats = outcome.plan.stats
    assert stats.chars_before == len(canonical_json(original))
    if outcome.status is tt.Status.DECIDED:  # sizes measured piecewise are the whole history's sizes
        assert stats.chars_after == len(canonical_json(proposal))

    before = Counter(
        (kind, bid) for kind, bid, _ in _blocks(original) if kind in ("tool_call", "tool_result")
    )
    after = Counter((kind, bid) for kind, bid, _ in _blocks(proposal) if kind in ("tool_call", "tool_result"))
    for (kind, bid), count in after.items():
        assert count == before[(kind, bid)]
    for call_id in {bid for _, bid in before}:
        had_pair = before[("tool_call", call_id)] == 1 and before[("tool_result", call_id)] == 1
        has_call, has_result = after[("tool_call", call_id)], after[("tool_result", call_id)]
        if had_pair:
            assert has_call == has_result, f"{call_id}: a call without its result or the reverse"
        else:
            assert (has_call, has_result) == (
                before[("tool_call", call_id)],
                before[("tool_result", call_id)],
            )

    judged = {d.call_id for d in outcome.plan.decisions if d.keep_call is not None}
    untouched = [
        b for b in _blocks(original) if b[1] not in judged or b[0] not in ("tool_call", "tool_result")
    ]
    proposal_blocks = set(_blocks(proposal))
    for block in untouched:
        assert block in proposal_blocks, f"a protected, text or thinking block changed: {block[:2]}"
    stones = [b for m in proposal for b in m["content"] if is_tombstone(b)]
    dropped = [d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_CALL]
    named = [str(tombstone_call_id(b)) for b in stones]
    assert len(named) == len(set(named)) and set(named) <= set(dropped)  # at most one per dropped pair
    hosts = [{**m, "content": [b for b in m["content"] if not is_tombstone(b)]} for m in proposal]
    assert [b for b in _blocks(original) if b[0] in ("text", "thinking")] == [
        b for b in _blocks(hosts) if b[0] in ("text", "thinking")
    ]

    again = _plan(copy.deepcopy(original), probabilities, recent)
    assert again.plan is not None
    assert canonical_json(again.plan.messages) == canonical_json(proposal)
    assert again.plan.decisions == outcome.plan.decisions
