"""`compress_groups` settles which messages are free in one pass, with the result the fixpoint loop had."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hang_guard import finishes
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens, message_tokens
from tracetrim.compactor._offload._select import compress_groups
from tracetrim.compactor._pairs import protected_messages

TOOL_IDS = ["c0", "c1", "c2", "c3", "c4"]


def _reference_runs(free: Sequence[bool]) -> list[int]:
    runs, run, previous = [], -1, False
    for is_free in free:
        if is_free and not previous:
            run += 1
        runs.append(run if is_free else -1)
        previous = is_free
    return runs


def reference_compress_groups(
    messages: Sequence[Message],
    *,
    keep_recent: int,
    protected_ids: Collection[str],
    pinned_ids: Collection[str],
    protected_call_ids: Collection[str],
    max_group_tokens: int,
    count: TokenCounter,
) -> list[range]:
    """`compress_groups` as it was, freeing one link of a chain per pass: the oracle for the rewrite."""
    protected = protected_messages(
        messages, preserve_recent=keep_recent, protected_ids=protected_ids, pinned_ids=pinned_ids
    )
    free = [i not in protected for i in range(len(messages))]
    where: dict[str, set[int]] = {}
    kinds: dict[str, list[str]] = {}
    for i, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] in ("tool_call", "tool_result"):
                where.setdefault(block["id"], set()).add(i)
                kinds.setdefault(block["id"], []).append(block["type"])
    incomplete = {tid for tid, seen in kinds.items() if sorted(seen) != ["tool_call", "tool_result"]}
    incomplete.update(set(protected_call_ids) & set(kinds))
    changed = True
    while changed:
        changed = False
        runs = _reference_runs(free)
        for tool_id, at in where.items():
            same_run = len({runs[i] for i in at}) == 1 and all(free[i] for i in at)
            if tool_id in incomplete or not same_run:
                for i in at:
                    if free[i]:
                        free[i] = False
                        changed = True

    blocked = [0] * (len(messages) + 1)
    for at in where.values():
        low, high = min(at), max(at)
        if high > low:
            blocked[low + 1] += 1
            blocked[high + 1] -= 1
    spanning = 0
    cut_ok = []
    for b in range(len(messages)):
        spanning += blocked[b]
        cut_ok.append(spanning == 0)

    groups: list[range] = []
    start: int | None = None
    tokens = 0
    for i in range(len(messages) + 1):
        if i == len(messages) or not free[i]:
            if start is not None:
                groups.append(range(start, i))
            start, tokens = None, 0
            continue
        size = message_tokens(messages[i], count)
        if start is None:
            start, tokens = i, size
            continue
        if cut_ok[i] and tokens + size > max_group_tokens:
            groups.append(range(start, i))
            start, tokens = i, size
        else:
            tokens += size
    return groups


def _block(kind: str, tool_id: str, size: int) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": "t " * size}
    if kind == "tool_call":
        return {"type": "tool_call", "id": tool_id, "name": "t", "input": json.dumps({"n": size})}
    return {"type": "tool_result", "id": tool_id, "name": "t", "output": "r " * size, "state": "success"}


_blocks = st.lists(
    st.builds(
        _block,
        st.sampled_from(["text", "tool_call", "tool_result"]),
        st.sampled_from(TOOL_IDS),
        st.integers(0, 40),
    ),
    max_size=4,
)


def _scattered(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Any blocks in any messages: repeated, unanswered and stray results included."""
    return draw(st.lists(_blocks, min_size=1, max_size=12))


def _chain(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Message k holds the result of k - 1 and the call of k, some calls missing, messages put in."""
    length = draw(st.integers(1, 12))
    contents = [
        ([_block("tool_result", f"k{k - 1}", 3)] if k else [])
        + ([_block("tool_call", f"k{k}", 3)] if draw(st.integers(0, 9)) else [])
        for k in range(length)
    ]
    for _ in range(draw(st.integers(0, 3))):
        contents.insert(draw(st.integers(0, len(contents))), draw(_blocks))
    return contents


def _interleaved(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Calls and results of a few ids in any order (nested, crossing, chained), cut into messages
    at random, with text messages between and a few parts left out."""
    pairs = draw(st.integers(1, 5))
    events = [(kind, f"p{n}") for n in range(pairs) for kind in ("tool_call", "tool_result")]
    events = [e for e in draw(st.permutations(events)) if draw(st.integers(0, 11))]
    contents: list[list[dict[str, Any]]] = [[]]
    for kind, tool_id in events:
        split = draw(st.booleans())
        if split and contents[-1]:
            contents.append([])
        if draw(st.integers(0, 4)) == 0:
            contents.extend([[_block("text", "", 2)], []])
        contents[-1].append(_block(kind, tool_id, draw(st.integers(0, 20))))
    return contents


@st.composite
def _histories(draw: st.DrawFn) -> list[Message]:
    """Blocks scattered, chained or interleaved over messages; roles drawn, system included."""
    contents = draw(st.sampled_from([_scattered, _chain, _interleaved]))(draw)
    if draw(st.booleans()):  # else the first message, always protected, may hold calls and results
        contents.insert(0, [_block("text", "", 1)])
    roles = draw(
        st.lists(
            st.sampled_from(["user", "assistant", "user", "assistant", "user", "assistant", "system"]),
            min_size=len(contents),
        )
    )
    return [
        {"id": f"m{i}", "role": roles[i], "content": content, "metadata": {}}
        for i, content in enumerate(contents)
    ]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=_histories(),
    keep_recent=st.integers(0, 4),
    protected=st.sets(st.sampled_from([f"m{i}" for i in range(16)]), max_size=2),
    pinned=st.sets(st.sampled_from([f"m{i}" for i in range(16)]), max_size=2),
    protected_calls=st.sets(st.sampled_from([*TOOL_IDS, "k1", "k3", "p0", "p2"]), max_size=2),
    max_group_tokens=st.integers(1, 60),
)
def test_compress_groups_matches_the_fixpoint_loop(
    messages: list[Message],
    keep_recent: int,
    protected: set[str],
    pinned: set[str],
    protected_calls: set[str],
    max_group_tokens: int,
) -> None:
    options: dict[str, Any] = {
        "keep_recent": keep_recent,
        "protected_ids": protected,
        "pinned_ids": pinned,
        "protected_call_ids": protected_calls,
        "max_group_tokens": max_group_tokens,
        "count": estimate_tokens,
    }
    assert compress_groups(messages, **options) == reference_compress_groups(messages, **options)


def test_a_chain_with_text_inside_a_span_is_still_one_group() -> None:
    """An id whose span holds another complete id's messages and free text is not ruled out by them."""
    messages: list[Message] = [
        {"id": "m0", "role": "user", "content": [_block("text", "", 1)]},
        {"id": "m1", "role": "assistant", "content": [_block("tool_call", "a", 1)]},
        {"id": "m2", "role": "assistant", "content": [_block("tool_call", "b", 1)]},
        {"id": "m3", "role": "user", "content": [_block("text", "", 1)]},
        {"id": "m4", "role": "assistant", "content": [_block("tool_result", "b", 1)]},
        {"id": "m5", "role": "assistant", "content": [_block("tool_result", "a", 1)]},
        {"id": "m6", "role": "user", "content": [_block("text", "", 1)]},
    ]
    options: dict[str, Any] = {
        "keep_recent": 1,
        "protected_ids": (),
        "pinned_ids": (),
        "protected_call_ids": (),
        "max_group_tokens": 1000,
        "count": estimate_tokens,
    }
    assert compress_groups(messages, **options) == [range(1, 6)]
    assert compress_groups(messages, **{**options, "protected_call_ids": {"b"}}) == [range(3, 4)]


def test_a_long_chain_of_ids_is_settled_in_one_pass() -> None:
    """Message k holds k - 1's result and k's call, the last result is in the recent window, so no link
    is free: the old loop freed one link per pass, 2,000 messages took 10 s and 8,000 minutes."""
    finishes(
        "from tracetrim._tokens import estimate_tokens\n"
        "from tracetrim.compactor._offload._select import compress_groups\n"
        "def call(k):\n"
        "    return {'type': 'tool_call', 'id': f'c{k}', 'name': 't', 'input': '{}'}\n"
        "def result(k):\n"
        "    return {'type': 'tool_result', 'id': f'c{k}', 'name': 't', 'output': 'ok', 'state': 'success'}\n"
        "n = 8_000\n"
        "m = [{'id': 'm0', 'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]},\n"
        "     {'id': 'm1', 'role': 'assistant', 'content': [call(1)]}]\n"
        "for k in range(2, n):\n"
        "    m.append({'id': f'm{k}', 'role': 'assistant', 'content': [result(k - 1), call(k)]})\n"
        "m.append({'id': f'm{n}', 'role': 'assistant', 'content': [result(n - 1)]})\n"
        "groups = compress_groups(m, keep_recent=1, protected_ids=(), pinned_ids=(), protected_call_ids=(),\n"
        "                         max_group_tokens=1000, count=estimate_tokens)\n"
        "assert groups == []\n"
    )
