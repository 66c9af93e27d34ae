"""The replay's walk: what each call is billed, what the cache model charges, and how losses are classed."""

from __future__ import annotations

import asyncio

import pytest

from tests._replay_runs import SECRET, DropEvery, ShortenEvery, lookup_run
from tracetrim.replay import (
    ANTHROPIC,
    NO_CACHE,
    OPENAI,
    CachePrices,
    Compaction,
    HostRule,
    KeepLastN,
    MessageBook,
    NoCompaction,
    PlannerKind,
    TracetrimStrategy,
    model_turns,
    replay_runs,
    strategies_by_name,
    tracetrim_budget,
    tracetrim_threshold,
)

HOST = HostRule(trigger_tokens=1_500, target_tokens=1_000)


def _one(strategy: object, host: HostRule = HOST, prices: object = ANTHROPIC) -> object:
    report = replay_runs([lookup_run()], [strategy], host, prices)  # type: ignore[list-item, arg-type]
    (walked,) = report.runs
    return walked


def test_no_compaction_bills_every_prefix_and_reads_the_last_prompt_from_the_cache() -> None:
    run = lookup_run()
    book = MessageBook()
    turns = model_turns(run.messages)
    prompts = [book.total(run.messages[:at]) for at in turns]
    walked = _one(NoCompaction())
    assert walked.steps == len(turns) == 9
    assert walked.prompt_tokens == walked.billed_tokens == sum(prompts)
    assert list(walked.context) == prompts and walked.peak_context == prompts[-1]
    # Append-only: each prompt reads the previous one from the cache and writes what is new.
    assert walked.cache_read_tokens == sum(prompts[:-1])
    assert walked.cache_write_tokens == prompts[-1]
    assert walked.cache_cost == pytest.approx(0.1 * sum(prompts[:-1]) + 1.25 * prompts[-1], abs=0.01)
    assert walked.compactions == walked.rewrite_tokens == walked.plans == 0
    assert walked.uses == 1 and walked.missing == 0


def test_masking_loses_the_old_value_but_shows_the_call_so_it_costs_a_rerun_turn() -> None:
    walked = _one(KeepLastN(2), prices=NO_CACHE)
    plain = _one(NoCompaction(), prices=NO_CACHE)
    assert (walked.recallable, walked.rerun, walked.silent) == (0, 1, 0)
    last = walked.context[-1]
    result = 524  # c2's result: what the re-run brings back
    assert walked.recall_tokens == last + result
    assert walked.billed_tokens == walked.prompt_tokens + walked.recall_tokens
    assert walked.prompt_tokens < plain.prompt_tokens
    # Every call from the third masks one more result: each breaks the cache just before the window.
    assert walked.compactions == 6 and walked.rewrite_tokens > 0
    assert walked.cache_cost == walked.billed_tokens  # no cache: every token at the plain price


def test_a_dropped_pair_without_a_tombstone_is_lost_silently_and_with_one_is_recallable() -> None:
    without = _one(tracetrim_threshold(DropEvery(), tombstones=False))
    with_tombstones = _one(tracetrim_threshold(DropEvery()))  # the library's default leaves one
    for walked in (without, with_tombstones):
        assert walked.reasons.get("ARCHIVED_PROPOSAL", 0) >= 1  # the real Compactor adopted in ENFORCE
        assert walked.compactions >= 1 and walked.plans >= walked.compactions
    assert (without.recallable, without.rerun, without.silent) == (0, 0, 1)
    assert without.recall_tokens == 0  # nothing points to it: nothing to pay, but it is gone
    assert (with_tombstones.recallable, with_tombstones.rerun, with_tombstones.silent) == (1, 0, 0)
    assert with_tombstones.recall_tokens == with_tombstones.context[-1] + 524


def test_compactions_compound_the_walk_goes_on_from_each_adopted_history() -> None:
    strict = {"adopt_partial": False}  # every adopted cut meets its target
    report = replay_runs(
        [lookup_run(16, size=800)],
        [
            tracetrim_budget(ShortenEvery(), tombstones=False, **strict),
            tracetrim_budget(ShortenEvery(), **strict),
        ],
        HOST,
    )
    plain, tombstoned = report.runs
    for walked in (plain, tombstoned):
        drops = [i for i in range(1, walked.steps) if walked.context[i] < walked.context[i - 1]]
        assert walked.compactions == len(drops) >= 3  # a sawtooth: past the trigger, cut, grow again
        assert walked.reasons["ARCHIVED_PROPOSAL"] == walked.compactions  # each adopted plan is one cut
        # Each cut lands at or under the target the host asked for, plus the call's new messages.
        for i in drops:
            assert walked.context[i] <= HOST.target_tokens
            assert walked.context[i - 1] > HOST.trigger_tokens - 300
        assert walked.rewrite_tokens > 0
    # Later passes, short of the target with every result already shortened, drop whole pairs: the
    # value the last call writes goes with c2, silently unless a tombstone stands in for it.
    assert (plain.recallable, plain.rerun, plain.silent) == (0, 0, 1)
    assert (tombstoned.recallable, tombstoned.rerun, tombstoned.silent) == (1, 0, 0)


def test_a_shortened_result_that_lost_the_value_is_recallable_by_its_marker() -> None:
    run = lookup_run()
    # Put the value at the end of c2's long result, past the excerpt's head.
    result = run.messages[5]["content"][0]
    result["output"] = result["output"].replace(f"order {SECRET}\n", "") + f"closing reference {SECRET}\n"
    report = replay_runs([run], [tracetrim_threshold(ShortenEvery(), excerpt_chars=0)], HOST)
    (walked,) = report.runs
    assert (walked.recallable, walked.rerun, walked.silent) == (1, 0, 0)


def test_strategy_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="repeated: none"):
        replay_runs([lookup_run()], [NoCompaction(), NoCompaction()], HOST)


def test_the_report_totals_every_run_per_strategy() -> None:
    runs = [lookup_run(), lookup_run(pairs=4)]
    report = replay_runs(runs, [NoCompaction(), KeepLastN(2)], HOST)
    assert [t.strategy for t in report.totals] == ["none", "keep-last-2"]  # one dataset: no per-dataset rows
    none = report.totals_for()[0]
    walked = [r for r in report.runs if r.strategy == "none"]
    assert none.runs == 2 and none.steps == sum(r.steps for r in walked)
    assert none.billed_tokens == sum(r.billed_tokens for r in walked)
    assert none.mean_context == pytest.approx(none.prompt_tokens / none.steps)
    assert report.totals_for("fixture") == report.totals_for()
    data = report.to_json()
    assert data["host"] == {"trigger_tokens": 1500, "target_tokens": 1000, "every_steps": None}
    assert len(data["runs"]) == 4 and data["runs"][0]["context"] == list(walked[0].context)


def test_each_compaction_says_what_it_saved_and_rewrote_and_whether_that_paid_back() -> None:
    walked = _one(KeepLastN(2))
    assert len(walked.events) == walked.compactions
    assert sum(e.saved for e in walked.events) == walked.saved_tokens > 0
    assert sum(e.rewrite for e in walked.events) == walked.rewrite_tokens
    assert [e.remaining for e in walked.events] == [walked.steps - 1 - e.step for e in walked.events]
    # Saving 500 tokens for 10 more calls against rewriting 4,000: worth it without a premium for
    # writes (OpenAI: 11 x 0.5 x 500 > 0.5 x 4,000), not at Anthropic's (11 x 0.1 x 500 < 1.15 x 4,000).
    event = Compaction(step=3, saved=500, rewrite=4_000, remaining=10)
    assert event.pays_back(OPENAI) and not event.pays_back(ANTHROPIC)
    assert event.pays_back(NO_CACHE)  # no cache: every saving is a saving
    report = replay_runs([lookup_run()], [KeepLastN(2)], HOST, ANTHROPIC)
    assert report.totals[0].paid_back == sum(e.pays_back(ANTHROPIC) for e in report.runs[0].events)


def test_a_result_brought_back_once_is_not_missed_again_later() -> None:
    run = lookup_run()
    second = run.messages[5]["content"][0]
    second["output"] += "reference REF_2_ABC\n"
    run.messages.append({"id": "more", "role": "user", "content": [{"type": "text", "text": "And the ref?"}]})
    run.messages.append(
        {"id": "final2", "role": "assistant", "content": [{"type": "text", "text": "It is REF_2_ABC."}]}
    )
    report = replay_runs([run], [KeepLastN(2)], HOST, NO_CACHE)
    (walked,) = report.runs
    assert walked.uses == 2  # c2 at the last two calls, for different strings
    # The first use re-runs c2, which then stays in the prompt: the second finds what it needs.
    assert (walked.rerun, walked.silent) == (1, 0)
    book = MessageBook()
    result = book.count(second["output"])
    assert walked.recall_tokens == walked.context[-2] + result
    # ... and the result it brought back is in the next call's prompt too, billed there.
    last = model_turns(run.messages)[-1]
    session = KeepLastN(2).start(run, HOST, book)
    final = asyncio.run(session.prompt(run.messages[:last], walked.steps - 1)).messages
    assert walked.context[-1] == book.total(final) + result
    assert walked.prompt_tokens == sum(walked.context)


def test_a_budget_short_of_its_target_adopts_what_it_reached_unless_told_target_or_nothing() -> None:
    # The recent messages the planner protects alone hold more than 300 tokens: no plan meets it.
    host = HostRule(trigger_tokens=1_500, target_tokens=300)
    partial, strict = strategies_by_name(["budget", "budget-target-or-nothing"], ShortenEvery())
    assert strict.name == "tracetrim budget, target or nothing" and "adopt_partial=False" in strict.models
    report = replay_runs([lookup_run()], [partial, strict], host, NO_CACHE)
    adopting, refusing = report.runs
    assert refusing.reasons.get("TARGET_NOT_REACHED", 0) >= 1 and "ARCHIVED_PROPOSAL" not in refusing.reasons
    assert refusing.compactions == 0
    assert adopting.reasons.get("ARCHIVED_PROPOSAL", 0) >= 1 and adopting.compactions >= 1
    assert adopting.billed_tokens < refusing.billed_tokens


def test_the_cache_gate_variants_weigh_each_rewrite_with_the_replays_prices() -> None:
    names = ["threshold-cache-gate", "budget-cache-gate"]
    gated = strategies_by_name(names, DropEvery(), prices=OPENAI)
    assert [s.name for s in gated] == [
        "tracetrim threshold, cache gate 0.5/1",
        "tracetrim budget, cache gate 0.5/1",
    ]
    assert all("cache_prices=(0.5, 1.0)" in s.models for s in gated)
    # A write premium no saving can repay: the gate refuses every plan, and nothing is compacted.
    (threshold,) = strategies_by_name(
        ["threshold-cache-gate"], DropEvery(), prices=CachePrices(read=0.0, write=1.0)
    )
    walked = _one(threshold)
    assert walked.compactions == 0 and walked.missing == 0
    assert walked.reasons.get("CACHE_NOT_PAID_BACK", 0) >= 1 and "ARCHIVED_PROPOSAL" not in walked.reasons
    # Without a premium every saving pays back: the gate changes nothing.
    free = strategies_by_name(["threshold-cache-gate"], DropEvery(), prices=NO_CACHE)[0]
    plain = _one(tracetrim_threshold(DropEvery()))
    assert _one(free).context == plain.context


def test_threshold_every_call_plans_before_each_call_whatever_the_host_rule_says() -> None:
    # A trigger no history of this run reaches: the rule-fired strategy never plans.
    host = HostRule(trigger_tokens=10_000_000, target_tokens=1_000)
    fired, every = strategies_by_name(["threshold", "threshold-every-call"], DropEvery())
    assert every.name == "tracetrim threshold, every call"
    assert "minimum_reduction=0.0" in every.models and "every call" in every.models
    report = replay_runs([lookup_run()], [fired, every], host, NO_CACHE)
    never, each = report.runs
    assert never.plans == 0 and never.compactions == 0
    assert each.plans == each.steps - 1  # every call after the first
    assert each.compactions >= 1 and each.billed_tokens < never.billed_tokens


def test_only_threshold_mode_fires_every_call() -> None:
    with pytest.raises(ValueError, match="every_call"):
        TracetrimStrategy(PlannerKind.BUDGET, "budget", None, every_call=True)
