"""Snapshot validation: bad input is refused with the message index, block index and field named."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from tests._histories import assistant, call, result, tool_history, user
from tracetrim import SnapshotError, validate_messages


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ("not a list", "messages must be a list"),
        ([42], "message 0: a message must be an object"),
        ([{"role": "robot", "content": []}], "message 0, field 'role'"),
        ([{"role": "user", "content": "hi"}], "message 0, field 'content'"),
        ([{"role": "user", "id": 7, "content": []}], "message 0, field 'id'"),
        ([{"role": "user", "content": [], "metadata": []}], "message 0, field 'metadata'"),
        (
            [user("m0", "x"), {"role": "user", "content": ["x"]}],
            "message 1, block 0: a block must be an object",
        ),
        ([{"role": "user", "content": [{"text": "x"}]}], "message 0, block 0, field 'type'"),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "message 0, block 0, field 'text'"),
        ([assistant("a", {"type": "tool_call", "id": "c", "name": "n", "input": {}})], "field 'input'"),
        ([assistant("a", {"type": "tool_call", "id": "", "name": "n", "input": "{}"})], "field 'id'"),
        ([assistant("a", {"type": "tool_result", "id": "c", "name": "n", "output": 5})], "field 'output'"),
        ([assistant("a", {**call("c"), "state": 1})], "field 'state'"),
        ([assistant("a", {**result("c"), "metadata": "x"})], "block 0, field 'metadata'"),
    ],
)
def test_bad_input_names_where(messages: Any, where: str) -> None:
    with pytest.raises(SnapshotError, match=None) as info:
        validate_messages(messages)
    assert where in str(info.value)
    assert isinstance(info.value, ValueError)


def test_nan_anywhere_is_refused_with_message_index() -> None:
    messages = [user("m0", "x"), user("m1", "y", metadata={"score": math.nan})]
    with pytest.raises(SnapshotError, match="message 1"):
        validate_messages(messages)


def test_copy_is_deep_and_input_untouched() -> None:
    messages = tool_history(3)
    before = copy.deepcopy(messages)
    copied = validate_messages(messages)
    assert copied == messages
    copied[1]["content"][0]["text"] = "changed"
    assert messages == before


def test_unknown_fields_and_blocks_survive_in_order() -> None:
    message = {"role": "assistant", "zeta": 1, "content": [{"type": "hint", "x": [1, 2]}], "alpha": {"b": 1}}
    copied = validate_messages([message])
    assert list(copied[0]) == ["role", "zeta", "content", "alpha"]
    assert copied[0]["content"][0] == {"type": "hint", "x": [1, 2]}


def test_transcript_size_is_the_canonical_size() -> None:
    from tracetrim._json import canonical_json
    from tracetrim.compactor._transcript import load_transcript

    messages = tool_history(3) + [
        {"role": "user", "z": "é✓", "content": [{"type": "text", "text": "ünï"}], "a": 1}
    ]
    transcript = load_transcript(messages, 10**9)
    assert transcript.chars == len(canonical_json(messages))


def test_a_copy_is_measured_as_the_whole_history_would_be() -> None:
    import hashlib

    from tracetrim._json import canonical_bytes, canonical_json
    from tracetrim._snapshot import copy_messages, history_digest

    messages = tool_history(3) + [{"role": "user", "z": "é✓", "content": [{"type": "text", "text": "ü"}]}]
    copied = copy_messages(messages)
    assert copied.messages == messages
    assert list(copied.sizes) == [len(canonical_json(message)) for message in messages]
    assert copied.chars == len(canonical_json(messages))
    # canonical, not the host's key order: the same bytes an archive stores and names
    assert copied.digest == history_digest(messages) == hashlib.sha256(canonical_bytes(messages)).digest()
    assert history_digest([]) == hashlib.sha256(b"[]").digest()
