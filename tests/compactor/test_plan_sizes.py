"""The planner's size accounting: a rebuilt history is measured by the messages it changed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tracetrim._json import canonical_json
from tracetrim.compactor._flow import rebuilt_length

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
