"""The learned judge end to end: labels from later steps, features, fitting, the held-out frontier, `fit`."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tests.conftest import DATA, REPO, require_data
from tracetrim.decision import HistoryView, JudgedPair, LearnedDecisionModel, PairJudgement, WeightsError
from tracetrim.decision._features import FEATURE_NAMES, pair_features
from tracetrim.decision._learned import default_weights
from tracetrim.learn import (
    Point,
    credited,
    cut_points,
    cuts,
    evaluate,
    evidence,
    examples,
    excerpt_every,
    fit_logistic,
    fit_weights,
    held_out_models,
    held_out_point,
    keep_last,
    label_oracle,
    levels_of,
    mini_swe_agent,
    score_cut,
    tau_bench,
)


def _msg(i: int, role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"m{i}", "role": role, "content": list(blocks)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(cid: str, command: str) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": cid,
        "name": "bash",
        "input": json.dumps({"command": command}),
        "state": "finished",
    }


def _result(cid: str, output: str) -> dict[str, Any]:
    return {"type": "tool_result", "id": cid, "name": "bash", "output": output, "state": "success"}


def _run() -> list[dict[str, Any]]:
    return [
        _msg(0, "user", _text("Fix the overflow in the parser module.")),
        _msg(1, "assistant", _text("Look around."), _call("c1", "ls")),
        _msg(2, "assistant", _result("c1", "README.md\nsetup.py\nparser_core.py\n")),
        _msg(3, "assistant", _text("Read it."), _call("c2", "cat parser_core.py")),
        _msg(
            4,
            "assistant",
            _result("c2", "def tokenize_stream(buf):\n    return overflow_guard(buf, 0x7fff)\n"),
        ),
        _msg(5, "assistant", _text("Unrelated listing."), _call("c3", "date")),
        _msg(6, "assistant", _result("c3", "Mon Jan  1 00:00:00 UTC 2024")),
        _msg(
            7,
            "assistant",
            _text("Patch the guard."),
            _call(
                "c4", "sed -i 's/return overflow_guard(buf, 0x7fff)/return overflow_guard(buf, 0xffff)/' x"
            ),
        ),
    ]


def test_evidence_is_what_later_steps_used_and_first_saw_in_a_result() -> None:
    found = evidence(_run(), 7)
    assert set(found) == {"c2"}  # the listing and the date were never used again
    strings = found["c2"].strings
    assert "return overflow_guard(buf, 0x7fff)" in strings  # a quoted line
    assert "overflow_guard" in strings  # an identifier first seen there, written into a later call
    assert "overflow" not in strings  # the task said it first: not evidence of this result
    assert evidence(_run(), 8) == {}  # nothing after the end


def test_plain_words_and_lines_shown_before_are_not_evidence() -> None:
    history = [
        _msg(0, "user", _text("Fix it.")),
        _msg(1, "assistant", _call("c1", "cat notes.txt")),
        _msg(2, "assistant", _result("c1", "value returned twice\nshared_line = compute(1)\n")),
        _msg(3, "assistant", _call("c2", "cat other.txt")),
        _msg(4, "assistant", _result("c2", "shared_line = compute(1)\nfresh_token here\n")),
        _msg(5, "assistant", _call("c3", "echo 'value returned' shared_line = compute(1) fresh_token")),
    ]
    found = evidence(history, 5)
    # "value"/"returned" are plain words; the quoted line was first shown by c1, not c2
    assert found["c1"].strings == {"shared_line", "shared_line = compute(1)"}
    assert found["c2"].strings == {"fresh_token"}


def test_training_credits_the_source_and_the_latest_copy_of_each_used_string() -> None:
    history = [
        _msg(0, "user", _text("Report the replica state.")),
        _msg(1, "assistant", _call("c1", "psql -c 'select * from slots'")),
        _msg(2, "assistant", _result("c1", "slot_a | lost | 7/C4A1F0B8\nrestart_lsn 7/C4A1F0B8 ok")),
        _msg(3, "assistant", _call("c2", "cat unrelated.txt")),
        _msg(4, "assistant", _result("c2", "nothing_used_here = 1")),
        _msg(5, "assistant", _call("c3", "psql -c 'select * from slots'")),
        _msg(6, "assistant", _result("c3", "slot_a | lost | 7/C4A1F0B8\nslot_b | streaming | 8/9C3E41D0")),
        _msg(7, "assistant", _call("c4", "echo 'slot_a lost at 7/C4A1F0B8, slot_b now at 8/9C3E41D0'")),
    ]
    found = evidence(history, 7)
    # Scored: where each used string first appeared (c1 for slot_a, c3 for slot_b's position).
    assert set(found) == {"c1", "c3"} and "slot_a" in found["c1"].strings
    assert "slot_a" not in found["c3"].strings
    # Trained: the re-run c3 also shows slot_a, and it is the copy the agent read last.
    assert credited(history, 7) == credited(history, 7, found) == {"c1", "c3"}
    rerun_only = [*history[:5], _msg(5, "assistant", _call("c4", "echo slot_a"))]
    assert credited(rerun_only, 5) == {"c1"}  # no later copy: the source alone
    assert credited(history, 8) == frozenset()  # nothing used after the end


def test_a_string_shown_three_times_credits_its_source_and_newest_copy_not_the_middle_one() -> None:
    history = [
        _msg(0, "user", _text("Fix it.")),
        *(
            m
            for n in (1, 2, 3)
            for m in (
                _msg(2 * n - 1, "assistant", _call(f"c{n}", "cat cfg.py")),
                _msg(2 * n, "assistant", _result(f"c{n}", "retry_limit_value = 3\n")),
            )
        ),
        _msg(7, "assistant", _call("c9", "sed -i 's/retry_limit_value = 3/retry_limit_value = 5/' cfg.py")),
    ]
    assert set(evidence(history, 7)) == {"c1"}
    assert credited(history, 7) == {"c1", "c3"}  # the middle copy is neither source nor latest


def test_learning_sees_what_the_agent_saw_not_format_metadata() -> None:
    from tracetrim.learn._sources import as_seen

    message = {
        "id": "m1",
        "role": "assistant",
        "content": [_text("hi")],
        "metadata": {"tracetrim.mini_swe_agent": {"extra": "x" * 500}, "tracetrim.pinned": True, "mine": 1},
    }
    (seen,) = as_seen([message])
    assert seen["metadata"] == {"tracetrim.pinned": True, "mine": 1}
    assert "tracetrim.mini_swe_agent" in message["metadata"]  # the caller's message is untouched
    assert as_seen([_msg(0, "user", _text("x"))]) == [_msg(0, "user", _text("x"))]


def test_exported_trees_predict_exactly_what_scikit_learn_does() -> None:
    np = pytest.importorskip("numpy")
    from sklearn.ensemble import HistGradientBoostingClassifier

    from tracetrim.learn._fit import TREES, fit_trees

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 4))
    y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(size=1500) > 0).astype(int)
    baseline, trees = fit_trees(x.tolist(), y.tolist())
    assert (baseline, trees) == fit_trees(x.tolist(), y.tolist())  # deterministic
    reference = HistGradientBoostingClassifier(**TREES, early_stopping=False, random_state=0).fit(x, y)
    ours = [1 / (1 + math.exp(-(baseline + sum(t.score(row) for t in trees)))) for row in x.tolist()]
    assert np.abs(np.asarray(ours) - reference.predict_proba(x)[:, 1]).max() < 1e-9


def test_tree_weights_round_trip_and_bad_trees_are_refused() -> None:
    from tracetrim.decision._weights import JudgeWeights, Tree

    weights = default_weights()
    assert weights.trees, "the shipped judge is a boosted ensemble"
    assert JudgeWeights.from_json(weights.to_json()) == weights
    data = json.loads(weights.to_json())
    data["trees"][0]["left"][0] = 0  # the root pointing at itself: a walk would never end
    with pytest.raises(WeightsError, match="node 0 points outside the tree or backwards"):
        JudgeWeights.from_json(json.dumps(data))
    with pytest.raises(WeightsError, match="splits on feature 99"):
        attrs.evolve(weights, trees=(Tree([99, -1, -1], [0.5, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, -1]),))


def test_features_of_a_pair() -> None:
    history = _run()[:7]
    pairs = [JudgedPair("t2", "c2", "bash", "{}", "def tokenize_stream(buf):\n    return 1\n", 3, 4)]
    view = HistoryView(
        history, pairs, goal="Fix the overflow in the parser module.", next_action="tokenize_stream"
    )
    features = pair_features(view)
    assert list(features) == ["t2"] and len(features["t2"]) == len(FEATURE_NAMES)
    named = dict(zip(FEATURE_NAMES, features["t2"], strict=True))
    assert named["next_overlap"] == 1.0  # the next action names what this result defines
    assert named["log_new_tokens"] > 0 and named["age"] > 0
    assert all(math.isfinite(v) for v in features["t2"])


def test_fit_logistic_finds_the_optimum_and_is_deterministic() -> None:
    rows = [[x / 10, (x % 3) / 3] for x in range(60)]
    labels = [1 if x > 30 or x % 7 == 0 else 0 for x in range(60)]
    first = fit_logistic(rows, labels)
    assert first == fit_logistic(rows, labels)
    _mean, _scale, coef, _intercept = first
    assert coef[0] > 0  # larger x, more often used
    with pytest.raises(ValueError, match="same label"):
        fit_logistic(rows, [0] * 60)


def test_weights_round_trip_and_refuse_bad_files(tmp_path: Path) -> None:
    weights = default_weights()
    assert weights.features == FEATURE_NAMES
    assert type(weights).from_json(weights.to_json()) == weights
    with pytest.raises(WeightsError, match="3 features but"):
        attrs.evolve(weights, features=("a", "b", "c"))
    other = attrs.evolve(weights, features=tuple(reversed(FEATURE_NAMES)))
    with pytest.raises(WeightsError, match="trained on other features"):
        LearnedDecisionModel(other)
    with pytest.raises(WeightsError, match="cannot read judge weights"):
        LearnedDecisionModel(tmp_path / "missing.json")


def test_learned_judge_is_a_judge_of_histories_not_a_remote_model() -> None:
    judge = LearnedDecisionModel()
    assert isinstance(judge, tt.decision.HistoryJudge) and not isinstance(judge, tt.decision.DecisionModel)
    assert not callable(judge)  # it never answers questions about a state


@pytest.mark.data
def test_shipped_weights_reproduce_from_the_training_script() -> None:
    require_data(DATA / "mini-swe-agent")
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "train_judge.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shipped weights match a fresh fit" in done.stdout


def _quality_on(shared: Path, runs: list[Path]) -> subprocess.CompletedProcess[str]:
    """benchmarks/quality.py on a shared folder holding only ``runs`` (mini-swe-agent files)."""
    folder = shared / "data" / "mini-swe-agent"
    folder.mkdir(parents=True)
    for run in runs:
        shutil.copy(run, folder / run.name)
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "quality.py"), "--shared", str(shared)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )


@pytest.mark.data
def test_quality_benchmark_says_what_it_could_not_measure(tmp_path: Path) -> None:
    """Another shared folder may hold only some datasets: what is absent is named as not measured
    (so the targets are short), never printed as rows of zeros; too few groups for the folds is said."""
    runs = sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))
    done = _quality_on(tmp_path / "some", runs[::16])  # a dozen runs of several repositories
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mini-swe-agent   tracetrim" in done.stdout
    for name in ("swe-agent: no runs", "tau-bench: no runs", "scenarios: no labelled histories"):
        assert name in done.stdout, done.stdout
    assert "\ntau-bench " not in done.stdout
    one = _quality_on(tmp_path / "one", runs[:3])  # one repository: a fold would train on nothing
    assert one.returncode == 1, one.stdout + one.stderr
    assert "has nothing to train on" in one.stdout and "1 group(s)" in one.stdout


@pytest.mark.data
def test_held_out_frontier_slice_beats_masking() -> None:
    """A small, fast slice of benchmarks/quality.py: held-out judge vs keep-last-N on real runs."""
    runs = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=40)
    runs += tau_bench(require_data(DATA / "tau-bench" / "gpt-4o-airline.json"), limit=40)
    selected = cuts(runs)
    models = held_out_models(selected, 2, levels_of(default_weights()))
    for dataset in ("mini-swe-agent", "tau-bench"):
        mine = [c for c in selected if c.trajectory.dataset == dataset]
        ours = held_out_point(mine, models, 2, minimum_reduction=0.0)
        # A fold's judge has seen 20 tau-bench runs: on a third of the others it finds features outside
        # that little training and is cautious (drops nothing), so it removes less than 2% there.
        assert ours.needed > 20 and ours.removed > 0.01
        for n in (3, 5, 10):
            masked = evaluate(mine, keep_last(n))
            assert not (masked.recall >= ours.recall and masked.removed >= ours.removed), (dataset, n)
    # The token budget (compact to 4/5) that adopts only a met target keeps more than masking's curve at
    # the size it reaches. Not 2/3: mini-swe-agent's commands are in its prose, so a drop keeps the call
    # and leaves a stub, and 2/3 is past what most of these histories can reach.
    mini = [c for c in selected if c.trajectory.dataset == "mini-swe-agent"]
    curve = sorted((p.removed, p.recall) for p in (evaluate(mini, keep_last(n)) for n in (3, 5, 10, 15)))
    budgeted = held_out_point(mini, models, 2, budget_share=0.8, adopt_partial=False)
    assert _above_curve(budgeted.removed, budgeted.recall, curve) > 0, (budgeted, curve)


def _above_curve(removed: float, recall: float, curve: list[tuple[float, float]]) -> float:
    """How far ``recall`` is above the piecewise-linear ``curve`` of (removed, recall) at ``removed``."""
    below = max((x, y) for x, y in curve if x <= removed)
    above = min((x, y) for x, y in curve if x >= removed)
    share = (removed - below[0]) / (above[0] - below[0]) if above[0] > below[0] else 0.0
    return recall - (below[1] + (above[1] - below[1]) * share)


@pytest.mark.data
def test_without_a_next_action_the_judge_assumes_the_agents_stated_plan() -> None:
    """What the host passes nothing for is filled the way the judge was trained and measured."""
    import asyncio

    from tracetrim.compactor._judging import stated_plan

    (run,) = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=1)
    cut = cuts([run])[-1]
    assert stated_plan(cut.prefix) == cut.view.next_action and cut.view.next_action.startswith("THOUGHT")
    config = tt.CompactorConfig(eligible_tools={"bash"}, minimum_reduction=0.0)
    compactor = tt.Compactor(LearnedDecisionModel(), config=config)
    silent = asyncio.run(compactor.plan(tt.CompactionRequest(cut.prefix, cut.view.goal)))
    told = asyncio.run(compactor.plan(tt.CompactionRequest(cut.prefix, cut.view.goal, cut.view.next_action)))
    assert silent.plan is not None and told.plan is not None
    assert silent.plan.decisions == told.plan.decisions


@pytest.mark.data
def test_cut_points_sit_before_assistant_turns() -> None:
    runs = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=3)
    for run in runs:
        for at in cut_points(run.messages):
            assert run.messages[at]["role"] == "assistant"
    data = examples(cuts(runs))
    assert len(data.rows) == len(data.labels) == len(data.groups) > 0
    weights = fit_weights(data, version="t", levels={"keep_level": -2.0})
    assert weights.keep_level == -2.0 and weights.version == "t"


@pytest.mark.data
def test_fit_command_end_to_end(tmp_path: Path) -> None:
    folder = require_data(DATA / "mini-swe-agent")
    files = sorted(folder.glob("*.traj.json"))[:8]
    out = tmp_path / "model.json"
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "fit", *map(str, files), "-o", str(out), "--version", "team"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "tracetrim (fitted)" in done.stdout and "keep-last-10" in done.stdout
    assert "excerpt every result" in done.stdout
    model = LearnedDecisionModel(out)
    assert model.name == "learned:team"
    history = tmp_path / "history.json"
    history.write_text(files[0].read_text(encoding="utf-8"), encoding="utf-8")
    compacted = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetrim",
            "compact",
            str(history),
            "--format",
            "mini-swe-agent",
            "--model-file",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert compacted.returncode == 0, compacted.stderr
    assert json.loads(compacted.stdout)["status"] in ("DECIDED", "INCONCLUSIVE")


def test_fit_command_explains_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tracetrim", "fit", str(bad), "-o", str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "bad.json" in done.stderr and "Traceback" not in done.stderr


class _Judge:
    """A stand-in in-process judge (only a fake can answer wrongly on purpose)."""

    name = "stand-in"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def judge(self, view: HistoryView) -> dict[str, Any]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return {pair.key: self.answer for pair in view.pairs}


@pytest.mark.parametrize(
    ("answer", "reason", "detail"),
    [
        (RuntimeError("judge broke"), tt.Reason.MODEL_ERROR, "RuntimeError: judge broke"),
        (PairJudgement(keep_call=0.2, keep_result=1.5), tt.Reason.INVALID_ANSWER, "outside [0, 1]"),
        (None, tt.Reason.INVALID_ANSWER, "no PairJudgement for pair"),
    ],
)
async def test_an_in_process_judge_is_checked_like_a_remote_one(
    answer: Any, reason: tt.Reason, detail: str
) -> None:
    compactor = tt.Compactor(
        _Judge(answer), config=tt.CompactorConfig(eligible_tools={"bash"}, preserve_recent_messages=1)
    )
    outcome = await compactor.plan(tt.CompactionRequest(_run()))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, reason)
    assert detail in outcome.detail


async def test_an_in_process_judge_decides_the_plan() -> None:
    judge = _Judge(PairJudgement(keep_call=0.0, keep_result=0.0))
    config = tt.CompactorConfig(eligible_tools={"bash"}, preserve_recent_messages=1, minimum_reduction=0.0)
    outcome = await tt.Compactor(judge, config=config).plan(tt.CompactionRequest(_run()))
    assert outcome.plan is not None and outcome.plan.stats.requests == 0
    assert {d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_CALL} == {
        "c1",
        "c2",
        "c3",
    }


@pytest.mark.data
def test_label_oracle_keeps_everything_used_and_bounds_the_frontier() -> None:
    runs = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=10)
    selected = cuts(runs)
    verbatim = evaluate(selected, label_oracle(used_lines=False))
    excerpt = evaluate(selected, label_oracle(used_lines=True))
    assert verbatim.recall == excerpt.recall == 1.0 and verbatim.verbatim_recall == 1.0
    assert excerpt.removed > verbatim.removed > 0 and excerpt.verbatim_recall < 1.0


@pytest.mark.data
def test_excerpt_every_shortens_results_and_drops_nothing() -> None:
    """The no-judgement baseline keeps every call and result block and only shortens outputs."""
    selected = cuts(mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=5))
    strategy = excerpt_every()
    shortened = 0
    point = Point()
    for cut in selected:
        compacted = strategy(cut)
        point += score_cut(cut, compacted)
        before = _blocks(cut.prefix)
        after = _blocks(compacted)
        assert list(after) == list(before)
        for key, output in after.items():
            if output != before[key]:
                assert key[0] == "tool_result" and len(output) < len(before[key])
                shortened += 1
    assert shortened > 0
    assert point.removed > 0 and point.recall < 1.0


def _blocks(messages: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Each call's input and each result's output by (block type, id)."""
    return {
        (b["type"], b["id"]): str(b.get("input", b.get("output")))
        for m in messages
        for b in m["content"]
        if b.get("type") in ("tool_call", "tool_result")
    }


def test_features_do_not_depend_on_the_hash_seed() -> None:
    """Token sets iterate in an order set by each process's hash seed; the features (and so every
    decision) must come out the same, bit for bit, whatever the seed."""
    script = (
        "import json, sys\n"
        "from tracetrim.learn._scenarios import scenario_examples\n"
        "scenario = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "print(repr(scenario_examples(scenario).rows))\n"
    )
    path = str(REPO / "tracetrim" / "_examples" / "payment_retry.json")
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, path], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_critical_values_are_what_the_judge_compares_with_its_levels() -> None:
    """The benchmark's margins read the same value the shipped judge turns into its keep answer."""
    from tracetrim.learn._scenarios import critical_values, scenario_view

    path = REPO / "tracetrim" / "_examples" / "payment_retry.json"
    scenario = json.loads(path.read_text(encoding="utf-8"))
    weights = default_weights()
    values = critical_values(scenario, weights)
    assert set(values) == set(scenario["labels"]["critical"])
    _, view = scenario_view(scenario)
    judged = LearnedDecisionModel(weights).judge(view)
    by_call = {pair.call_id: judged[pair.key] for pair in view.pairs}
    for call_id, value in values.items():
        assert by_call[call_id].keep_result == pytest.approx(weights.answers(value)[1])
        assert (by_call[call_id].keep_result >= 0.5) == (value >= weights.keep_level)
