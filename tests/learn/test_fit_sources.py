"""Where `tracetrim fit` learns from: folders of trajectories, an ENFORCE rollout's records and archive."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

import tracetrim as tt
from tests.conftest import DATA, require_data
from tracetrim._json import canonical_json
from tracetrim._marker import is_shortened, is_tombstone
from tracetrim.archive import FileArchive
from tracetrim.audit._observer import read_files
from tracetrim.decision import LearnedDecisionModel
from tracetrim.decision._learned import default_weights
from tracetrim.learn import (
    Trajectory,
    auc,
    calibration,
    cuts,
    format_calibration,
    group_of,
    hashed_folds,
    mini_swe_agent,
    ranked_folds,
    read_only_tools,
    shared_datasets,
    swe_agent,
    tau_bench_folder,
)
from tracetrim.learn._archived import archived_runs


def _host(
    run: Trajectory,
    session: str,
    archive: FileArchive,
    audit: Path,
    *,
    tombstones: bool = False,
    rewrite: bool = False,
) -> list[tt.Outcome]:
    """An agent host on ``run``: compacts (ENFORCE) at a third, a half and three quarters of it,
    continuing each time from the history it adopted plus the messages that came next (``rewrite``:
    after the first compaction the host replaces the task message with its own summary)."""
    compactor = tt.Compactor(
        config=tt.CompactorConfig(eligible_tools={"bash"}, minimum_reduction=0.0, tombstones=tombstones),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE, observer=tt.JsonLinesObserver(audit)),
        archive=archive,
    )
    scope = tt.Scope("team", "coder", session)
    messages = run.messages
    stops = [len(messages) // 3, len(messages) // 2, 3 * len(messages) // 4]
    history, outcomes = list(messages[: stops[0]]), []
    for done, upto in zip(stops, [*stops[1:], None], strict=True):
        outcome = asyncio.run(compactor.plan(tt.CompactionRequest(history, scope=scope)))
        outcomes.append(outcome)
        if outcome.adopted:
            assert outcome.plan is not None
            history = list(outcome.plan.messages)
        if upto is not None:
            history += messages[done:upto]
        if rewrite and len(outcomes) == 1:
            history[1] = {**history[1], "content": [{"type": "text", "text": "The task, summarised."}]}
    return outcomes


@pytest.fixture(scope="module")
def rollout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Trajectory]]:
    """Two mini-swe-agent runs compacted three times each, as a host in ENFORCE would (the second
    leaving tombstones): the archive and the records are the real ones (`FileArchive`,
    `JsonLinesObserver`)."""
    root = tmp_path_factory.mktemp("rollout")
    runs = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=2)
    archive = FileArchive(root / "archive")
    for n, run in enumerate(runs):
        outcomes = _host(run, f"run-{n}", archive, root / "audit.jsonl", tombstones=n == 1)
        assert all(o.adopted for o in outcomes), [str(o.reason) for o in outcomes]
    return root, runs


@pytest.mark.data
def test_records_and_archive_rebuild_each_run_up_to_its_last_compaction(
    rollout: tuple[Path, list[Trajectory]],
) -> None:
    root, runs = rollout
    archive = FileArchive(root / "archive")
    records = read_files([root / "audit.jsonl"]).records
    rebuilt = asyncio.run(archived_runs(records, archive))
    assert rebuilt.problems == [] and rebuilt.unarchived == 0
    assert [t.name for t in rebuilt.trajectories] == ["team/coder/run-0", "team/coder/run-1"]
    for n, (trajectory, run) in enumerate(zip(rebuilt.trajectories, runs, strict=True)):
        last_stop = 3 * len(run.messages) // 4
        assert canonical_json(trajectory.messages) == canonical_json(run.messages[:last_stop])
        # The last snapshot alone still holds the earlier compactions' cuts: rebuilding did real work.
        scope = tt.Scope("team", "coder", f"run-{n}")
        last_ref = [r.archive_ref for r in records if r.scope == scope.as_dict()][-1]
        last = asyncio.run(archive.restore(scope, last_ref))
        assert canonical_json(last) != canonical_json(trajectory.messages)
        # mini-swe-agent's commands are in its prose: a drop leaves the call and a stub, never a tombstone
        assert not any(is_tombstone(block) for message in last for block in message["content"])


@pytest.mark.data
def test_a_missing_snapshot_leaves_its_run_out_and_says_so(
    rollout: tuple[Path, list[Trajectory]], tmp_path: Path
) -> None:
    root, _ = rollout
    copy = tmp_path / "archive"
    shutil.copytree(root / "archive", copy)
    archive = FileArchive(copy)
    records = list(read_files([root / "audit.jsonl"]).records)
    gone = next(
        r for r in records if r.scope == {"user_id": "team", "agent_id": "coder", "session_id": "run-1"}
    )
    assert asyncio.run(archive.delete(tt.Scope("team", "coder", "run-1"), gone.archive_ref))
    # A SHADOW plan archives nothing: its record names no snapshot and is counted, not rebuilt.
    shadow = tt.Compactor(
        execution=tt.ExecutionOptions(observer=tt.JsonLinesObserver(tmp_path / "shadow.jsonl"))
    )
    run = mini_swe_agent(DATA / "mini-swe-agent", limit=1)[0]
    asyncio.run(shadow.plan(tt.CompactionRequest(run.messages, scope=tt.Scope("team", "coder", "shadow"))))
    records += read_files([tmp_path / "shadow.jsonl"]).records

    rebuilt = asyncio.run(archived_runs(records, archive))
    assert [t.name for t in rebuilt.trajectories] == ["team/coder/run-0"] and rebuilt.unarchived == 1
    assert len(rebuilt.problems) == 1 and rebuilt.problems[0].startswith("team/coder/run-1: left out")


@pytest.mark.data
def test_a_history_rewritten_between_compactions_keeps_its_run(tmp_path: Path) -> None:
    """mini-swe-agent's commands are in its prose, so its compactions shorten and stub results but
    remove no message: a history rewritten in between still derives from the snapshot, and every
    result comes back."""
    run = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=1)[0]
    archive = FileArchive(tmp_path / "archive")
    outcomes = _host(run, "rewritten", archive, tmp_path / "audit.jsonl", rewrite=True)
    first = outcomes[0].plan
    assert first is not None
    assert {tt.Action.DROP_CALL, tt.Action.DROP_RESULT} & {d.action for d in first.decisions}

    rebuilt = asyncio.run(archived_runs(read_files([tmp_path / "audit.jsonl"]).records, archive))
    assert rebuilt.problems == []
    (trajectory,) = rebuilt.trajectories
    assert trajectory.messages[1]["content"] == [{"type": "text", "text": "The task, summarised."}]
    assert not any(is_shortened(b) for m in trajectory.messages for b in m["content"])
    assert len(trajectory.messages) == 3 * len(run.messages) // 4


def _fit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetrim", "fit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


@pytest.mark.data
def test_fit_learns_from_records_and_their_archive(
    rollout: tuple[Path, list[Trajectory]], tmp_path: Path
) -> None:
    root, _ = rollout
    out = tmp_path / "model.json"
    done = _fit(
        tmp_path, "--records", str(root / "audit.jsonl"), "--archive", str(root / "archive"), "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert "2 runs rebuilt from 6 records (0 with no archived history)" in done.stdout
    assert "tracetrim (fitted)" in done.stdout and "keep-last-10" in done.stdout
    assert LearnedDecisionModel(out).weights.trained_on["record_files"] == 1


@pytest.mark.data
def test_fit_reads_the_trajectory_files_of_a_folder(tmp_path: Path) -> None:
    source = require_data(DATA / "mini-swe-agent")
    folder = tmp_path / "runs" / "nested"
    folder.mkdir(parents=True)
    for path in sorted(source.glob("*.traj.json"))[:4]:
        shutil.copy(path, folder / path.name)
    (folder / "LICENSE").write_text("not a trajectory", encoding="utf-8")
    (folder / "resolved.json").write_text('{"resolved": ["a", "b"]}', encoding="utf-8")
    done = _fit(tmp_path, str(tmp_path / "runs"), "-o", str(tmp_path / "m.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 trajectories") and "tracetrim (fitted)" in done.stdout
    assert (
        "held-out ranking: AUC 0." in done.stdout and "need by quintile, predicted -> used: 0." in done.stdout
    )
    assert "skipped" in done.stderr and "resolved.json" in done.stderr and "LICENSE" not in done.stderr
    # Named on its own, the same file is an error.
    named = _fit(tmp_path, str(folder / "resolved.json"), "-o", str(tmp_path / "m.json"))
    assert named.returncode == 2 and "resolved.json: a JSON object with keys resolved" in named.stderr


@pytest.mark.data
def test_fit_moves_the_levels_and_traces_the_curve(tmp_path: Path) -> None:
    files = sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))[:4]
    out = tmp_path / "m.json"
    done = _fit(tmp_path, *map(str, files), "-o", str(out), "--curve", "--level-shift", "0.3")
    assert done.returncode == 0, done.stderr
    shown = [line.split()[1:5] for line in done.stdout.splitlines() if line.startswith("held-out  ")]
    # The fitted judge, its four shifted levels, the shipped judge, seven masking rows, the excerpt
    # with no judge.
    assert shown[2][:3] == ["fitted,", "levels", "+0.3"] and shown[5][:2] == ["shipped", "judge,"]
    assert len(shown) == 14
    assert shown[-1][:3] == ["excerpt", "every", "result"]
    weights, shipped = LearnedDecisionModel(out).weights, default_weights()
    assert (weights.keep_level, weights.call_level) == pytest.approx(
        (shipped.keep_level + 0.3, shipped.call_level + 0.3)
    )
    refused = _fit(tmp_path, *map(str, files), "-o", str(out), "--level-shift", "nan")
    assert refused.returncode == 2 and "must be a finite number" in refused.stderr


@pytest.mark.data
def test_fit_chooses_the_level_shift_for_a_findable_target(tmp_path: Path) -> None:
    files = [str(p) for p in sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))[:4]]
    out = tmp_path / "m.json"
    chosen, lines = {}, {}
    for target in ("0.5", "1.0"):
        done = _fit(tmp_path, *files, "-o", str(out), "--target-findable", target)
        assert done.returncode == 0, done.stderr
        line = lines[target] = next(x for x in done.stdout.splitlines() if x.startswith("level shift "))
        chosen[target] = float(line.split()[2])
        assert LearnedDecisionModel(out).weights.keep_level == pytest.approx(
            default_weights().keep_level + chosen[target]
        )
    # Asking to keep everything chooses the most cautious shift and says it fell short, or reached it.
    assert chosen["1.0"] < chosen["0.5"]
    assert chosen["1.0"] == -0.9 if "short of the target" in lines["1.0"] else ": 100.0% at" in lines["1.0"]
    both = _fit(tmp_path, *files, "-o", str(out), "--target-findable", "0.9", "--level-shift", "0.3")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    one = _fit(tmp_path, files[0], "-o", str(out), "--target-findable", "0.9")
    assert one.returncode == 2 and "--target-findable needs a held-out frontier" in one.stderr


@pytest.mark.data
def test_fit_with_too_few_runs_for_folds_still_fits(tmp_path: Path) -> None:
    """Two short SWE-agent runs: a fold trained on one run that used nothing again cannot be fitted,
    so the frontier is left out and said so, and the weights are still fitted on both."""
    source = require_data(DATA / "swe-agent")
    files = [str(p) for p in sorted(source.glob("*.traj"))[:4]]
    done = _fit(tmp_path, *files, "-o", str(tmp_path / "m.json"))
    assert done.returncode == 0, done.stderr
    assert "(too few runs for a held-out frontier: every example has the same label" in done.stdout
    assert LearnedDecisionModel(tmp_path / "m.json").weights.trained_on["trajectories"] == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "fit needs trajectory files or --records"),
        (("--records", "audit.jsonl"), "--records needs --archive"),
        (("--records", "missing.jsonl", "--archive", "."), "missing.jsonl: no such file"),
        (("--records", "audit.jsonl", "--archive", "nowhere"), "archive folder 'nowhere' does not exist"),
        (("empty",), "empty: no *.json, *.jsonl or *.traj files in this folder"),
        (("absent.json",), "absent.json: no such file or folder"),
    ],
)
def test_fit_says_what_is_wrong_with_its_sources(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "audit.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    done = _fit(tmp_path, *args, "-o", str(tmp_path / "m.json"))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.data
def test_ranked_folds_leave_no_fold_empty_where_a_hash_can() -> None:
    runs = mini_swe_agent(require_data(DATA / "mini-swe-agent"), limit=4)
    selected = cuts([attrs.evolve(run, group=f"run-{n}") for n, run in enumerate(runs)])
    ranked = ranked_folds(selected, 4)
    assert sorted({ranked(cut) for cut in selected}) == [0, 1, 2, 3]
    # Every cut of a run in one fold, whichever way folds are assigned.
    for fold in (ranked, hashed_folds(4)):
        assert len({(group_of(c), fold(c)) for c in selected}) == 4
    hashed = hashed_folds(4)
    assert {hashed(c) for c in selected} != {0, 1, 2, 3}  # these four names share a fold under the hash


@pytest.mark.data
def test_fit_on_one_run_fits_and_says_there_is_no_held_out_frontier(tmp_path: Path) -> None:
    (first,) = sorted(require_data(DATA / "mini-swe-agent").glob("*.traj.json"))[:1]
    done = _fit(tmp_path, str(first), "-o", str(tmp_path / "m.json"))
    assert done.returncode == 0, done.stderr
    assert "(one run: no held-out frontier" in done.stdout and "tracetrim (fitted)" not in done.stdout


def test_auc_counts_ties_half_and_calibration_slices_by_score() -> None:
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auc([0.5, 0.5], [0, 1]) == 0.5 and math.isnan(auc([0.2, 0.3], [1, 1]))
    scores = [0.9, 0.1, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5, 0.0]
    labels = [1, 0, 0, 1, 0, 1, 0, 0, 1, 0]
    sliced = calibration(scores, labels)
    assert [x for pair in sliced for x in pair] == pytest.approx(
        [0.05, 0.0, 0.25, 0.0, 0.45, 0.5, 0.65, 0.5, 0.85, 1.0]
    )
    assert format_calibration([(0.05, 0.0), (0.25, 0.5)]) == "0.05->0.00  0.25->0.50"


@pytest.mark.data
def test_records_with_pair_detail_tell_which_tools_the_host_opted_in(tmp_path: Path) -> None:
    """The host opted in only reads; its records' per-pair detail says so, and the rebuilt run's
    candidates are what the host's were (without detail, every tool the run calls)."""
    run = next(
        r for r in swe_agent(require_data(DATA / "swe-agent")) if r.name == "ctf_crypto_BabyEncryption"
    )
    archive = FileArchive(tmp_path / "archive")
    compactor = tt.Compactor(
        config=tt.CompactorConfig(eligible_tools={"open", "python"}, minimum_reduction=0.0),
        execution=tt.ExecutionOptions(
            mode=tt.Mode.ENFORCE, observer=tt.JsonLinesObserver(tmp_path / "audit.jsonl", pairs=True)
        ),
        archive=archive,
    )
    outcome = asyncio.run(
        compactor.plan(tt.CompactionRequest(run.messages, scope=tt.Scope("team", "ctf", "one")))
    )
    assert outcome.adopted and outcome.plan is not None
    left_out = {d.tool for d in outcome.plan.decisions if d.reason == "tool_not_eligible"}
    assert {"create", "edit"} <= left_out

    records = read_files([tmp_path / "audit.jsonl"]).records
    (rebuilt,) = asyncio.run(archived_runs(records, archive)).trajectories
    assert "open" in rebuilt.tools() and not rebuilt.tools() & left_out
    (given,) = asyncio.run(archived_runs(records, archive, eligible_tools=frozenset({"edit"}))).trajectories
    assert given.tools() == {"edit"}
    bare = [attrs.evolve(r, pairs=None) for r in records]
    (plain,) = asyncio.run(archived_runs(bare, archive)).trajectories
    assert plain.eligible_tools is None and left_out <= plain.tools()


def test_read_only_tools_are_tau_benchs_reads_in_either_domain() -> None:
    airline = {"get_user_details", "get_reservation_details", "search_direct_flight", "list_all_airports"}
    retail = {
        "find_user_id_by_email",
        "find_user_id_by_name_zip",
        "get_order_details",
        "list_all_product_types",
    }
    writes = {
        "book_reservation",
        "update_reservation_flights",
        "send_certificate",
        "cancel_pending_order",
        "modify_pending_order_items",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
        "transfer_to_human_agents",
    }
    pure = {"calculate", "think"}
    assert read_only_tools(airline | retail | writes | pure) == airline | retail | pure


@pytest.mark.data
def test_every_tau_bench_file_joins_and_two_domains_never_share_a_task(tmp_path: Path) -> None:
    """Two files stand in for two domains (both cut from the shared airline runs: no retail runs are
    shared); the first file alone reads exactly as the shared dataset does."""
    runs = json.loads(require_data(DATA / "tau-bench" / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    folder = tmp_path / "tau-bench"
    folder.mkdir()
    (folder / "gpt-4o-airline.json").write_text(json.dumps(runs[:3]), encoding="utf-8")
    alone = tau_bench_folder(folder)
    assert [t.group for t in alone] == [f"task-{run['task_id']}" for run in runs[:3]]
    assert any(t.eligible_tools for t in alone)
    assert all(read_only_tools(t.tools()) == t.tools() and "book_reservation" not in t.tools() for t in alone)
    (folder / "gpt-4o-retail.json").write_text(json.dumps(runs[:2]), encoding="utf-8")
    both = tau_bench_folder(folder)
    assert len(both) == 5 and len({t.name for t in both}) == 5
    assert {t.group for t in both[:3]}.isdisjoint(t.group for t in both[3:])
    assert both[3].group == f"gpt-4o-retail/task-{runs[0]['task_id']}"
    (tmp_path / "data").mkdir()
    folder.rename(tmp_path / "data" / "tau-bench")
    assert len(shared_datasets(tmp_path, names=["tau-bench"])["tau-bench"]) == 5
