"""restore_calls, calls_history and rehydrate's alignment read a history once, with the answers they had."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hang_guard import finishes
from tracetrim._marker import tombstone_block, tombstone_call_id
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._validators import FieldValueError
from tracetrim.archive import CallNotFoundError, _rehydrate, rehydrate, restore_calls
from tracetrim.archive._calls import CallBlocks, calls_history, find_call, tool_key
from tracetrim.archive._protocol import Archive

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")
CALL_IDS = ["c0", "c1", "c2", "c3"]
_Key = tuple[str, str]


class _Archive:
    """An archive holding one snapshot: what restore_calls reads, and nothing else."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    async def restore(self, scope: Scope, ref: str) -> list[Message]:
        return self.messages


def reference_find_call(messages: list[Message], call_id: str) -> CallBlocks | None:
    """`find_call` as it was, one scan of the history per id: the oracle for the index."""
    found: dict[str, Any] = {}
    for message in messages:
        for block in message.get("content", ()):
            key = tool_key(block)
            if key is not None and key[1] == call_id and key[0] not in found:
                found[key[0]] = copy.deepcopy(block)
    if not found:
        return None
    return CallBlocks(call_id=call_id, call=found.get("tool_call"), result=found.get("tool_result"))


def _signature(block: dict[str, Any]) -> object:
    key = tool_key(block)
    return key if key is not None else block


def reference_derives_from(archived: Message, current: Message, dropped: set[_Key]) -> bool:
    """`_derives_from` as it was, working the archived message out again for each candidate."""
    if current.get("role") != archived.get("role") or current.get("id") != archived.get("id"):
        return False
    kept = [_signature(b) for b in archived["content"] if tool_key(b) not in dropped]
    stones = [call for b in current["content"] if (call := tombstone_call_id(b)) is not None]
    if any(("tool_call", call) not in dropped for call in stones):
        return False
    if archived["content"] and not kept and not stones:
        return False
    now = [b for b in current["content"] if tombstone_call_id(b) is None]
    return len(now) >= len(kept) and all(_signature(b) == k for b, k in zip(now, kept, strict=False))


def reference_align(archived: list[Message], current: list[Message], dropped: set[_Key]) -> dict[int, int]:
    """`_align` as it was, scanning the rest of ``current`` for each message that went: the oracle."""
    mapping: dict[int, int] = {}
    cursor = 0
    for i, message in enumerate(archived):
        content = message["content"]
        c = next(
            (c for c in range(cursor, len(current)) if reference_derives_from(message, current[c], dropped)),
            None,
        )
        if c is None and content and all(tool_key(b) in dropped for b in content):
            continue
        if c is None:
            label = f"archived message {i}" + (f" ({message['id']!r})" if "id" in message else "")
            if any(reference_derives_from(message, current[c], dropped) for c in range(cursor)):
                raise FieldValueError(f"current history reorders {label}")
            raise FieldValueError(f"cannot align {label} with the current history")
        mapping[i] = c
        cursor = c + 1
    return mapping


def _holding(messages: list[Message]) -> Archive:
    """An archive whose every snapshot is ``messages``."""
    return cast(Archive, _Archive(messages))


def _outcome(align: Any, archived: list[Message], current: list[Message], dropped: set[_Key]) -> object:
    try:
        return align(archived, current, dropped)
    except FieldValueError as error:
        return str(error)


def _block(kind: str, call_id: str) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": call_id}
    if kind == "tombstone":
        return tombstone_block("t", call_id, "{}", "r" * 64)
    if kind == "tool_call":
        return {"type": "tool_call", "id": call_id, "name": "t", "input": "{}", "state": "finished"}
    return {"type": "tool_result", "id": call_id, "name": "t", "output": call_id, "state": "success"}


_blocks = st.lists(
    st.builds(
        _block,
        st.sampled_from(["text", "tool_call", "tool_result", "tool_call", "tool_result"]),
        st.sampled_from(CALL_IDS),
    ),
    max_size=3,
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    message: Message = {"role": draw(st.sampled_from(["user", "assistant"])), "content": draw(_blocks)}
    message_id = draw(st.sampled_from([None, "a", "b", "c0"]))  # ids repeat, and may be a call's id
    if message_id is not None:
        message["id"] = message_id
    return message


@st.composite
def _compacted(draw: st.DrawFn, archived: list[Message], dropped: set[_Key]) -> list[Message]:
    """``archived`` as compaction leaves it, mostly: dropped blocks gone (a tombstone now and then
    where a call stood), emptied messages gone or kept, host messages put in, and now and then a
    message moved, a tombstone for a kept call or a block appended."""
    current: list[Message] = []
    for message in archived:
        if draw(st.integers(0, 5)) == 0:
            current.append(draw(_message()))  # a message the host put in
        content = []
        for block in message["content"]:
            key = tool_key(block)
            if key not in dropped:
                content.append(block)
            elif key is not None and key[0] == "tool_call" and draw(st.booleans()):
                content.append(_block("tombstone", key[1]))
        if message["content"] and not content and draw(st.integers(0, 3)):
            continue  # every block went, and so did the message
        if draw(st.integers(0, 7)) == 0:
            content.append(
                draw(st.builds(_block, st.sampled_from(["text", "tombstone"]), st.sampled_from(CALL_IDS)))
            )
        current.append({**message, "content": content})
    if len(current) > 1 and draw(st.integers(0, 7)) == 0:
        i, j = draw(st.integers(0, len(current) - 1)), draw(st.integers(0, len(current) - 1))
        current[i], current[j] = current[j], current[i]
    return current


@st.composite
def _alignments(draw: st.DrawFn) -> tuple[list[Message], list[Message], set[_Key]]:
    archived = draw(st.lists(_message(), max_size=10))
    keys = sorted({key for m in archived for b in m["content"] if (key := tool_key(b)) is not None})
    dropped = set(draw(st.lists(st.sampled_from(keys), unique=True))) if keys else set()
    if draw(st.integers(0, 9)) == 0:
        dropped.add(("tool_call", draw(st.sampled_from(CALL_IDS))))  # a key the history may not hold
    current = draw(_compacted(archived, dropped)) if draw(st.integers(0, 9)) else draw(st.lists(_message()))
    return archived, current, dropped


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_alignments())
def test_align_matches_the_scan_per_message(case: tuple[list[Message], list[Message], set[_Key]]) -> None:
    archived, current, dropped = case
    expected = _outcome(reference_align, archived, current, dropped)
    assert _outcome(_rehydrate._align, archived, current, dropped) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_alignments(), some=st.none() | st.lists(st.sampled_from(CALL_IDS), max_size=2))
def test_rehydrate_matches_the_scan_per_message(
    case: tuple[list[Message], list[Message], set[_Key]], some: list[str] | None
) -> None:
    archived, current, _ = case

    def attempt() -> object:
        try:
            return rehydrate(current, archived, some)
        except (ValueError, CallNotFoundError) as error:
            return f"{type(error).__name__}: {error}"

    got = attempt()
    with mock.patch.object(_rehydrate, "_align", reference_align):
        assert got == attempt()


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(_message(), max_size=8), asked=st.lists(st.sampled_from([*CALL_IDS, "c9"]), max_size=6)
)
def test_restore_calls_and_calls_history_answer_as_the_scan_per_id(
    messages: list[Message], asked: list[str]
) -> None:
    expected = [reference_find_call(messages, call_id) for call_id in asked]
    assert [find_call(messages, call_id) for call_id in asked] == expected
    if None in expected:
        missing = asked[expected.index(None)]
        with pytest.raises(CallNotFoundError, match=repr(missing)):
            asyncio.run(restore_calls(_holding(messages), SCOPE, "ref", asked))
        with pytest.raises(CallNotFoundError, match=repr(missing)):
            calls_history(messages, asked)
        return
    restored = asyncio.run(restore_calls(_holding(messages), SCOPE, "ref", asked))
    assert restored == expected
    blocks = [b for c in restored for b in (c.call, c.result) if b is not None]
    assert len({id(b) for b in blocks}) == len(blocks)  # each answer a copy of its own, repeats too
    history = calls_history(messages, asked)
    assert [b for m in history for b in m["content"]] == [
        b for m in messages for b in m["content"] if (key := tool_key(b)) is not None and key[1] in asked
    ]


def test_restoring_every_call_of_a_long_snapshot_reads_it_once() -> None:
    """One scan of the snapshot per asked id: 4,000 pairs and ids took 30 s, 16,000 would take minutes."""
    finishes(
        "import asyncio\n"
        "from tracetrim.archive import restore_calls\n"
        "from tracetrim.archive._calls import calls_history\n"
        "def pair(k):\n"
        "    return {'id': f'm{k}', 'role': 'assistant', 'content': [\n"
        "        {'type': 'tool_call', 'id': f'c{k}', 'name': 't', 'input': '{}', 'state': 'finished'},\n"
        "        {'type': 'tool_result', 'id': f'c{k}', 'name': 't', 'output': 'ok', 'state': 'success'}]}\n"
        "messages = [pair(k) for k in range(16_000)]\n"
        "ids = [f'c{k}' for k in range(16_000)]\n"
        "class Archive:\n"
        "    async def restore(self, scope, ref):\n"
        "        return messages\n"
        "restored = asyncio.run(restore_calls(Archive(), None, 'ref', ids))\n"
        "assert [c.call_id for c in restored] == ids and restored[-1].result['output'] == 'ok'\n"
        "assert len(calls_history(messages, ids)) == 16_000\n"
    )


def test_rehydrating_many_messages_that_went_aligns_in_one_pass() -> None:
    """Each archived message that went entirely scanned the rest of the current history: a call in one
    message and its result in the next, every result message gone, 8,000 messages took 5 s and
    64,000 would take minutes."""
    finishes(
        "from tracetrim.archive import rehydrate\n"
        "def message(k, kind, **fields):\n"
        "    block = {'type': kind, 'id': f'c{k}', 'name': 't', **fields}\n"
        "    return {'id': f'm{k}-{kind}', 'role': 'assistant', 'content': [block]}\n"
        "archived = [{'id': 'm0', 'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]\n"
        "for k in range(1, 32_000):\n"
        "    archived.append(message(k, 'tool_call', input='{}'))\n"
        "    archived.append(message(k, 'tool_result', output='ok', state='success'))\n"
        "current = [m for m in archived if m['content'][0]['type'] != 'tool_result']\n"
        "assert rehydrate(current, archived) == archived\n"
    )
