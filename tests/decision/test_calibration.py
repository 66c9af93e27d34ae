"""The judge reads the run in front of it: its self-check on the run's own past, and its training range."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tests.conftest import DATA, require_data
from tracetrim.cli._fit import SHIPPED, _summary, _verdict
from tracetrim.compactor._judging import history_view, stated_plan
from tracetrim.compactor._pairs import find_pairs, protected_messages
from tracetrim.decision import HistoryView, JudgeWeights, LearnedDecisionModel, PairJudgement, WeightsError
from tracetrim.decision._calibration import (
    CAUTIOUS_RECENT,
    SHIFT_BOUNDS,
    YOUNGER_IS_KNOWN,
    SelfCheck,
    check_view,
    internal_cut,
    outside,
    recent_span,
    self_check,
)
from tracetrim.decision._features import FEATURE_NAMES
from tracetrim.decision._history import Judgements
from tracetrim.learn import CheckRows, Examples, FrontierRow, Point, fit_weights, reuse_reference

N = len(FEATURE_NAMES)


def _weights(need: float, **changes: Any) -> JudgeWeights:
    """A judge that gives every result the same ``need`` (a logistic model with no coefficients)."""
    weights = JudgeWeights(
        features=FEATURE_NAMES,
        mean=(0.0,) * N,
        scale=(1.0,) * N,
        coef=(0.0,) * N,
        intercept=math.log(need / (1 - need)),
        size_exponent=0.25,
        keep_level=-2.7,
        call_level=-4.0,
        version="constant",
    )
    return attrs.evolve(weights, **changes)


def _step(n: int, command: str, output: str) -> list[dict[str, Any]]:
    call = {"type": "tool_call", "id": f"c{n}", "name": "bash", "input": json.dumps({"command": command})}
    result = {"type": "tool_result", "id": f"c{n}", "name": "bash", "output": output, "state": "success"}
    return [
        {
            "id": f"a{n}",
            "role": "assistant",
            "content": [{"type": "text", "text": f"Step {n}."}, call | {"state": "finished"}],
        },
        {"id": f"u{n}", "role": "user", "content": [result]},
    ]


def _run(steps: int, *, goes_back: bool) -> list[dict[str, Any]]:
    """A bash agent's history: each result shows a value of its own (``value_<n>_id``); an agent that
    ``goes_back`` writes the values it saw two and ten steps earlier into each command, the other
    never looks back."""
    messages: list[dict[str, Any]] = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "Fix it."}]}
    ]
    for n in range(1, steps + 1):
        back = " ".join(f"value_{k}_id" for k in (n - 2, n - 10) if k > 0)
        command = f"grep -n '{back}' src.py" if goes_back and back else f"ls folder{n}"
        body = "".join(f"line {k} of listing {n}: nothing to see here\n" for k in range(40))
        messages += _step(n, command, f"value_{n}_id = {n * 7}\n{body}")
    return messages


def _view(messages: list[dict[str, Any]]) -> HistoryView:
    protected = protected_messages(messages, preserve_recent=6, protected_ids=(), pinned_ids=())
    pairs = find_pairs(messages, eligible_tools={"bash"}, protected=protected, protected_call_ids=())
    return history_view(messages, pairs, goal="Fix it.", next_action=stated_plan(messages))


def _plan(model: Any, messages: list[dict[str, Any]]) -> tuple[tt.Outcome, list[tt.Record]]:
    records: list[tt.Record] = []
    config = tt.CompactorConfig(eligible_tools={"bash"}, minimum_reduction=0.0)
    execution = tt.ExecutionOptions(mode=tt.Mode.SHADOW, observer=records.append)
    outcome = asyncio.run(
        tt.Compactor(model, config=config, execution=execution).plan(tt.CompactionRequest(messages))
    )
    return outcome, records


# --- the self-check -----------------------------------------------------------------------------------


def test_the_internal_cut_is_an_assistant_turn_near_sixty_percent() -> None:
    messages = _run(20, goes_back=True)
    at = internal_cut(messages)
    assert at is not None and messages[at]["role"] == "assistant" and abs(at - 0.6 * len(messages)) <= 2
    assert internal_cut(_run(3, goes_back=True)) is None  # too short to judge anything before a cut


def test_the_self_check_counts_the_results_the_run_went_back_to() -> None:
    back, never = check_view(_view(_run(20, goes_back=True))), check_view(_view(_run(20, goes_back=False)))
    assert back is not None and never is not None
    assert back.at == never.at and len(back.used) == len(never.used) > 5
    # Every result judged at the cut whose value a later command quotes counts as used; none otherwise.
    assert sum(back.used) >= len(back.used) - 2 and sum(never.used) == 0
    assert all(p.result_message < back.at for p in back.view.pairs)
    assert back.view.messages == _run(20, goes_back=True)[: back.at]


def test_the_shift_is_minus_the_log_of_used_per_expected_pooled_and_bounded() -> None:
    on_reference = SelfCheck(at=30, pairs=10, used=3, expected=3.0)
    assert on_reference.shift(1.0) == 0.0
    more = SelfCheck(at=30, pairs=10, used=6, expected=2.0)
    assert more.shift(1.0) == pytest.approx(-math.log((6 + 1) / (2 + 1)), abs=1e-6) and more.shift(1.0) < 0
    fewer = SelfCheck(at=30, pairs=10, used=0, expected=2.0)
    assert 0 < fewer.shift(1.0) <= SHIFT_BOUNDS[1]
    # Against its training reference: a judge whose runs reused twice what it expected is on track here.
    assert SelfCheck(at=30, pairs=10, used=6, expected=3.0).shift(2.0) == 0.0
    assert SelfCheck(at=30, pairs=90, used=90, expected=0.5).shift(1.0) == SHIFT_BOUNDS[0]
    # One result is a little evidence: pooled with the prior it moves less than a hundred would.
    assert abs(SelfCheck(1, 1, 1, 0.1).shift(1.0)) < abs(SelfCheck(1, 100, 100, 10.0).shift(1.0))


def test_a_run_that_goes_back_keeps_more_and_one_that_never_does_keeps_less() -> None:
    weights = _weights(0.05)
    back, never = _run(20, goes_back=True), _run(20, goes_back=False)
    check = self_check(_view(back), weights.need_function())
    assert check is not None and check.expected == pytest.approx(0.05 * check.pairs)
    notes = {
        name: LearnedDecisionModel(weights).judge(_view(run)).note
        for name, run in (("back", back), ("never", never))
    }
    assert notes["back"].level_shift < 0 < notes["never"].level_shift
    assert notes["back"].reuse is not None and notes["back"].reuse > 5 and notes["never"].reuse == 0.0
    # The levels move, so the answers do: more stays verbatim where the run goes back.
    moved = LearnedDecisionModel(weights).judge(_view(back))
    still = LearnedDecisionModel(weights, self_check=False).judge(_view(back))
    assert all(moved[k].keep_result > still[k].keep_result for k in still)
    assert LearnedDecisionModel(weights, self_check=False).judge(_view(back)).note.level_shift == 0.0


def test_the_calibration_is_in_the_stats_the_record_and_the_detail() -> None:
    outcome, records = _plan(LearnedDecisionModel(_weights(0.05)), _run(20, goes_back=True))
    assert outcome.plan is not None
    stats = outcome.plan.stats
    assert stats.judge_level_shift < 0 and stats.judge_reuse is not None and stats.judge_reuse > 1
    assert stats.judge_out_of_range is None and stats.judge_cautious is False  # no ranges in these weights
    assert (
        "judge self-check at message" in outcome.detail
        and f"levels {stats.judge_level_shift:+.2f}" in outcome.detail
    )
    line = json.loads(json.dumps(tt._record.record_json(records[0])))
    assert line["judge_level_shift"] == stats.judge_level_shift and line["judge_reuse"] == stats.judge_reuse
    # The same history, the same note: nothing in the check depends on timing or hash order.
    again, _ = _plan(LearnedDecisionModel(_weights(0.05)), _run(20, goes_back=True))
    assert again.plan is not None and again.plan.stats.judge_level_shift == stats.judge_level_shift


def test_a_long_history_is_checked_on_its_first_and_latest_messages() -> None:
    view = _view(_run(60, goes_back=True))
    short = recent_span(view, span=41)
    assert len(short.messages) == 41 and short.messages[0] is view.messages[0]
    assert short.messages[1:] == list(view.messages[-40:]) and short.census is None
    for pair in short.pairs:
        blocks = short.messages[pair.result_message]["content"]
        assert any(b.get("type") == "tool_result" and b["id"] == pair.call_id for b in blocks)
        assert any(b.get("id") == pair.call_id for b in short.messages[pair.call_message]["content"])
    assert recent_span(view, span=500) is view


# --- the training range -------------------------------------------------------------------------------


def test_outside_means_below_a_minimum_or_above_a_maximum() -> None:
    assert not outside([1.0, 2.0], [0.0, 2.0], [1.0, 3.0])
    assert outside([1.0, 3.5], [0.0, 2.0], [1.0, 3.0]) and outside([-0.1, 2.0], [0.0, 2.0], [1.0, 3.0])
    # A pair younger than any trained on is not out of range (a host protecting fewer recent messages
    # makes it so); one older than any, in a longer history than any, is.
    low, high = [0.0] * N, [1.0] * N
    age = FEATURE_NAMES.index("log_age_messages")
    young, old = [0.5] * N, [0.5] * N
    young[age], old[age] = -1.0, 2.0
    assert age in YOUNGER_IS_KNOWN and not outside(young, low, high) and outside(old, low, high)
    assert outside(young, low, high, floorless=frozenset())


def test_a_history_outside_the_training_range_turns_the_judge_cautious() -> None:
    # A need this low drops every old pair, unless the judge is cautious.
    run = _run(20, goes_back=False)
    inside = _weights(1e-4, range_low=(-1e9,) * N, range_high=(1e9,) * N)
    away = attrs.evolve(inside, range_low=(0.0,) * N, range_high=(0.0,) * N)
    sure, _ = _plan(LearnedDecisionModel(inside, self_check=False), run)
    wary, records = _plan(LearnedDecisionModel(away, self_check=False), run)
    assert sure.plan is not None and wary.plan is not None
    assert sure.plan.stats.judge_out_of_range == 0.0 and not sure.plan.stats.judge_cautious
    assert {d.action for d in sure.plan.decisions if d.keep_result is not None} == {tt.Action.DROP_CALL}
    assert wary.plan.stats.judge_out_of_range == 1.0 and wary.plan.stats.judge_cautious
    actions = [d.action for d in wary.plan.decisions if d.reason != "recent"]
    assert tt.Action.DROP_CALL not in actions  # shortened rather than dropped
    candidates = [d for d in wary.plan.decisions if d.keep_result is not None]
    assert [d.action for d in candidates[-CAUTIOUS_RECENT:]] == [tt.Action.KEEP] * CAUTIOUS_RECENT
    assert all(d.action is tt.Action.DROP_RESULT for d in candidates[:-CAUTIOUS_RECENT])
    assert "100% of pairs outside the training range: cautious" in wary.detail
    assert records[0].judge_cautious is True
    # The switch is the judge's: off, the same weights drop as before.
    plain, _ = _plan(LearnedDecisionModel(away, self_check=False, caution=False), run)
    assert plain.plan is not None and plain.plan.decisions == sure.plan.decisions


def test_weights_written_before_the_ranges_still_load_and_check_nothing() -> None:
    data = json.loads(_weights(0.05).to_json())
    for name in ("range_low", "range_high", "reuse_reference"):
        del data[name]
    old = JudgeWeights.from_json(json.dumps(data))
    assert old.range_low == () and old.reuse_reference == 1.0
    note = LearnedDecisionModel(old, self_check=False).judge(_view(_run(12, goes_back=True))).note
    assert note.out_of_range is None and not note.cautious and note.text == ""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"range_low": (0.0,) * 3, "range_high": (1.0,) * 3}, "range_low"),
        ({"range_low": (1.0,) * N, "range_high": (0.0,) * N}, "above its range_high"),
        ({"reuse_reference": 0.0}, "reuse_reference must be positive"),
        ({"range_low": (math.nan,) * N, "range_high": (1.0,) * N}, "finite numbers"),
    ],
)
def test_bad_ranges_and_references_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(WeightsError, match=message):
        _weights(0.05, **changes)


def test_fitting_stores_each_features_range_over_the_training_rows() -> None:
    rows = [[float((n * 7 + k) % 11) for k in range(N)] for n in range(40)]
    data = Examples(rows, [n % 3 == 0 for n in range(40)], [100] * 40, ["d/g"] * 40)  # type: ignore[list-item]
    weights = fit_weights(data, version="t", model="logistic")
    assert weights.range_low == tuple(min(r[k] for r in rows) for k in range(N))
    assert weights.range_high == tuple(max(r[k] for r in rows) for k in range(N))
    assert JudgeWeights.from_json(weights.to_json()) == weights


def test_the_reference_weighs_each_dataset_the_same() -> None:
    weights = _weights(0.5)
    row = (0.0,) * N
    checks = [
        CheckRows("a", (row,) * 10, (True,) * 5 + (False,) * 5),  # 5 used of 5 expected
        CheckRows("b", (row,) * 2, (True, True)),  # 2 used of 1 expected
        None,  # a cut too short for a self-check
    ]
    # Each dataset counts as 6 results: a expects 3 and uses 3, b expects 3 and uses 6.
    assert reuse_reference(weights, checks) == pytest.approx(9 / 6)
    assert reuse_reference(weights, [None]) == 1.0


def test_judgements_are_a_read_only_mapping_with_a_note() -> None:
    judged = LearnedDecisionModel(_weights(0.05)).judge(_view(_run(12, goes_back=True)))
    assert isinstance(judged, Judgements) and len(judged) == len(list(judged)) > 0
    with pytest.raises(TypeError):
        judged["t1"] = judged["t1"]  # type: ignore[index]


# --- tracetrim fit --------------------------------------------------------------------------------------


def _row(strategy: str, findable: int, chars_after: int) -> FrontierRow:
    return FrontierRow("held-out", strategy, Point(100, findable, findable, 1000, chars_after, 10))


def test_fit_ends_with_the_fitted_judge_beside_the_shipped_one() -> None:
    rows = [
        _row("tracetrim (fitted)", 95, 800),
        _row(SHIPPED, 90, 810),
        _row("keep-last-10", 80, 820),
    ]
    shown = " ".join(_summary(rows).split())
    assert "fitted judge 95.0% findable at 20.0% removed" in shown
    assert "shipped judge 90.0% findable at 19.0% removed" in shown and "keep-last-10" in shown
    assert "use it" in shown
    assert "keep it" in _verdict(rows[1].point, rows[0].point)
    assert "each is ahead on one axis" in _verdict(
        Point(100, 99, 99, 1000, 900, 1), Point(100, 90, 90, 1000, 700, 1)
    )
    assert "too few runs" in _summary([_row(SHIPPED, 90, 810)])


@pytest.mark.data
def test_fit_prints_the_shipped_judges_figures_and_how_to_use_the_weights(tmp_path: Path) -> None:
    files = sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))[:6]
    out = tmp_path / "team.json"
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "fit", *map(str, files), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "held-out         shipped judge" in done.stdout and "On your runs:" in done.stdout
    assert f"--model-file {out}" in done.stdout and f"DECISION_MODEL_FILE={out}" in done.stdout
    weights = LearnedDecisionModel(out).weights
    assert len(weights.range_low) == N and weights.reuse_reference > 0


class _PlainJudge:
    """An in-process judge that answers with a plain dict: no note on the history."""

    name = "plain"

    def judge(self, view: HistoryView) -> dict[str, PairJudgement]:
        return {pair.key: PairJudgement(keep_call=1.0, keep_result=0.0) for pair in view.pairs}


def test_a_judge_without_a_note_leaves_the_judge_stats_at_their_defaults() -> None:
    outcome, records = _plan(_PlainJudge(), _run(12, goes_back=True))
    assert outcome.plan is not None
    stats = outcome.plan.stats
    assert (stats.judge_level_shift, stats.judge_reuse, stats.judge_out_of_range, stats.judge_cautious) == (
        0.0,
        None,
        None,
        False,
    )
    assert "self-check" not in outcome.detail and records[0].judge_reuse is None
