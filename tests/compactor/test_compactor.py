"""The orchestrator: modes, adoption after archiving, and every way a plan can fail safely."""

from __future__ import annotations

import asyncio
import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tests._histories import assistant, blocks_by_id, call, result, text, thinking, tool_history, user
from tracetrim._json import canonical_json
from tracetrim._marker import tombstone_call_id
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import BinaryQuestion, DecisionResponse, ScriptedDecisionModel

SCOPE = tt.Scope("user-1", "agent-1", "session-1")
CONFIG = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4)


def _compactor(
    model: Any,
    mode: tt.Mode = tt.Mode.SHADOW,
    *,
    archive: Any = None,
    config: Any = CONFIG,
    records: list[tt.Record] | None = None,
    budget_s: float = 5.0,
) -> tt.Compactor:
    observer = records.append if records is not None else None
    options = tt.ExecutionOptions(mode=mode, budget_s=budget_s, observer=observer)
    return tt.Compactor(model, config=config, execution=options, archive=archive)


def _drop_all() -> ScriptedDecisionModel:
    return ScriptedDecisionModel({}, default=0.0)


async def test_off_makes_no_model_call_and_returns_none() -> None:
    model = _drop_all()
    records: list[tt.Record] = []
    compactor = _compactor(model, tt.Mode.OFF, records=records)
    request = tt.CompactionRequest(tool_history(5))
    outcome = await compactor.plan(request)
    assert (outcome.status, outcome.reason, outcome.plan) == (tt.Status.SKIPPED, "DISABLED", None)
    assert await compactor.compact(request) is None
    assert model.calls == [] and [r.reason for r in records] == ["DISABLED", "DISABLED"]


async def test_shadow_proposes_but_compact_returns_none() -> None:
    messages = tool_history(5)
    original = copy.deepcopy(messages)
    records: list[tt.Record] = []
    compactor = _compactor(_drop_all(), records=records)
    outcome = await compactor.plan(tt.CompactionRequest(messages))
    assert (outcome.status, outcome.reason) == (tt.Status.DECIDED, "SHADOW_PROPOSAL")
    assert outcome.plan is not None and outcome.plan.archive_ref == "" and not outcome.adopted
    assert outcome.plan.stats.chars_after < outcome.plan.stats.chars_before
    assert await compactor.compact(tt.CompactionRequest(messages)) is None
    assert messages == original
    assert records[0].mode == "shadow" and records[0].actions == {"drop_call": 5}
    shown = repr(outcome)
    assert f"messages=<{len(outcome.plan.messages)} messages>" in shown and "decisions=<5 decisions>" in shown
    assert len(shown) < 1000


async def test_enforce_archives_the_original_before_adopting() -> None:
    messages = tool_history(5)
    original = copy.deepcopy(messages)
    archive = KeyValueArchive(MemoryStore())
    compactor = _compactor(ScriptedDecisionModel({}, default=0.0), tt.Mode.ENFORCE, archive=archive)
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert (outcome.status, outcome.reason) == (tt.Status.DECIDED, "ARCHIVED_PROPOSAL") and outcome.adopted
    assert outcome.plan is not None and len(outcome.plan.archive_ref) == 64
    assert await archive.restore(SCOPE, outcome.plan.archive_ref) == original
    assert messages == original
    compacted = await compactor.compact(tt.CompactionRequest(messages, scope=SCOPE))
    assert compacted == outcome.plan.messages
    assert not blocks_by_id(compacted, "tool_call").keys() & {f"c{n}" for n in range(1, 6)}


async def test_enforce_shortened_result_names_call_and_archive_reference() -> None:
    archive = KeyValueArchive(MemoryStore())
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    outcome = await _compactor(model, tt.Mode.ENFORCE, archive=archive).plan(
        tt.CompactionRequest(tool_history(3), scope=SCOPE)
    )
    assert outcome.plan is not None
    shortened = blocks_by_id(outcome.plan.messages, "tool_result")["c1"]
    ref = outcome.plan.archive_ref
    assert (
        "c1" in shortened["output"]
        and ref in shortened["output"]
        and "running the tool again" in shortened["output"]
    )
    assert shortened["metadata"]["tracetrim"] == {
        "action": "drop_result",
        "archive_ref": ref,
        "original_chars": len(tool_history(3)[1]["content"][2]["output"]),
    }
    assert shortened["output"].startswith(tool_history(3)[1]["content"][2]["output"][:300])


def test_enforce_needs_an_archive() -> None:
    with pytest.raises(ValueError, match="archive"):
        tt.Compactor(_drop_all(), execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE))


@pytest.mark.parametrize("strategy", ["compactor", "offload"])
async def test_a_bare_message_list_is_refused_with_a_clear_error(strategy: str) -> None:
    messages = tool_history(3)
    planner: Any = (
        _compactor(_drop_all(), tt.Mode.SHADOW)
        if strategy == "compactor"
        else tt.OffloadStrategy(config=tt.OffloadConfig(trigger_tokens=10, mode=tt.OffloadMode.COMPACT))
    )
    for call_it in (planner.plan, planner.compact):
        with pytest.raises(TypeError, match=r"CompactionRequest, got list.*CompactionRequest\(messages\)"):
            await call_it(messages)


async def test_enforce_needs_a_scope() -> None:
    archive = KeyValueArchive(MemoryStore())
    messages = tool_history(3)
    compactor = _compactor(_drop_all(), tt.Mode.ENFORCE, archive=archive)
    outcome = await compactor.plan(tt.CompactionRequest(messages))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "SCOPE_REQUIRED")
    assert await compactor.compact(tt.CompactionRequest(messages)) == messages


class _FailingArchive:
    """A stand-in archive whose save fails or returns no reference (no real archive does this on purpose)."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    async def save(self, scope: tt.Scope, messages: Sequence[Mapping[str, Any]]) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply  # type: ignore[no-any-return]

    async def restore(self, scope: tt.Scope, ref: str) -> list[Any]:
        raise NotImplementedError

    async def list(self, scope: tt.Scope) -> list[Any]:
        return []

    async def delete(self, scope: tt.Scope, ref: str) -> bool:
        return False


@pytest.mark.parametrize("reply", [OSError("disk full"), "", None])
async def test_failed_save_keeps_the_original(reply: Any) -> None:
    messages = tool_history(4)
    compactor = _compactor(_drop_all(), tt.Mode.ENFORCE, archive=_FailingArchive(reply))
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert (outcome.status, outcome.reason, outcome.plan) == (tt.Status.ERROR, "ARCHIVE_ERROR", None)
    returned = await compactor.compact(tt.CompactionRequest(messages, scope=SCOPE))
    assert returned == messages and all(a is b for a, b in zip(returned, messages, strict=True))


async def test_custom_archive_reference_is_what_markers_name() -> None:
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    compactor = _compactor(model, tt.Mode.ENFORCE, archive=_FailingArchive("custom-ref-7"))
    outcome = await compactor.plan(tt.CompactionRequest(tool_history(3), scope=SCOPE))
    assert outcome.plan is not None and outcome.plan.archive_ref == "custom-ref-7"
    assert "custom-ref-7" in blocks_by_id(outcome.plan.messages, "tool_result")["c1"]["output"]
    assert outcome.plan.stats.chars_after == len(canonical_json(outcome.plan.messages))


async def test_no_candidates_skips_without_a_model_call() -> None:
    model = _drop_all()
    outcome = await _compactor(model, config=tt.CompactorConfig()).plan(tt.CompactionRequest(tool_history(3)))
    assert (outcome.status, outcome.reason) == (tt.Status.SKIPPED, "NO_CANDIDATES")
    assert outcome.plan is not None and {d.reason for d in outcome.plan.decisions} == {"tool_not_eligible"}
    assert model.calls == []


async def test_insufficient_reduction_returns_original_with_decisions() -> None:
    messages = tool_history(3) + [user(f"x{n}", "padding " * 400) for n in range(3)]
    config = tt.CompactorConfig(
        eligible_tools={"read_file"}, preserve_recent_messages=4, minimum_reduction=0.5
    )
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    outcome = await _compactor(model, config=config).plan(tt.CompactionRequest(messages))
    assert (outcome.status, outcome.reason) == (tt.Status.INCONCLUSIVE, "INSUFFICIENT_REDUCTION")
    assert outcome.plan is not None and outcome.plan.messages == messages
    assert [d.action for d in outcome.plan.decisions] == [tt.Action.DROP_RESULT] * 3


async def test_drop_result_not_shorter_is_kept() -> None:
    messages = tool_history(3, size=2000)
    messages[1]["content"][2]["output"] = "tiny"
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    outcome = await _compactor(model).plan(tt.CompactionRequest(messages))
    assert outcome.plan is not None
    first = outcome.plan.decisions[0]
    assert (first.action, first.reason, first.chars_after) == (
        tt.Action.KEEP,
        "already_short",
        first.chars_before,
    )
    assert outcome.plan.messages[1] == messages[1]


async def test_text_and_thinking_survive_drop_call_and_empty_messages_go() -> None:
    messages = [
        user("m0", "task"),
        assistant("a1", thinking("hmm"), text("let me read"), call("c1")),
        assistant("a2", result("c1")),
        assistant("a3", call("c2"), result("c2")),
        *tool_history(0, tail=4)[1:],
    ]
    without = attrs.evolve(CONFIG, tombstones=False)
    outcome = await _compactor(_drop_all(), config=without).plan(tt.CompactionRequest(messages))
    assert outcome.plan is not None
    kept = outcome.plan.messages
    assert [m["id"] for m in kept] == ["m0", "a1", "r0", "r1", "r2", "r3"]
    assert kept[1]["content"] == [thinking("hmm"), text("let me read")]
    assert outcome.plan.stats.messages_after == 6

    # With tombstones a message that held a dropped call keeps its place and the stone.
    marked = attrs.evolve(CONFIG, tombstones=True)
    outcome = await _compactor(_drop_all(), config=marked).plan(tt.CompactionRequest(messages))
    assert outcome.plan is not None
    kept = outcome.plan.messages
    assert [m["id"] for m in kept] == ["m0", "a1", "a3", "r0", "r1", "r2", "r3"]
    assert kept[1]["content"][:2] == [thinking("hmm"), text("let me read")]
    assert [tombstone_call_id(b) for m in kept for b in m["content"]] == [None, None, None, "c1", "c2"] + [
        None
    ] * 4


async def test_two_thresholds_keep_the_band() -> None:
    config = tt.CompactorConfig(
        eligible_tools={"read_file"},
        preserve_recent_messages=4,
        keep_threshold=0.8,
        discard_threshold=0.2,
        minimum_reduction=0.0,
    )
    answers = {
        "call_t1": 0.1,
        "result_t1": 0.1,
        "call_t2": 0.5,
        "result_t2": 0.1,
        "call_t3": 0.9,
        "result_t3": 0.5,
    }
    outcome = await _compactor(ScriptedDecisionModel(answers), config=config).plan(
        tt.CompactionRequest(tool_history(3))
    )
    assert outcome.plan is not None
    assert [(d.action, d.reason) for d in outcome.plan.decisions] == [
        (tt.Action.DROP_CALL, "call_not_needed"),
        (tt.Action.KEEP, "uncertain"),
        (tt.Action.KEEP, "uncertain"),
    ]
    assert outcome.plan.decisions[1].keep_call == 0.5 and outcome.plan.decisions[1].keep_result == 0.1


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({"call_t1": 0.1}, "missing answers"),
        ({"call_t1": 0.1, "result_t1": 0.1, "call_t9": 0.2}, "not asked"),
        ({"call_t1": math.nan, "result_t1": 0.1}, "outside"),
        ({"call_t1": 1.5, "result_t1": 0.1}, "outside"),
        ({"call_t1": -0.01, "result_t1": 0.1}, "outside"),
        ({"call_t1": math.inf, "result_t1": 0.1}, "outside"),
        ({"call_t1": "0.3", "result_t1": 0.1}, "not a probability"),
        ({"call_t1": True, "result_t1": 0.1}, "not a probability"),
        ({"call_t1": None, "result_t1": 0.1}, "not a probability"),
    ],
)
async def test_invalid_answers_fail_the_whole_plan(answers: dict[str, Any], reason: str) -> None:
    class Fixed:
        async def __call__(self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> Any:
            return DecisionResponse(model="fixed", answers=answers)

    messages = tool_history(1)
    compactor = _compactor(Fixed(), tt.Mode.ENFORCE, archive=KeyValueArchive(MemoryStore()))
    outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert (outcome.status, outcome.reason, outcome.plan) == (tt.Status.ERROR, "INVALID_ANSWER", None)
    assert reason in outcome.detail
    assert await compactor.compact(tt.CompactionRequest(messages, scope=SCOPE)) == messages


async def test_a_response_of_the_wrong_type_is_invalid() -> None:
    async def model(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> Any:
        return {"call_t1": 0.1, "result_t1": 0.1}

    outcome = await _compactor(model).plan(tt.CompactionRequest(tool_history(1)))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "INVALID_ANSWER")


async def test_one_failing_batch_fails_the_plan() -> None:
    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4, max_questions=2)
    seen: list[str] = []

    async def model(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        seen.extend(questions)
        if "call_t3" in questions:
            raise ConnectionError("backend down")
        return DecisionResponse(model="m", answers=dict.fromkeys(questions, 0.0))

    outcome = await _compactor(model, config=config).plan(tt.CompactionRequest(tool_history(5)))
    assert (outcome.status, outcome.reason, outcome.plan) == (tt.Status.ERROR, "MODEL_ERROR", None)
    assert "ConnectionError: backend down" in outcome.detail
    assert {"call_t3", "result_t3"} <= set(seen)  # the failing batch really was asked


async def test_deadline_fails_the_plan_with_timeout() -> None:
    async def slow(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        await asyncio.sleep(10)
        raise AssertionError("unreachable")

    outcome = await _compactor(slow, budget_s=0.05).plan(tt.CompactionRequest(tool_history(2)))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "TIMEOUT")


async def test_cancellation_propagates_and_is_recorded() -> None:
    started = asyncio.Event()

    async def slow(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        started.set()
        await asyncio.sleep(10)
        raise AssertionError("unreachable")

    records: list[tt.Record] = []
    task = asyncio.create_task(_compactor(slow, records=records).plan(tt.CompactionRequest(tool_history(2))))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [r.status for r in records] == ["CANCELLED"]


async def test_batches_run_concurrently_up_to_the_limit() -> None:
    config = tt.CompactorConfig(
        eligible_tools={"read_file"}, preserve_recent_messages=4, max_questions=2, max_concurrency=3
    )
    running = peak = 0

    async def model(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return DecisionResponse(model="m", answers=dict.fromkeys(questions, 0.0))

    outcome = await _compactor(model, config=config).plan(tt.CompactionRequest(tool_history(8)))
    assert outcome.status is tt.Status.DECIDED and outcome.plan is not None
    assert outcome.plan.stats.requests == 8 and peak == 3


async def test_usage_and_retries_are_summed() -> None:
    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4, max_questions=2)

    async def model(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        return DecisionResponse(
            model="m",
            answers=dict.fromkeys(questions, 0.0),
            usage=tt.decision.Usage(100, 2),
            metadata={"retries": 1},
        )

    outcome = await _compactor(model, config=config).plan(tt.CompactionRequest(tool_history(3)))
    assert outcome.plan is not None
    stats = outcome.plan.stats
    assert (stats.requests, stats.input_tokens, stats.output_tokens, stats.retries) == (3, 300, 6, 3)


async def test_history_changed_during_planning_is_detected() -> None:
    messages = tool_history(3)

    async def meddling(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        messages.append(user("late", "a new message arrived"))
        return DecisionResponse(model="m", answers=dict.fromkeys(questions, 0.0))

    archive = KeyValueArchive(MemoryStore())
    outcome = await _compactor(meddling, tt.Mode.ENFORCE, archive=archive).plan(
        tt.CompactionRequest(messages, scope=SCOPE)
    )
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "TRANSCRIPT_CHANGED")


async def test_invalid_transcript_is_an_error_outcome_not_an_exception() -> None:
    outcome = await _compactor(_drop_all()).plan(tt.CompactionRequest([{"role": "user", "content": "x"}]))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "INVALID_TRANSCRIPT")
    assert "message 0" in outcome.detail


async def test_oversized_transcript_is_skipped() -> None:
    config = tt.CompactorConfig(eligible_tools={"read_file"}, max_transcript_chars=1000)
    outcome = await _compactor(_drop_all(), config=config).plan(tt.CompactionRequest(tool_history(3)))
    assert (outcome.status, outcome.reason) == (tt.Status.SKIPPED, "TRANSCRIPT_TOO_LARGE")


async def test_observer_errors_are_swallowed() -> None:
    observed: list[tt.Record] = []

    def observer(record: tt.Record) -> None:
        observed.append(record)
        raise RuntimeError("observer broke")

    options = tt.ExecutionOptions(observer=observer)
    compactor = tt.Compactor(_drop_all(), config=CONFIG, execution=options)
    outcome = await compactor.plan(tt.CompactionRequest(tool_history(2)))
    assert (outcome.status, outcome.reason) == (tt.Status.DECIDED, "SHADOW_PROPOSAL")
    assert [r.reason for r in observed] == ["SHADOW_PROPOSAL"]  # it ran, raised, and was ignored


async def test_record_carries_the_numbers() -> None:
    records: list[tt.Record] = []
    outcome = await _compactor(_drop_all(), records=records).plan(
        tt.CompactionRequest(tool_history(4), scope=SCOPE)
    )
    assert outcome.plan is not None
    record, stats = records[0], outcome.plan.stats
    assert (record.purpose, record.version, record.status, record.reason) == (
        "compaction",
        "v1",
        "DECIDED",
        "SHADOW_PROPOSAL",
    )
    assert (record.chars_before, record.chars_after, record.candidates) == (
        stats.chars_before,
        stats.chars_after,
        stats.candidates,
    )
    assert record.scope == SCOPE.as_dict() and record.elapsed_ms >= 0


async def test_default_model_is_the_learned_judge() -> None:
    """The default judges in-process: every candidate answered, no request, no state fitting."""
    compactor = tt.Compactor(config=CONFIG)
    assert isinstance(compactor.model, tt.decision.LearnedDecisionModel)
    outcome = await compactor.plan(tt.CompactionRequest(tool_history(3)))
    assert outcome.status in (tt.Status.DECIDED, tt.Status.INCONCLUSIVE), outcome.detail
    assert outcome.plan is not None and outcome.plan.stats.requests == 0
    assert outcome.plan.stats.fitting_stage == "whole_history" and outcome.plan.stats.state_tokens == 0
    assert all(d.keep_call is not None and d.keep_result is not None for d in outcome.plan.decisions)


async def test_goal_and_next_action_default_to_first_and_last_user_text() -> None:
    model = _drop_all()
    messages = tool_history(2)
    await _compactor(model).plan(tt.CompactionRequest(messages))
    state = model.calls[0].state
    assert state["goal"] == "Please fix the bug in the parser module."
    assert state["next_action"] == "recent message 4"


async def test_same_inputs_same_output() -> None:
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.endswith(("t1", "t3")) else 0.2)
    first = await _compactor(model).plan(tt.CompactionRequest(tool_history(4)))
    second = await _compactor(model).plan(tt.CompactionRequest(tool_history(4)))
    assert first.plan is not None and second.plan is not None
    assert first.plan.messages == second.plan.messages and first.plan.decisions == second.plan.decisions


async def test_a_second_pass_leaves_shortened_results_alone() -> None:
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    first = await _compactor(model).plan(tt.CompactionRequest(tool_history(4)))
    assert first.plan is not None
    again = await _compactor(model).plan(tt.CompactionRequest(first.plan.messages))
    assert again.plan is not None
    assert {d.reason for d in again.plan.decisions} == {"already_shortened"}


async def test_pending_call_and_result_are_untouched() -> None:
    messages = tool_history(3)
    messages.insert(2, assistant("p1", call("cp", state="pending")))
    outcome = await _compactor(_drop_all()).plan(tt.CompactionRequest(messages))
    assert outcome.plan is not None
    assert blocks_by_id(outcome.plan.messages, "tool_call")["cp"] == call("cp", state="pending")


async def test_marker_text_alone_marks_a_result_as_shortened() -> None:
    """Formats without block metadata (OpenAI chat) carry only the marker text into a later pass."""
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    first = await _compactor(model).plan(tt.CompactionRequest(tool_history(4)))
    assert first.plan is not None
    stripped = copy.deepcopy(first.plan.messages)
    for message in stripped:
        for block in message["content"]:
            block.pop("metadata", None)
    again = await _compactor(model).plan(tt.CompactionRequest(stripped))
    assert again.plan is not None and {d.reason for d in again.plan.decisions} == {"already_shortened"}


def test_every_plan_statistic_has_a_record_field() -> None:
    import attrs

    stats = set(attrs.fields_dict(tt.PlanStats)) - {"elapsed_ms"}
    assert stats <= set(attrs.fields_dict(tt.Record))


async def test_markers_name_the_real_reference_in_both_modes() -> None:
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.1)
    archive = KeyValueArchive(MemoryStore())
    request = tt.CompactionRequest(tool_history(3), scope=SCOPE)
    shadow = await _compactor(model).plan(request)
    enforce = await _compactor(model, tt.Mode.ENFORCE, archive=archive).plan(request)
    assert shadow.plan is not None and enforce.plan is not None
    expected = tt.archive.snapshot_ref(SCOPE, tool_history(3))
    assert enforce.plan.archive_ref == expected
    for plan in (shadow.plan, enforce.plan):
        output = blocks_by_id(plan.messages, "tool_result")["c1"]["output"]
        assert expected in output and "0" * 64 not in output
    assert canonical_json(shadow.plan.messages) == canonical_json(enforce.plan.messages)
    assert shadow.plan.stats.chars_after == enforce.plan.stats.chars_after
