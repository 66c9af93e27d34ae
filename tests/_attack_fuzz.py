"""Nasty generated histories and the invariants every plan must keep (shared by tests and benchmarks/fuzz.py).

The generator aims at what an adversarial run found: repeated message and tool-call ids, results
before their calls, calls without results and results without calls, non-text outputs, lone
surrogates, deep nesting (inside call inputs and in metadata), huge strings. The checker runs a
real `Compactor` over a real in-memory archive (the decision model is mostly scripted, the
invariants must hold whatever a model answers; sometimes the embedded learned judge, which reads
the whole history itself) and returns the first broken invariant, or None.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import json
import zlib
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

import tracetrim as tt
from tracetrim._marker import is_tombstone
from tracetrim.archive import KeyValueArchive, MemoryStore, rehydrate
from tracetrim.decision import BinaryQuestion, LearnedDecisionModel, ScriptedDecisionModel

SCOPE = tt.Scope("fuzz-user", "fuzz-agent", "fuzz-session")
TOOLS = ("read_file", "search", "shell")
_CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4", "c5", "c6"])
_MESSAGE_IDS = st.one_of(st.none(), st.sampled_from(["m1", "m2", "m3", "dup"]))


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def _deep_json(levels: int) -> str:
    return '{"x": ' + "[" * levels + "]" * levels + "}"


_SURROGATES = st.sampled_from(["lone \ud800 surrogate", "\udfff", "tail \ud83d"])
_CHARS = st.characters(codec="utf-8")  # surrogates only where _POISON puts them
_TEXT = st.one_of(
    st.text(_CHARS, max_size=30),
    st.text(_CHARS, max_size=300),
    st.integers(5_000, 120_000).map(lambda n: "huge " + "x" * n),
    st.sampled_from(["[tracetrim: shortened", "{", "]", "\x00", "NaN"]),
)
_INPUT = st.one_of(
    st.dictionaries(
        st.sampled_from(["path", "q", "n"]),
        st.one_of(st.text(_CHARS, max_size=20), st.integers()),
        max_size=3,
    ).map(json.dumps),
    st.sampled_from(["not json", "[1, 2]", '{"x": NaN}', '{"x": Infinity}', '{"p": "\\ud800"}', "", "{"]),
    st.integers(150, 3_000).map(_deep_json),
    st.integers(150, 3_000).map(lambda n: "[" * n),
    st.integers(150, 3_000).map(lambda n: '{"s": "' + "[" * n + '"}'),
)
_OUTPUT = st.one_of(
    _TEXT,
    st.integers(400, 6_000).map(lambda n: "".join(f"line {i}: content\n" for i in range(n // 16))),
    st.lists(_TEXT.map(lambda t: {"type": "text", "text": t}), max_size=3),
    st.just([{"type": "image", "url": "file:///tmp/x.png"}]),
    st.just([{"type": "text", "text": "part"}, {"type": "data", "data": {"k": 1}}]),
)
_METADATA = st.one_of(
    st.just({}),
    st.just({"tracetrim": {"pinned": True}}),
    st.just({"score": 1e-9, "big": 2**70}),
    st.integers(150, 190).map(lambda n: {"deep": _nested(n)}),
)
# Values that make a whole history invalid: drawn for one history in four, into one random place.
_POISON = st.one_of(
    _SURROGATES.map(lambda t: ("text", t)),
    st.integers(201, 230).map(lambda n: ("metadata", {"deep": _nested(n)})),
    _SURROGATES.map(lambda t: ("metadata", {"note": t})),
)


@st.composite
def _call(draw: Any) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": draw(_CALL_IDS),
        "name": draw(st.sampled_from(TOOLS)),
        "input": draw(_INPUT),
        "state": draw(st.sampled_from(["finished", "finished", "pending"])),
    }


@st.composite
def _result(draw: Any, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        "id": call_id or draw(_CALL_IDS),
        "name": name or draw(st.sampled_from(TOOLS)),
        "output": draw(_OUTPUT),
        "state": draw(st.sampled_from(["success", "success", "error"])),
    }
    if draw(st.booleans()):
        block["metadata"] = draw(_METADATA)
    return block


@st.composite
def _pair(draw: Any) -> list[dict[str, Any]]:
    """A well-formed pair (so that plans really compact): call and result, maybe in one message."""
    call = draw(_call())
    call["id"] = draw(st.sampled_from([f"p{n}" for n in range(40)]))
    call["state"] = "finished"
    call["input"] = json.dumps({"path": draw(st.text(_CHARS, max_size=12))})
    if draw(st.integers(0, 4)) == 4:
        call["input"] = draw(st.integers(150, 3_000).map(_deep_json))
    result = draw(_result(call["id"], call["name"]))
    result["state"] = "success"
    result["output"] = "".join(f"line {i} of {call['id']}\n" for i in range(draw(st.integers(20, 300))))
    return [call, result]


_BLOCK = st.one_of(
    _TEXT.map(lambda t: {"type": "text", "text": t}),
    _TEXT.map(lambda t: {"type": "thinking", "thinking": t}),
    _call(),
    _result(),
    st.just({"type": "hint", "hint": "carried through"}),
)


@st.composite
def _message(draw: Any) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "assistant", "system"]))
    if draw(st.booleans()):
        role = "assistant"
        content = draw(_pair())
    else:
        content = draw(st.lists(_BLOCK, max_size=4))
    message: dict[str, Any] = {"role": role, "content": content}
    message_id = draw(_MESSAGE_IDS)
    if message_id is not None:
        message["id"] = message_id
    if draw(st.integers(0, 4)) == 0:
        message["metadata"] = draw(_METADATA)
    return message


@st.composite
def nasty_histories(draw: Any) -> list[dict[str, Any]]:
    """A history of 1 to 24 messages built to break a planner; one in four carries a poison value."""
    first = {"role": "user", "content": [{"type": "text", "text": draw(_TEXT)}]}
    messages = [first, *draw(st.lists(_message(), min_size=2, max_size=23))]
    if draw(st.integers(0, 3)) == 3:  # not 0: hypothesis favours the simplest value
        where, value = draw(_POISON)
        target = messages[draw(st.integers(0, len(messages) - 1))]
        if where == "text":
            target["content"].append({"type": "text", "text": value})
        else:
            target["metadata"] = value
    return messages


@st.composite
def settings_for_plan(draw: Any) -> dict[str, Any]:
    """The planner's knobs and the scripted model's seed for one example."""
    return {
        "recent": draw(st.integers(0, 3)),
        "seed": draw(st.integers(0, 2**16)),
        "mode": draw(st.sampled_from([tt.Mode.ENFORCE, tt.Mode.ENFORCE, tt.Mode.SHADOW])),
        "learned": draw(st.integers(0, 3)) == 3,
    }


def _answers(seed: int) -> Any:
    def answer(name: str, question: BinaryQuestion, state: Any) -> float:
        return (zlib.crc32(f"{seed}:{name}".encode()) % 3) / 2  # 0, 0.5 or 1

    return answer


def _tool_counts(messages: Sequence[Any]) -> collections.Counter[tuple[str, str]]:
    return collections.Counter(
        (b["type"], b["id"])
        for m in messages
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") in ("tool_call", "tool_result")
    )


def _prose(messages: Sequence[Any]) -> list[tuple[str, Any]]:
    """The text and thinking blocks, in order; the tombstones a plan leaves for dropped calls are its
    own, not the host's."""
    return [
        (b["type"], b.get(b["type"]))
        for m in messages
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") in ("text", "thinking") and not is_tombstone(b)
    ]


def _orphans_added(before: Sequence[Any], after: Sequence[Any]) -> list[str]:
    """Call ids whose pairing the plan changed other than by removing a whole pair."""
    old, new = _tool_counts(before), _tool_counts(after)
    broken = []
    for call_id in {i for _, i in old} | {i for _, i in new}:
        was = (old[("tool_call", call_id)], old[("tool_result", call_id)])
        now = (new[("tool_call", call_id)], new[("tool_result", call_id)])
        if now != was and not (now == (0, 0) and was == (1, 1)):
            broken.append(f"{call_id}: {was} -> {now}")
    return broken


async def check_history(messages: list[dict[str, Any]], knobs: dict[str, Any]) -> str | None:
    """Plan and compact ``messages``; the first invariant broken, or None when all hold."""
    problem, _ = await run_history(messages, knobs)
    return problem


async def run_history(messages: list[dict[str, Any]], knobs: dict[str, Any]) -> tuple[str | None, Any]:
    """`check_history`'s verdict and the plan's `Outcome` (None when plan itself raised)."""
    before = copy.deepcopy(messages)
    archive = KeyValueArchive(MemoryStore())
    model = LearnedDecisionModel() if knobs["learned"] else ScriptedDecisionModel(_answers(knobs["seed"]))
    compactor = tt.Compactor(
        model,
        config=tt.CompactorConfig(
            eligible_tools=set(TOOLS), preserve_recent_messages=knobs["recent"], minimum_reduction=0.0
        ),
        execution=tt.ExecutionOptions(mode=knobs["mode"], budget_s=60.0),
        archive=archive,
    )
    request = tt.CompactionRequest(messages, goal="fix it", scope=SCOPE)
    try:
        outcome = await compactor.plan(request)
        compacted = await compactor.compact(request)
    except Exception as exc:  # the invariant under test: nothing escapes plan or compact
        return f"raised {type(exc).__name__}: {exc}"[:500], None
    return await _verdict(messages, before, knobs, outcome, compacted, archive), outcome


async def _verdict(
    messages: list[dict[str, Any]],
    before: list[dict[str, Any]],
    knobs: dict[str, Any],
    outcome: Any,
    compacted: Any,
    archive: KeyValueArchive,
) -> str | None:
    if messages != before:
        return "the caller's history was mutated"
    if outcome.status is tt.Status.ERROR and outcome.reason == "INTERNAL_ERROR":
        return f"INTERNAL_ERROR: {outcome.detail}"[:500]
    plan = outcome.plan
    if plan is None:
        return None
    if _prose(plan.messages) != _prose(before):
        return "a text or thinking block changed"
    broken = _orphans_added(before, plan.messages)
    if broken:
        return f"pairing broken: {broken[:3]}"
    tt.validate_messages(plan.messages)
    if knobs["mode"] is tt.Mode.ENFORCE:
        expected = plan.messages if outcome.adopted else before
        if compacted != expected:
            return "compact returned neither the adopted proposal nor the original"
        if outcome.adopted:
            restored = await archive.restore(SCOPE, plan.archive_ref)
            if restored != before:
                return "the archived original does not restore exactly"
            if rehydrate(plan.messages, restored) != before:
                return "rehydrate does not give the original back"
            # With only shortened results (no pair dropped) the offload restore gives it all back.
            only_shortened = all(d.action.value != "drop_call" for d in plan.decisions)
            if only_shortened and await tt.restore_offloaded(plan.messages, archive, SCOPE) != before:
                return "restore_offloaded does not give the original back"
    elif compacted is not None:
        return "SHADOW compact returned a history"
    return None


def check(messages: list[dict[str, Any]], knobs: dict[str, Any]) -> str | None:
    """`check_history` on a fresh event loop."""
    return asyncio.run(check_history(messages, knobs))


def run(messages: list[dict[str, Any]], knobs: dict[str, Any]) -> tuple[str | None, Any]:
    """`run_history` on a fresh event loop."""
    return asyncio.run(run_history(messages, knobs))
