"""OffloadStrategy on the labelled scenarios and small histories: compact, compress, auto, modes, failures."""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest

from tests._histories import assistant, call, result, text, user
from tests._offload_support import RecordingSummarizer, expected_offloads, shortened_ids
from tests.conftest import load_scenario
from tracetrim import CompactionRequest, ExecutionOptions, Mode, Scope, Status
from tracetrim._json import canonical_json
from tracetrim._snapshot import text_of_output
from tracetrim._tokens import estimate_tokens, history_tokens
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool, rehydrate
from tracetrim.compactor._offload import OffloadConfig, OffloadMode, OffloadStrategy, restore_offloaded
from tracetrim.compactor._offload._summary import summary_ref
from tracetrim.decision import Summary

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")
SMALL: dict[str, Any] = {"trigger_tokens": 2_000, "max_tool_message_tokens": 300}
ENFORCE = ExecutionOptions(mode=Mode.ENFORCE)


def _request(scenario: dict[str, Any], **extra: Any) -> CompactionRequest:
    return CompactionRequest(
        scenario["messages"],
        goal=scenario["goal"],
        scope=SCOPE,
        protected_message_ids=scenario["protected_message_ids"],
        protected_call_ids=scenario["protected_call_ids"],
        **extra,
    )


def _strategy(
    mode: str = "compact", summarizer: Any = None, archive: Any = None, **config: Any
) -> OffloadStrategy:
    options = {**SMALL, **config}
    return OffloadStrategy(
        summarizer,
        config=OffloadConfig(mode=mode, **options),
        execution=ENFORCE if archive is not None else ExecutionOptions(mode=Mode.SHADOW),
        archive=archive,
    )


def _blocks(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(b["type"], b.get("id", "")) for m in messages for b in m["content"]]


@pytest.mark.parametrize("name", ["payment_retry", "replication_incident"])
@pytest.mark.parametrize("keep_recent", [1, 6])
async def test_compact_shortens_exactly_the_results_above_the_limit(name: str, keep_recent: int) -> None:
    scenario = load_scenario(name)
    original = copy.deepcopy(scenario["messages"])
    archive = KeyValueArchive(MemoryStore())
    strategy = _strategy(archive=archive, keep_recent_count=keep_recent)
    outcome = await strategy.plan(_request(scenario))
    assert outcome.status is Status.DECIDED and outcome.reason == "ARCHIVED_PROPOSAL", outcome.detail
    plan = outcome.plan
    assert plan is not None
    expected = expected_offloads(
        original,
        limit=300,
        keep_recent=keep_recent,
        protected_ids=scenario["protected_message_ids"],
        protected_calls=scenario["protected_call_ids"],
    )
    assert expected and shortened_ids(plan.messages) == expected
    assert scenario["messages"] == original  # the caller's history is never touched
    # Calls stay, pairs stay: the same blocks in the same order; only the chosen results differ.
    assert _blocks(plan.messages) == _blocks(original)
    for before, after in zip(original, plan.messages, strict=True):
        for b0, b1 in zip(before["content"], after["content"], strict=True):
            if b1["type"] == "tool_result" and b1["id"] in expected:
                marker = b1["metadata"]["tracetrim"]
                assert marker["archive_ref"] == plan.archive_ref
                new, old = text_of_output(b1["output"]), text_of_output(b0["output"])
                assert new is not None and old is not None
                assert f"call {b1['id']}" in new and plan.archive_ref in new
                assert new.startswith(old[:600]) and old[-300:] in new  # head and tail preview
                assert estimate_tokens(new) < estimate_tokens(old)
            else:
                assert b1 == b0
    assert not expected & set(scenario["protected_call_ids"])


@pytest.mark.parametrize("name", ["payment_retry", "replication_incident"])
async def test_restoring_every_reference_gives_the_original_back(name: str) -> None:
    scenario = load_scenario(name)
    archive = KeyValueArchive(MemoryStore())
    summarizer = RecordingSummarizer()
    strategy = _strategy("auto", summarizer, archive, compact_ratio_threshold=0.0, group_token_threshold=800)
    outcome = await strategy.plan(_request(scenario))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    plan = outcome.plan
    assert plan.stats.fitting_stage == "compact+compress"
    assert await archive.restore(SCOPE, plan.archive_ref) == scenario["messages"]
    summaries = [m for m in plan.messages if summary_ref(m)]
    assert len(summaries) == len(summarizer.groups) > 1
    for message, group in zip(summaries, summarizer.groups, strict=True):
        ref = summary_ref(message)
        assert ref and ref in message["content"][0]["text"]
        assert await archive.restore(SCOPE, ref) == group  # each group archived as it was summarised
    assert await restore_offloaded(plan.messages, archive, SCOPE) == scenario["messages"]
    # Newer messages survive a restore.
    newer = [*plan.messages, user("new", "and now?")]
    assert await restore_offloaded(newer, archive, SCOPE) == [*scenario["messages"], newer[-1]]


async def test_offloaded_results_come_back_through_rehydrate_and_the_recall_tool() -> None:
    scenario = load_scenario("payment_retry")
    archive = KeyValueArchive(MemoryStore())
    outcome = await _strategy(archive=archive).plan(_request(scenario))
    assert outcome.plan is not None
    archived = await archive.restore(SCOPE, outcome.plan.archive_ref)
    assert rehydrate(outcome.plan.messages, archived) == scenario["messages"]
    originals = {b["id"]: b for m in scenario["messages"] for b in m["content"] if b["type"] == "tool_result"}
    recall = RecallTool(archive, SCOPE)
    for call_id in shortened_ids(outcome.plan.messages):
        original = text_of_output(originals[call_id]["output"])
        assert await recall(call_id) == original
        assert await recall(call_id, outcome.plan.archive_ref) == original


@pytest.mark.parametrize("name", ["payment_retry", "replication_incident"])
async def test_auto_compresses_only_above_the_ratio_threshold(name: str) -> None:
    scenario = load_scenario(name)
    compacted = await _strategy("compact").plan(_request(scenario))
    assert compacted.plan is not None
    ratio = history_tokens(compacted.plan.messages, estimate_tokens) / history_tokens(
        scenario["messages"], estimate_tokens
    )
    assert 0.0 < ratio < 1.0

    below = RecordingSummarizer()
    outcome = await _strategy("auto", below, compact_ratio_threshold=min(ratio + 0.01, 1.0)).plan(
        _request(scenario)
    )
    assert below.groups == [] and outcome.plan is not None
    assert outcome.plan.stats.fitting_stage == "compact"
    assert outcome.plan.messages == compacted.plan.messages

    above = RecordingSummarizer()
    outcome = await _strategy("auto", above, compact_ratio_threshold=ratio - 0.01).plan(_request(scenario))
    assert above.groups and outcome.plan is not None
    assert outcome.plan.stats.fitting_stage == "compact+compress"
    assert outcome.plan.stats.messages_after < len(scenario["messages"])
    # compress starts from the compacted history: offloaded results reach the summarizer shortened.
    seen = {b["id"]: b for g in above.groups for m in g for b in m["content"] if b["type"] == "tool_result"}
    assert any("tracetrim" in (b.get("metadata") or {}) for b in seen.values())


async def test_auto_compresses_when_compact_finds_nothing_to_offload() -> None:
    summarizer = RecordingSummarizer()
    messages = [user("m0", "task")] + [user(f"u{n}", "word " * 400) for n in range(10)]
    outcome = await _strategy("auto", summarizer, group_token_threshold=1_000).plan(
        CompactionRequest(messages)
    )
    assert outcome.status is Status.DECIDED and outcome.plan is not None
    assert outcome.plan.stats.fitting_stage == "compress"  # compaction changed nothing: ratio 1.0
    assert [len(g) for g in summarizer.groups] == [2, 2, 2, 2]  # ~500 tokens each, last 2 kept
    assert outcome.plan.messages[0] == messages[0] and outcome.plan.messages[-2:] == messages[-2:]


def _pair_history() -> list[dict[str, Any]]:
    big = "x" * 8_000
    return [
        {"id": "s", "role": "system", "content": [text("You are an agent.")]},
        user("m0", "Fix the bug."),
        assistant("m1", text("Reading."), call("c1")),
        assistant("m2", result("c1", output=big)),
        assistant("m3", text("Two at once."), call("c2"), call("c3")),
        assistant("m4", result("c2", output=big)),
        user("m5", "interjection " * 50),
        assistant("m6", result("c3", output="short")),
        assistant("m7", call("c4"), result("c4", output=big)),
        user("m8", "keep going"),
        assistant("m9", text("done")),
    ]


async def test_groups_never_split_a_call_from_its_result() -> None:
    summarizer = RecordingSummarizer()
    messages = _pair_history()
    outcome = await _strategy("compress", summarizer, group_token_threshold=100).plan(
        CompactionRequest(messages)
    )
    assert outcome.status is Status.DECIDED, outcome.detail
    for group in summarizer.groups:
        ids = _tool_block_counts(group)
        assert all(count == 2 for count in ids.values()), ids
    grouped = [m["id"] for g in summarizer.groups for m in g]
    assert grouped == ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"]
    # m3..m6 hold c2 and c3 across a user message: they can only go together.
    assert any([m["id"] for m in g] == ["m3", "m4", "m5", "m6"] for g in summarizer.groups)
    # A message above the threshold on its own forms its own group.
    assert [[m["id"] for m in g] == ["m7"] for g in summarizer.groups].count(True) == 1


def _tool_block_counts(group: list[dict[str, Any]]) -> dict[str, int]:
    """How many tool_call and tool_result blocks each call id has in ``group`` (2 = a whole pair)."""
    counts: dict[str, int] = {}
    for message in group:
        for block in message["content"]:
            if block["type"] in ("tool_call", "tool_result"):
                counts[block["id"]] = counts.get(block["id"], 0) + 1
    return counts


async def test_an_unpaired_call_keeps_its_message_out_of_every_group() -> None:
    messages = _pair_history()
    messages[2]["content"].append(call("pending", state="running"))
    summarizer = RecordingSummarizer()
    await _strategy("compress", summarizer, group_token_threshold=100).plan(CompactionRequest(messages))
    grouped = [m["id"] for g in summarizer.groups for m in g]
    assert "m1" not in grouped and "m2" not in grouped and "m3" in grouped


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "EMPTY_SUMMARY"),
        ("   \n", "EMPTY_SUMMARY"),
        (Summary(text=""), "EMPTY_SUMMARY"),
        (RuntimeError("model down"), "SUMMARY_ERROR"),
        (42, "SUMMARY_ERROR"),
    ],
)
async def test_an_empty_or_failing_summary_keeps_the_history_unchanged(answer: Any, reason: str) -> None:
    scenario = load_scenario("replication_incident")
    archive = KeyValueArchive(MemoryStore())
    strategy = _strategy("auto", RecordingSummarizer(answer), archive, compact_ratio_threshold=0.0)
    request = _request(scenario)
    outcome = await strategy.plan(request)
    assert outcome.status is Status.ERROR and outcome.reason == reason
    assert not outcome.adopted
    assert await strategy.compact(request) == scenario["messages"]
    assert await archive.list(SCOPE) == []  # nothing archived before the summaries were all good


class _BrokenArchive:
    """A stand-in archive whose save raises or returns no reference; no real archive fails on cue."""

    def __init__(self, result: Any) -> None:
        self.result = result

    async def save(self, scope: Scope, messages: Any) -> Any:
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


@pytest.mark.parametrize("result", [OSError("disk full"), "", None])
async def test_an_archive_error_keeps_the_history_unchanged(result: Any) -> None:
    scenario = load_scenario("payment_retry")
    strategy = _strategy(archive=_BrokenArchive(result))
    request = _request(scenario)
    outcome = await strategy.plan(request)
    assert outcome.status is Status.ERROR and outcome.reason == "ARCHIVE_ERROR"
    assert await strategy.compact(request) == scenario["messages"]


async def test_a_custom_archive_reference_is_the_one_the_markers_name() -> None:
    class Renaming:
        """A stand-in archive that names its snapshots itself, as a host's own archive may."""

        def __init__(self) -> None:
            self.saved: list[Any] = []

        async def save(self, scope: Scope, messages: Any) -> str:
            self.saved.append(messages)
            return f"custom-{len(self.saved)}"

    archive = Renaming()
    outcome = await _strategy("auto", RecordingSummarizer(), archive, compact_ratio_threshold=0.0).plan(
        _request(load_scenario("payment_retry"))
    )
    assert outcome.adopted and outcome.plan is not None
    assert outcome.plan.archive_ref == "custom-1"
    refs = {
        b["metadata"]["tracetrim"]["archive_ref"]
        for m in archive.saved[1]
        for b in m["content"]
        if "tracetrim" in (b.get("metadata") or {})
    }
    assert refs == {"custom-1"}  # the offloaded results inside the summarised group name it
    assert [summary_ref(m) for m in outcome.plan.messages if summary_ref(m)] == [
        f"custom-{n}" for n in range(2, len(archive.saved) + 1)
    ]


async def test_below_the_threshold_nothing_happens() -> None:
    scenario = load_scenario("payment_retry")
    summarizer = RecordingSummarizer()
    strategy = _strategy("auto", summarizer, KeyValueArchive(MemoryStore()), trigger_tokens=1_000_000)
    outcome = await strategy.plan(_request(scenario))
    assert outcome.status is Status.SKIPPED and outcome.reason == "BELOW_TRIGGER"
    assert summarizer.groups == []
    assert await strategy.compact(_request(scenario)) == scenario["messages"]


async def test_system_messages_do_not_count_towards_the_total() -> None:
    messages = [
        {"id": "s", "role": "system", "content": [text("rule " * 5_000)]},
        user("m0", "hi"),
        assistant("m1", call("c1"), result("c1", output="y" * 4_000)),
        user("m2", "ok"),
    ]
    outcome = await _strategy(trigger_tokens=1_100).plan(CompactionRequest(messages))
    assert outcome.reason == "BELOW_TRIGGER"
    outcome = await _strategy(trigger_tokens=900).plan(CompactionRequest(messages))
    assert outcome.status is Status.DECIDED and shortened_ids(outcome.plan.messages) == {"c1"}  # type: ignore[union-attr]


async def test_a_host_token_counter_is_used() -> None:
    scenario = load_scenario("payment_retry")
    outcome = await _strategy(token_counter=lambda s: len(s.split()), trigger_tokens=100_000).plan(
        _request(scenario)
    )
    assert outcome.reason == "BELOW_TRIGGER"
    outcome = await _strategy(token_counter=lambda s: 10 * len(s)).plan(_request(scenario))
    assert outcome.status is Status.DECIDED


async def test_modes_off_and_shadow() -> None:
    scenario = load_scenario("payment_retry")
    archive = KeyValueArchive(MemoryStore())
    records: list[Any] = []
    off = OffloadStrategy(
        config=OffloadConfig(mode="compact", **SMALL),
        execution=ExecutionOptions(mode=Mode.OFF, observer=records.append),
    )
    outcome = await off.plan(_request(scenario))
    assert (outcome.status, outcome.reason) == (Status.SKIPPED, "DISABLED")
    assert await off.compact(_request(scenario)) is None

    shadow = OffloadStrategy(
        config=OffloadConfig(mode="compact", **SMALL),
        execution=ExecutionOptions(mode=Mode.SHADOW, observer=records.append),
        archive=archive,
    )
    outcome = await shadow.plan(_request(scenario))
    assert (outcome.status, outcome.reason) == (Status.DECIDED, "SHADOW_PROPOSAL")
    assert outcome.plan is not None and not outcome.adopted and outcome.plan.archive_ref == ""
    assert shortened_ids(outcome.plan.messages)
    assert await shadow.compact(_request(scenario)) is None
    assert await archive.list(SCOPE) == []
    assert [r.reason for r in records] == ["DISABLED", "DISABLED", "SHADOW_PROPOSAL", "SHADOW_PROPOSAL"]
    record = records[2]
    assert record.mode == "shadow" and record.actions["drop_result"] == len(
        shortened_ids(outcome.plan.messages)
    )
    assert record.chars_after < record.chars_before and record.fitting_stage == "compact"


async def test_enforce_needs_an_archive_a_scope_and_a_summarizer_for_compress() -> None:
    with pytest.raises(ValueError, match="archive"):
        OffloadStrategy(config=OffloadConfig(mode="compact"), execution=ENFORCE)
    with pytest.raises(ValueError, match="summarizer"):
        OffloadStrategy(config=OffloadConfig(mode="auto"))
    strategy = _strategy(archive=KeyValueArchive(MemoryStore()))
    outcome = await strategy.plan(CompactionRequest(load_scenario("payment_retry")["messages"]))
    assert (outcome.status, outcome.reason) == (Status.ERROR, "SCOPE_REQUIRED")


async def test_invalid_input_and_observer_errors_never_escape() -> None:
    observed: list[Any] = []

    def explode(record: Any) -> None:
        observed.append(record)
        raise RuntimeError("observer bug")

    strategy = OffloadStrategy(
        config=OffloadConfig(mode="compact"), execution=ExecutionOptions(mode=Mode.SHADOW, observer=explode)
    )
    outcome = await strategy.plan(CompactionRequest([{"role": "robot", "content": []}]))
    assert (outcome.status, outcome.reason) == (Status.ERROR, "INVALID_TRANSCRIPT")
    assert "message 0" in outcome.detail
    assert [r.reason for r in observed] == ["INVALID_TRANSCRIPT"]


async def test_decisions_and_stats_describe_what_happened() -> None:
    scenario = load_scenario("payment_retry")
    outcome = await _strategy(
        "auto", RecordingSummarizer(), compact_ratio_threshold=0.0, compress_keep_recent_count=6
    ).plan(_request(scenario))
    plan = outcome.plan
    assert plan is not None
    reasons = {d.call_id: (d.action.value, d.reason) for d in plan.decisions}
    assert reasons["c18"] == ("keep", "protected_call")
    assert {a for a, _ in reasons.values()} >= {"keep", "drop_call"}
    assert plan.stats.requests == len([m for m in plan.messages if summary_ref(m) is not None])
    assert plan.stats.reduction == pytest.approx(1 - plan.stats.chars_after / plan.stats.chars_before)
    assert plan.stats.chars_after == len(canonical_json(plan.messages))


def test_config_names_the_bad_field() -> None:
    with pytest.raises(ValueError, match=r"OffloadConfig\.mode"):
        OffloadConfig(mode="squash")
    with pytest.raises(ValueError, match=r"OffloadConfig\.compact_ratio_threshold"):
        OffloadConfig(compact_ratio_threshold=1.5)
    with pytest.raises(TypeError, match=r"OffloadConfig\.trigger_tokens"):
        OffloadConfig(trigger_tokens="many")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"OffloadConfig\.target_tokens \(100\) must be below trigger_tokens"
    ):
        OffloadConfig(trigger_tokens=100, target_tokens=100)
    with pytest.raises(ValueError, match=r"OffloadConfig\.excerpt_chars"):
        OffloadConfig(excerpt_chars=-1)
    with pytest.raises(ValueError, match=r"OffloadConfig\.group_token_threshold"):
        OffloadConfig(group_token_threshold=0)
    config = OffloadConfig(preview_chars=900)
    assert config.mode is OffloadMode.AUTO
    assert (config.preview_head_chars, config.preview_tail_chars) == (600, 300)


def test_the_trigger_has_the_planners_name_only() -> None:
    assert OffloadConfig().trigger_tokens == 20_000
    assert attrs.evolve(OffloadConfig(trigger_tokens=1_234), target_tokens=1_000).trigger_tokens == 1_234
    with pytest.raises(TypeError, match="max_total_tokens"):  # the former name was retired
        OffloadConfig(max_total_tokens=1_234)  # type: ignore[call-arg]


def _big_results(n: int, size: int = 4_000) -> list[dict[str, Any]]:
    """A task, then ``n`` turns each reading a large file (call and result), then a question."""
    messages: list[dict[str, Any]] = [user("m0", "review the files")]
    for k in range(1, n + 1):
        body = "\n".join(f"f{k} line {i}: nothing to see" for i in range(size // 30))
        messages.append(
            assistant(f"a{k}", call(f"c{k}", "read_file", {"path": f"f{k}.py"}), result(f"c{k}", output=body))
        )
    messages.append(user("q", "what did you find?"))
    return messages


async def test_with_a_target_only_the_oldest_results_go_and_the_next_turn_does_not_fire() -> None:
    messages = _big_results(6)
    tokens = history_tokens(messages, estimate_tokens)
    trigger, target = tokens - 1, tokens * 3 // 4
    config: dict[str, Any] = {
        "trigger_tokens": trigger,
        "target_tokens": target,
        "max_tool_message_tokens": 300,
    }
    outcome = await _strategy(**config).plan(CompactionRequest(messages))
    plan = outcome.plan
    assert outcome.status is Status.DECIDED and plan is not None, outcome.detail
    assert plan.stats.target_tokens == target and plan.stats.target_met is True
    assert plan.stats.tokens_after == history_tokens(plan.messages, estimate_tokens) <= target
    shortened = shortened_ids(plan.messages)
    assert shortened and shortened == {f"c{k}" for k in range(1, len(shortened) + 1)}  # oldest first
    assert len(shortened) < 6  # not every result over the limit: only what the target needs
    reasons = {d.call_id: d.reason for d in plan.decisions}
    assert reasons["c5"] == "within_budget" and reasons["c1"] == "over_token_limit"
    assert f"target_tokens ({target:,}) reached" in outcome.detail
    # The next turn: a little more history, still under the trigger, so nothing fires; an unchanged
    # history gives the same answer again.
    later = [*plan.messages, assistant("a9", text("found nothing"))]
    again = await _strategy(**config).plan(CompactionRequest(later))
    assert (again.status, again.reason) == (Status.SKIPPED, "BELOW_TRIGGER")
    assert again.plan is not None and again.plan.messages == later
    repeat = (await _strategy(**config).plan(CompactionRequest(messages))).plan
    assert repeat is not None and (repeat.messages, repeat.decisions) == (plan.messages, plan.decisions)


async def test_without_a_target_every_result_over_the_limit_goes() -> None:
    messages = _big_results(6)
    tokens = history_tokens(messages, estimate_tokens)
    outcome = await _strategy(trigger_tokens=tokens - 1, max_tool_message_tokens=300).plan(
        CompactionRequest(messages)
    )
    assert outcome.plan is not None and outcome.plan.stats.target_met is None
    assert shortened_ids(outcome.plan.messages) == {f"c{k}" for k in range(1, 7)}


async def test_a_target_out_of_reach_is_reported_and_what_the_rules_allow_is_adopted() -> None:
    messages = _big_results(3)
    tokens = history_tokens(messages, estimate_tokens)
    outcome = await _strategy(trigger_tokens=tokens - 1, target_tokens=10, max_tool_message_tokens=300).plan(
        CompactionRequest(messages)
    )
    assert outcome.status is Status.DECIDED and outcome.plan is not None
    assert outcome.plan.stats.target_met is False and outcome.plan.stats.tokens_after > 10
    assert shortened_ids(outcome.plan.messages) == {"c1", "c2", "c3"}
    assert "target_tokens (10) not reached" in outcome.detail


async def test_auto_compresses_when_compaction_leaves_the_history_over_the_target() -> None:
    messages = _big_results(6)
    tokens = history_tokens(messages, estimate_tokens)
    base: dict[str, Any] = {
        "trigger_tokens": tokens - 1,
        "max_tool_message_tokens": 300,
        "group_token_threshold": 300,
    }
    # The ratio alone would never compress (1.0), or always (0.0): with a target, the target decides.
    reachable = RecordingSummarizer()
    outcome = await _strategy(
        "auto", reachable, target_tokens=tokens * 3 // 4, compact_ratio_threshold=0.0, **base
    ).plan(CompactionRequest(messages))
    assert outcome.plan is not None and reachable.groups == []
    assert outcome.plan.stats.fitting_stage == "compact"
    compacted = await _strategy("compact", **base).plan(CompactionRequest(messages))
    assert compacted.plan is not None
    target = compacted.plan.stats.tokens_after - 300
    over = RecordingSummarizer()
    outcome = await _strategy("auto", over, target_tokens=target, compact_ratio_threshold=1.0, **base).plan(
        CompactionRequest(messages)
    )
    plan = outcome.plan
    assert plan is not None and over.groups, outcome.detail
    assert plan.stats.fitting_stage == "compact+compress" and plan.stats.target_met is True
    # Only the oldest groups were summarised: enough to cover what compaction left over the target.
    every = RecordingSummarizer()
    await _strategy("auto", every, compact_ratio_threshold=0.0, **base).plan(CompactionRequest(messages))
    assert 0 < len(over.groups) < len(every.groups)
    assert over.groups == every.groups[: len(over.groups)]


async def test_compress_with_a_target_summarises_only_the_oldest_groups() -> None:
    messages = _big_results(6)
    tokens = history_tokens(messages, estimate_tokens)
    config: dict[str, Any] = {"trigger_tokens": tokens - 1, "group_token_threshold": 1_500}
    everything = RecordingSummarizer()
    await _strategy("compress", everything, **config).plan(CompactionRequest(messages))
    some = RecordingSummarizer()
    outcome = await _strategy("compress", some, target_tokens=tokens * 3 // 4, **config).plan(
        CompactionRequest(messages)
    )
    assert outcome.plan is not None and outcome.plan.stats.target_met is True
    assert 0 < len(some.groups) < len(everything.groups)
    assert some.groups == everything.groups[: len(some.groups)]


async def test_an_offloaded_result_keeps_the_lines_that_matter_in_its_excerpt() -> None:
    """The planner's excerpt: a 400-line log whose one error line sits in the middle keeps it."""
    lines = [f"step {i}: ok" for i in range(400)]
    lines[200] = "ERROR: checksum mismatch in shard_0417 (expected 9f2c, got 1b7e)"
    messages = [
        user("m0", "run the checks"),
        assistant(
            "a1",
            call("c1", "run_checks", {"suite": "all"}),
            result("c1", "run_checks", output="\n".join(lines)),
        ),
        user("q", "anything wrong?"),
    ]
    config: dict[str, Any] = {"trigger_tokens": 100, "max_tool_message_tokens": 300}
    outcome = await _strategy(**config).plan(CompactionRequest(messages))
    assert outcome.plan is not None and shortened_ids(outcome.plan.messages) == {"c1"}
    kept = text_of_output(outcome.plan.messages[1]["content"][1]["output"])
    assert kept is not None and lines[200] in kept and lines[0] in kept and lines[-1] in kept
    assert "400 lines" in kept  # the planner's marker says how much of the result is left
    head_and_tail = await _strategy(excerpt_chars=0, **config).plan(CompactionRequest(messages))
    assert head_and_tail.plan is not None
    plain = text_of_output(head_and_tail.plan.messages[1]["content"][1]["output"])
    assert plain is not None and lines[200] not in plain


async def test_tokens_are_counted_as_the_budget_counts_them() -> None:
    messages = _big_results(3)
    counter = lambda s: len(s.split())  # noqa: E731  (a host's own counter)
    outcome = await _strategy(trigger_tokens=1, token_counter=counter).plan(CompactionRequest(messages))
    assert outcome.plan is not None
    assert outcome.plan.stats.tokens_before == history_tokens(messages, counter)
    assert outcome.plan.stats.tokens_after == history_tokens(outcome.plan.messages, counter)
