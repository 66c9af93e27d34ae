"""Plan records as JSON lines, follow-ups, and `tracetrim audit` answering the rollout questions."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import attrs
import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, tool_history, user
from tracetrim.archive import FileArchive, RecallTool
from tracetrim.audit._advice import recommend, sweep
from tracetrim.audit._html import drops_table
from tracetrim.audit._observer import RecordError, read_audit, read_records
from tracetrim.audit._report import audit
from tracetrim.audit._summary import pair_rows, summarise
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel

SCOPE = tt.Scope("user-1", "agent-1", "session-1")
TOOLS = ("read_file", "grep")


def two_tool_history(pairs: int) -> list[dict[str, Any]]:
    """``pairs`` old call/result pairs alternating read_file and grep (c1, c2, ...), then recent turns."""
    messages = [user("m0", "Please fix the bug in the parser module.")]
    for n in range(1, pairs + 1):
        tool = TOOLS[n % 2]
        messages.append(assistant(f"a{n}", text(f"step {n}"), call(f"c{n}", tool), result(f"c{n}", tool)))
    for n in range(6):
        messages.append(user(f"r{n}", f"recent {n}") if n % 2 == 0 else assistant(f"r{n}", text("ok")))
    return messages


# c1..c8: c1 (grep) and c2 (read_file) kept as needed, the rest dropped or shortened; probabilities
# spread so that other thresholds change the verdicts.
ANSWERS = {
    "c1": (0.9, 0.8),
    "c2": (0.7, 0.6),
    "c3": (0.2, 0.3),
    "c4": (0.1, 0.1),
    "c5": (0.8, 0.2),
    "c6": (0.05, 0.45),
    "c7": (0.3, 0.05),
    "c8": (0.6, 0.4),
}


def compactor(
    observer: Any, mode: tt.Mode = tt.Mode.SHADOW, archive: Any = None, answers: Any = None
) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel.by_call_id(answers or ANSWERS),
        config=tt.CompactorConfig(eligible_tools=set(TOOLS)),
        execution=tt.ExecutionOptions(mode=mode, observer=observer),
        archive=archive,
    )


async def _plans(path: Path, *, pairs: bool = True) -> list[tt.Outcome]:
    """A decided plan, a skipped one, a failed one and a decided one in another session."""
    observer = tt.JsonLinesObserver(path, pairs=pairs)

    async def broken(state: object, questions: object) -> tt.decision.DecisionResponse:
        raise ConnectionError("server down")

    outcomes = [await compactor(observer).plan(tt.CompactionRequest(two_tool_history(8), scope=SCOPE))]
    observer.report(tt.Followup.used("c3", SCOPE))  # dropped, then needed: a loss for grep
    observer.report(tt.Followup.used("c1", SCOPE))  # kept and needed: no loss
    outcomes.append(
        await compactor(observer).plan(tt.CompactionRequest(two_tool_history(8)[:3], scope=SCOPE))
    )
    outcomes.append(
        await tt.Compactor(
            broken,
            config=tt.CompactorConfig(eligible_tools=set(TOOLS)),
            execution=tt.ExecutionOptions(observer=observer),
        ).plan(tt.CompactionRequest(two_tool_history(4)))
    )
    other = tt.Scope("user-1", "agent-1", "session-2")
    outcomes.append(await compactor(observer).plan(tt.CompactionRequest(two_tool_history(8), scope=other)))
    return outcomes


async def test_records_round_trip_with_opt_in_pairs(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    outcomes = await _plans(path)
    found = read_audit(path.read_text().splitlines(), str(path))
    assert not found.junk and len(found.followups) == 2
    records = found.records
    assert [(r.status, r.reason) for r in records] == [(o.status.value, o.reason) for o in outcomes]
    plan = outcomes[0].plan
    assert plan is not None and records[0].pairs is not None
    assert [(p.call_id, p.tool, p.action, p.reason) for p in records[0].pairs] == [
        (d.call_id, d.tool, d.action.value, d.reason) for d in plan.decisions
    ]
    first = records[0].pairs[0]
    assert (first.keep_call, first.keep_result) == ANSWERS["c1"]
    assert first.tokens_before == (first.chars_before + 3) // 4
    # c1 sits in the first of 8 old turns, then 3 recent assistant turns follow: 7 + 3 = 10 turns later
    assert [p.age_turns for p in records[0].pairs][:2] == [10, 9]
    assert records[0].scope == SCOPE.as_dict() and records[0].record_version == 2
    assert all(p.call_input is None and p.result_text is None for p in records[0].pairs)
    assert records[1].pairs is not None and {p.action for p in records[1].pairs} == {"keep"}
    assert records[2].pairs is None  # the model failed: no plan, nothing per pair


async def test_pairs_and_content_are_opt_in(tmp_path: Path) -> None:
    plain, content = tmp_path / "plain.jsonl", tmp_path / "content.jsonl"
    messages = two_tool_history(8)
    await compactor(tt.JsonLinesObserver(plain)).plan(tt.CompactionRequest(messages, scope=SCOPE))
    await compactor(tt.JsonLinesObserver(content, pairs=True, content=True)).plan(
        tt.CompactionRequest(messages, scope=SCOPE)
    )
    line = json.loads(plain.read_text())
    assert "pairs" not in line and "some file content" not in plain.read_text()
    pairs = {p["call_id"]: p for p in json.loads(content.read_text())["pairs"]}
    assert pairs["c3"]["result_text"] == messages[3]["content"][2]["output"]
    assert pairs["c3"]["call_input"] == messages[3]["content"][1]["input"]
    with pytest.raises(ValueError, match="content needs pairs"):
        tt.JsonLinesObserver(plain, content=True)


async def test_a_record_carries_every_plan_stats_field(tmp_path: Path) -> None:
    records: list[tt.Record] = []
    outcome = await compactor(records.append).plan(tt.CompactionRequest(two_tool_history(8), scope=SCOPE))
    assert outcome.plan is not None
    stats = attrs.asdict(outcome.plan.stats)
    line = json.loads(json.dumps(tt._record.record_json(records[0])))
    for name, value in stats.items():
        if name == "elapsed_ms":  # the record's time is the whole plan's, measured a moment later
            assert line[name] >= value
        elif name == "reduction":
            assert line[name] == pytest.approx(value, abs=1e-6)
        else:
            assert line[name] == value, name
    assert records[0].stats == attrs.evolve(
        outcome.plan.stats, elapsed_ms=records[0].elapsed_ms, reduction=records[0].reduction
    )


def test_version_1_and_future_lines_are_read() -> None:
    # A line exactly as records were written before per-pair detail existed.
    v1 = (
        '{"actions":{"drop_call":4},"archive_ref":"","candidates":4,"chars_after":3000,"chars_before":9000,'
        '"detail":"","elapsed_ms":12.5,"fitting_stage":"whole_history","input_tokens":10,"messages_after":9,'
        '"messages_before":11,"mode":"shadow","output_tokens":2,"protected":0,"purpose":"compaction",'
        '"reason":"SHADOW_PROPOSAL","reduction":0.666667,"requests":1,"retries":0,"scope":null,'
        '"state_tokens":5,"status":"DECIDED","version":"v1"}'
    )
    future = json.dumps(
        json.loads(v1) | {"record_version": 9, "a_field_from_the_future": [1, 2], "pairs": []}
    )
    old, new = read_records([v1, future])
    assert old.record_version == 1 and old.pairs is None and old.chars_before == 9000 and old.at == ""
    assert new.record_version == 9 and new.pairs == () and new.requests == 1


JUNK = [
    "{not json",
    "[1, 2]",
    '{"status": "DECIDED"}',
    '{"event": "forgot", "call_id": "c1"}',
]


async def test_junk_lines_are_reported_with_line_numbers_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "records.jsonl"
    await _plans(path)
    lines = path.read_text().splitlines()
    mixed = [JUNK[0], *lines[:3], JUNK[1], "", *lines[3:], JUNK[2], JUNK[3]]
    path.write_text("\n".join(mixed) + "\n")
    assert main(["audit", str(path)]) == 0
    captured = capsys.readouterr()
    skipped = [line for line in captured.err.splitlines() if line.startswith("skipped ")]
    assert [re.search(r"line (\d+):", line).group(1) for line in skipped] == ["1", "5", "10", "11"]  # type: ignore[union-attr]
    assert "line 1: not JSON" in skipped[0] and "line 5: not a JSON object (a list)" in skipped[1]
    assert "not a plan record (required field missing @ $.purpose" in skipped[2]
    assert "not a follow-up (" in skipped[3] and "forgot" in skipped[3]
    assert "plans: 4 " in captured.out and "skipped 4 junk line(s)" in captured.out
    with pytest.raises(RecordError, match="line 1: not JSON"):
        read_records(mixed)

    (tmp_path / "junk.jsonl").write_text("\n".join(JUNK) + "\n")
    assert main(["audit", str(tmp_path / "junk.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("skipped ") == 4 and err.strip().endswith(
        "no plan records in " + str(tmp_path / "junk.jsonl")
    )


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in:\n{text}"
    return float(found.group(1).replace(",", ""))


async def test_terminal_totals_equal_a_recomputation_from_the_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "records.jsonl"
    await _plans(path)
    assert main(["audit", str(path), "--price-per-mtok", "2.5"]) == 0
    out = capsys.readouterr().out

    # The recomputation reads the raw JSON itself: no tracetrim code between the file and the totals.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    plans = [line for line in lines if "event" not in line]
    used = [line for line in lines if line.get("event") == "used"]
    decided = [p for p in plans if p["status"] == "DECIDED"]
    seen = sum(p["chars_before"] for p in plans)
    saved = sum(p["chars_before"] - p["chars_after"] for p in decided)
    tokens = (saved + 3) // 4
    removed = [
        (p, pair)
        for p in decided
        for pair in p.get("pairs") or []
        if pair["action"] in ("drop_result", "drop_call")
    ]
    needed = [
        (p, pair)
        for p, pair in removed
        if any(
            u["call_id"] == pair["call_id"] and u["scope"] == p["scope"] and u["at"] >= p["at"] for u in used
        )
    ]
    assert len(needed) == 1  # c3 in session-1; session-2's plan of the same ids was never followed up
    assert _number(r"plans: (\d+)", out) == len(plans) == 4
    assert _number(r"would save: ([\d,]+) of", out) == saved
    assert _number(r"of ([\d,]+) characters over all", out) == seen
    assert _number(r"characters over all \d+ plans \(([\d.]+)%\)", out) == round(100 * saved / seen, 1)
    assert _number(r"about ([\d,]+) tokens", out) == tokens
    assert _number(r"\$([\d.]+) at \$2.5/Mtok", out) == pytest.approx(tokens * 2.5 / 1e6, abs=1e-4)
    assert _number(r"; (\d+) decided", out) == len(decided) == 2
    assert _number(r"(\d+) saved nothing", out) == len(plans) - len(decided)
    status = {s: sum(1 for p in plans if p["status"] == s) for s in {p["status"] for p in plans}}
    assert all(f"{name} {count}" in out.split("\n")[1] for name, count in status.items())
    assert _number(r"(\d+) of \d+ removed results needed later", out) == len(needed)
    assert _number(r"\d+ of (\d+) removed results needed later", out) == len(removed)
    grep_removed = [pair for _, pair in removed if pair["tool"] == "grep"]
    assert _number(r"grep (\d+)/", out) == len(grep_removed)
    assert _number(
        r"grep \d+/\d+ \(\d+ dropped, \d+ shortened, [\d,]+ chars, loss ([\d.]+)%\)", out
    ) == round(100 * 1 / len(grep_removed), 1)
    assert _number(r"decision model: (\d+) requests", out) == sum(p["requests"] for p in plans)
    assert _number(r"latency per plan: median ([\d.]+) ms", out) == round(
        statistics.median(p["elapsed_ms"] for p in plans), 1
    )
    assert "failure ERROR/MODEL_ERROR" in out and "server down" in out

    assert main(["audit", str(path), str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plans"] == 8 and data["chars_saved"] == 2 * saved and data["skipped"] == []


async def test_the_recall_tool_reports_what_the_agent_recalled(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    observer = tt.JsonLinesObserver(path, pairs=True)
    archive = FileArchive(tmp_path / "archive")
    outcome = await compactor(observer, tt.Mode.ENFORCE, archive).plan(
        tt.CompactionRequest(two_tool_history(8), scope=SCOPE)
    )
    assert outcome.adopted
    recall = RecallTool(archive, SCOPE, reporter=observer.report)
    assert "line 0 of c4" in await recall("c4")
    found = read_audit(path.read_text().splitlines())
    assert [(f.event, f.call_id, f.scope, f.archive_ref) for f in found.followups] == [
        ("recalled", "c4", SCOPE.as_dict(), outcome.plan.archive_ref if outcome.plan else "")
    ]
    summary = summarise(found.records, found.followups)
    assert summary.needed == 1 and summary.loss_rate == pytest.approx(1 / summary.removed)
    read_file = next(t for t in summary.tools if t.tool == "read_file")
    assert read_file.needed == 1 and read_file.loss_rate == pytest.approx(1 / read_file.removed)

    def broken(followup: tt.Followup) -> None:
        raise OSError("disk full")

    assert "line 0 of c4" in await RecallTool(archive, SCOPE, reporter=broken)("c4")  # still answers
    with pytest.raises(TypeError, match="reporter must be a callable"):
        RecallTool(archive, SCOPE, reporter="log.jsonl")  # type: ignore[arg-type]


async def test_loss_rates_per_tool_and_threshold(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    await _plans(path)
    found = read_audit(path.read_text().splitlines())
    rows = pair_rows(found.records, found.followups)
    points = {p.threshold: p for p in sweep(rows)}
    # At 0.5 the policy removes c3..c8 in both decided plans; only session-1's c3 was needed later.
    assert (points[0.5].removed, points[0.5].needed) == (12, 1)
    # At 0.35 c6 (p_result 0.45) and c8 (0.4) stay: 8 removed, still one loss.
    assert (points[0.35].removed, points[0.35].needed) == (8, 1)
    # At 0.25 c3 (p_result 0.3) stays too: no loss left.
    assert (points[0.25].removed, points[0.25].needed, points[0.25].loss_rate) == (6, 0, 0.0)
    # At 0.65 c2 (0.6) goes as well.
    assert points[0.65].removed == 14
    advice = recommend(rows, summarise(found.records, found.followups).tools, min_decisions=2)
    # 0.25 and 0.3 (p_result 0.3 is kept: at or above keep) save the same; the one nearer 0.5 wins.
    assert advice.best is not None and advice.best.threshold == 0.3 and advice.best.loss_rate == 0.0
    verdicts = {v.tool: v for v in advice.verdicts}
    assert verdicts["read_file"].ready and verdicts["grep"].kind == "loss"
    # grep's own sweep: at 0.3 c3 stays, c5 and c7 are shortened in both sessions, nothing needed.
    grep_best = verdicts["grep"].best
    assert grep_best is not None and (grep_best.threshold, grep_best.removed, grep_best.needed) == (0.3, 4, 0)
    assert "at threshold 0.30 it would have removed 4 with loss 0.0%" in verdicts["grep"].why
    assert "Ready for ENFORCE on read_file" in advice.text and "keep SHADOW for grep" in advice.text
    lenient = recommend(
        rows, summarise(found.records, found.followups).tools, target_loss=0.5, min_decisions=2
    )
    assert (
        lenient.best is not None and lenient.best.threshold == 0.95 and all(v.ready for v in lenient.verdicts)
    )
    strict = recommend(rows, summarise(found.records, found.followups).tools)
    assert {v.kind for v in strict.verdicts} == {"few", "loss"}


async def test_without_follow_ups_the_loss_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "records.jsonl"
    observer = tt.JsonLinesObserver(path, pairs=True)
    await compactor(observer).plan(tt.CompactionRequest(two_tool_history(8), scope=SCOPE))
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert "loss rate is unknown" in out and "loss unknown" in out and "Ready for ENFORCE" not in out


def test_followups_are_validated() -> None:
    with pytest.raises(ValueError, match="event must be one of"):
        tt.Followup(event="quoted", call_id="c1")
    with pytest.raises(ValueError, match="call_id must be a non-empty string"):
        tt.Followup.used("")
    with pytest.raises(TypeError, match=r"scope must be a tracetrim\.Scope"):
        tt.Followup.used("c1", {"user_id": "u"})  # type: ignore[arg-type]


def test_quoted_calls_finds_results_the_agent_reused() -> None:
    messages = tool_history(3)
    # After the cut the agent quotes a line only c2's result showed.
    messages.append(assistant("late", text("the bug is here: line 7 of c2: some file content here")))
    assert tt.quoted_calls(messages, len(messages) - 1) == ["c2"]
    assert tt.quoted_calls(messages, len(messages)) == []
    with pytest.raises(ValueError, match="since must be between"):
        tt.quoted_calls(messages, len(messages) + 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep-threshold", "1.5"], "must be a share from 0 to 1"),
        (["--price-per-mtok", "-1"], "must be a finite, non-negative number"),
        (["--keep-threshold", "0.3", "--discard-threshold", "0.4"], "must not exceed --keep-threshold"),
    ],
)
async def test_bad_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "records.jsonl"
    await compactor(tt.JsonLinesObserver(path)).plan(tt.CompactionRequest(two_tool_history(4)))
    try:
        code = main(["audit", str(path), *args])
    except SystemExit as exc:  # argparse rejects a malformed value itself
        code = int(exc.code or 0)
    assert code == 2 and message in capsys.readouterr().err


def test_missing_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "nowhere.jsonl"]) == 2
    assert "nowhere.jsonl: no such file" in capsys.readouterr().err


def test_the_html_report_degrades_without_detail_and_escapes_what_records_say() -> None:
    v1 = json.dumps(
        {
            "purpose": "compaction",
            "version": "v1",
            "mode": "shadow",
            "status": "DECIDED",
            "reason": "SHADOW_PROPOSAL",
            "elapsed_ms": 3.0,
            "chars_before": 100,
            "chars_after": 40,
        }
    )
    hostile = json.loads(v1) | {
        "record_version": 2,
        "scope": {"user_id": "u", "agent_id": "a", "session_id": "<script>alert(1)</script>"},
        "pairs": [
            {
                "key": "t1",
                "call_id": "c1",
                "tool": "<img src=x>",
                "action": "drop_call",
                "reason": "r",
                "keep_call": 0.1,
                "keep_result": 0.1,
                "chars_before": 50,
                "chars_after": 0,
            }
        ],
    }
    found = read_audit([v1, json.dumps(hostile)])
    only_v1 = audit(read_audit([v1])).html()
    for chart in ("tools", "keep_result", "keep_call", "loss"):
        assert f'data-chart="{chart}" data-empty="true"' in only_v1
    assert 'data-chart="savings" viewBox' in only_v1 and 'data-chart="reasons" viewBox' in only_v1
    page = audit(found).html()
    assert "<img src=x>" not in page and "&lt;img src=x&gt;" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


async def test_a_pointer_to_a_later_copy_is_no_loss(tmp_path: Path) -> None:
    """An old result that became a pointer (`repeated_later`) and was used afterwards is still in the
    history, word for word in the later copy: the audit counts it removed but not lost, at every
    threshold of the sweep, and the report says where it is."""
    path = tmp_path / "records.jsonl"
    observer = tt.JsonLinesObserver(path, pairs=True)
    same = "".join(f"line {n}: the parser reads the config file\n" for n in range(60))
    messages = [user("m0", "Please fix the bug in the parser module.")]
    messages.append(assistant("a1", text("read it"), call("c1"), result("c1", output=same)))
    messages.append(assistant("a2", text("look"), call("c2", "grep"), result("c2", "grep")))
    messages.append(assistant("a3", text("again"), call("c3"), result("c3", output=same)))
    for n in range(6):
        messages.append(user(f"r{n}", f"recent {n}") if n % 2 == 0 else assistant(f"r{n}", text("ok")))
    answers = {"c1": (0.9, 0.9), "c2": (0.1, 0.1), "c3": (0.9, 0.9)}
    outcome = await compactor(observer, answers=answers).plan(tt.CompactionRequest(messages, scope=SCOPE))
    assert outcome.plan is not None
    reasons = {d.call_id: (d.action.value, d.reason) for d in outcome.plan.decisions}
    assert reasons["c1"] == ("drop_result", "repeated_later") and reasons["c2"][0] == "drop_call"
    observer.report(tt.Followup.used("c1", SCOPE))  # in the later copy: not lost
    observer.report(tt.Followup.used("c2", SCOPE))  # dropped and needed: lost
    found = read_audit(path.read_text().splitlines())
    rows = pair_rows(found.records, found.followups)
    summary = summarise(found.records, found.followups)
    assert (summary.removed, summary.needed, summary.loss_rate) == (2, 1, 0.5)
    assert {t.tool: (t.removed, t.needed) for t in summary.tools if t.removed} == {
        "read_file": (1, 0),
        "grep": (1, 1),
    }
    # c1 stays a pointer (removed, never lost) until a threshold drops it and c3 with it (0.95); c2
    # goes from 0.15 up.
    expected = {0.05: (1, 0), 0.1: (1, 0), 0.95: (3, 2)}
    for point in sweep(rows):
        assert (point.removed, point.needed) == expected.get(point.threshold, (2, 1)), point
    table = drops_table(rows)
    assert "yes, in the later copy" in table and table.count("<span class=lost>yes") == 1
