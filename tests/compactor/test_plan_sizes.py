"""The planner's size accounting: a rebuilt history is measured by the messages it changed, and its
reduction by the conversation, not by what a format carries beside it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import tracetrim as tt
from tracetrim._json import canonical_json
from tracetrim.compactor._flow import rebuilt_length
from tracetrim.decision import ScriptedDecisionModel

words = st.text(alphabet='ab é…\U0001f600"\\\n', max_size=12)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.lists(st.builds(dict, text=words))}
    ),
    max_size=8,
)


@settings(max_examples=400)
@given(messages, st.lists(st.sampled_from(["keep", "replace", "drop", "add"]), max_size=10), words)
def test_a_rebuild_measures_as_its_whole_history(
    before: list[dict[str, Any]], edits: list[str], filler: str
) -> None:
    after: list[dict[str, Any]] = []
    for n, message in enumerate(before):
        edit = edits[n] if n < len(edits) else "keep"
        if edit == "keep":
            after.append(message)  # untouched: the same object, as a rebuild keeps it
        elif edit == "replace":
            after.append({**message, "content": [{"text": filler}]})
        elif edit == "add":
            after.extend([message, {"role": "user", "content": [], "n": len(filler)}])
    sizes = [len(canonical_json(message)) for message in before]
    assert rebuilt_length(before, after, sizes) == len(canonical_json(after))


def _history(carrier_chars: int) -> list[dict[str, Any]]:
    """A conversation with one long read, after a carrier as big as ``carrier_chars`` (a session file's
    bookkeeping, which a format reader keeps in a content-free system message)."""
    carrier = {
        "id": "carry-1",
        "role": "system",
        "content": [],
        "metadata": {"tracetrim.some-agent": {"carried": [{"blob": "x" * carrier_chars}]}},
    }
    read = {
        "type": "tool_call",
        "id": "c1",
        "name": "read_file",
        "input": '{"path": "a.py"}',
        "state": "finished",
    }
    body = "".join(f"line {k}: def helper_{k}(value): return value\n" for k in range(400))
    result = {"type": "tool_result", "id": "c1", "name": "read_file", "output": body, "state": "success"}
    return [
        carrier,
        {"id": "m1", "role": "user", "content": [{"type": "text", "text": "what does a.py do?"}]},
        {"id": "m2", "role": "assistant", "content": [read, result]},
        {"id": "m3", "role": "assistant", "content": [{"type": "text", "text": "It defines helpers."}]},
        {"id": "m4", "role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]


async def test_a_carrier_does_not_dilute_the_reduction() -> None:
    """The reduction the minimum gate reads is the conversation's: characters a format carries beside it
    count on both sides, so they would only shrink it (here from about 90% to about 10%)."""
    outcomes = []
    for carrier_chars in (10, 200_000):
        compactor = tt.Compactor(
            ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1)}),  # shorten the read
            config=tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=2),
            execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW),
        )
        request = tt.CompactionRequest(_history(carrier_chars), scope=tt.Scope("u", "a", "s"))
        outcomes.append(await compactor.plan(request))
    small, big = (o.plan.stats for o in outcomes if o.plan is not None)
    assert all(o.status is tt.Status.DECIDED for o in outcomes)
    assert big.chars_before > 200_000 > small.chars_before  # the characters are the whole history's
    assert big.chars_before - big.chars_after == small.chars_before - small.chars_after
    assert abs(big.reduction - small.reduction) < 1e-3 and big.reduction > 0.5
