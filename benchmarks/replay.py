"""Replay whole runs of ../shared/data as a host would, for tracetrim and the strategies users pick instead.

Run from the repository root (about twelve minutes on two loaded cores at the defaults):

    .venv/bin/python benchmarks/replay.py                      # 60 mini-swe-agent runs, every other run
    .venv/bin/python benchmarks/replay.py --mini-runs 0        # every mini-swe-agent run (about 3x longer)
    .venv/bin/python benchmarks/replay.py --judge shipped      # the shipped judge (it saw these runs)
    .venv/bin/python benchmarks/replay.py --shares 0.6/0.4,0.8/0.6   # tracetrim's trigger/target shares

What is measured, per dataset (`tracetrim.replay`): every model call of every run, in order. The
baselines edit each request as they do where they run (observation masking keeping the last N results,
for N of 3, 5, 10, 15 and 20; Anthropic's ``clear_tool_uses`` and LangChain's ``ClearToolUsesEdit`` at
their documented 100,000-token trigger, and again at the host's trigger; the OpenAI Agents SDK's
``ToolOutputTrimmer`` at its defaults). tracetrim's threshold mode, budget mode, the budget adopting
nothing short of its target (``adopt_partial=False``), both modes with the cache gate at Anthropic's
and at OpenAI's prices (``cache_prices``; ``--no-gates`` leaves them out), both without tombstones
(``--without-tombstones``) and offload run through the real planner in ENFORCE with an in-memory
archive, fired by the host's rule: a context window W, compacting past 60% of it down to 40% (the
adapters' ``"auto"``), for three windows per dataset, so each strategy traces a curve of tokens billed
against content lost. Threshold mode is also fired before every call with no minimum reduction, as often
as the per-request editors edit, at ``keep_threshold`` 0.5 to 0.99 (`EVERY_CALL_KEEPS`).
The judge is held out: refitted per fold (4 folds by repository, task or run, as
``benchmarks/quality.py``) on the cuts of every shared run and the labelled scenarios, and each run is
judged by the fold that never saw its group (``--judge kind``: fitted on the other datasets only).

Reported: tokens billed (prompt tokens summed over calls, plus the extra turn each recall or re-run
costs), the same priced with Anthropic's and OpenAI's prompt-cache ratios, peak context, compactions and
how many paid back their cache rewrite, and the *uses* (a call writing strings an earlier result first
showed) whose strings were gone from that call's prompt: recallable (a tracetrim marker names the call),
re-run (the call is shown, its result cleared) or silent. Then, per baseline point, tracetrim's curves at
the same tokens billed (how much is lost there) and at the same loss (how many tokens are billed there).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetrim.decision import LearnedDecisionModel  # noqa: E402
from tracetrim.decision._learned import default_weights  # noqa: E402
from tracetrim.learn import (  # noqa: E402
    Examples,
    Trajectory,
    cuts,
    fold_of,
    held_out_models,
    joined,
    levels_of,
    shared_datasets,
)
from tracetrim.learn._scenarios import load_scenarios, scenario_examples  # noqa: E402
from tracetrim.replay import (  # noqa: E402
    ALL,
    ANTHROPIC,
    OPENAI,
    AnthropicClearToolUses,
    CachePrices,
    HostRule,
    KeepLastN,
    LangChainClearToolUses,
    NoCompaction,
    OpenAIToolOutputTrimmer,
    ReplayReport,
    ReplayStrategy,
    StrategyTotals,
    render_html,
    replay_runs,
    tracetrim_budget,
    tracetrim_offload,
    tracetrim_threshold,
)
from tracetrim.replay._result import report_totals  # noqa: E402
from tracetrim.replay._text import table, tokens  # noqa: E402

SHARED = REPO.parent / "shared"
FOLDS = 4
WINDOWS = {
    "mini-swe-agent": (8_000, 16_000, 32_000),
    "swe-agent": (4_000, 8_000, 16_000),
    "tau-bench": (2_000, 4_000, 8_000),
}
"""Context windows the host is given per dataset: the shared runs are short (median final size 17k,
7k and 3k tokens), so windows of real models (128k and more) would never fire; these make the host
compact in most runs, the middle one is the reference."""
MASK_KEEPS = (3, 5, 10, 15, 20)
EVERY_CALL_KEEPS = (0.5, 0.85, 0.95, 0.99)
"""``keep_threshold`` of threshold mode fired before every call with no minimum reduction: compacting
as often as the per-request editors do, it traces the judge's curve down to their tokens billed."""
EVERY_CALL = "tracetrim threshold, every call"
JudgeFor = Callable[[Trajectory], LearnedDecisionModel]
Entry = tuple[str, str, ReplayStrategy]
"""(family, setting, strategy): one point of a family's curve."""


@attrs.frozen
class Point:
    """One strategy at one setting on one dataset."""

    family: str
    setting: str
    totals: StrategyTotals
    none: StrategyTotals
    paid_openai: int = 0

    @property
    def billed(self) -> float:
        """Tokens billed as a share of no compaction's."""
        return self.totals.billed_tokens / self.none.billed_tokens

    @property
    def gone(self) -> float:
        """Share of uses whose strings the prompt lacked."""
        return self.totals.missing_share

    def cached(self, prices: CachePrices) -> float:
        """The cache-adjusted cost with ``prices``, as a share of no compaction's."""
        t, n = self.totals, self.none
        return (t.cache_read_tokens * prices.read + t.cache_write_tokens * prices.write) / (
            n.cache_read_tokens * prices.read + n.cache_write_tokens * prices.write
        )


def sample(runs: list[Trajectory], count: int) -> list[Trajectory]:
    """``count`` runs spread evenly over ``runs`` (sorted by name as the readers give them); 0: all."""
    if not count or count >= len(runs):
        return runs
    step = len(runs) / count
    return [runs[int(i * step)] for i in range(count)]


def judges(kind: str, shared: Path, datasets: dict[str, list[Trajectory]]) -> JudgeFor:
    """The judge per run: held out by group (``held-out``), by agent kind (``kind``), or the shipped one."""
    if kind == "shipped":
        shipped = LearnedDecisionModel()
        return lambda run: shipped
    started = time.perf_counter()
    scenarios = load_scenarios(shared / "scenarios")
    extra = (
        joined(*(scenario_examples(s) for s in scenarios.values())) if scenarios else Examples([], [], [], [])
    )
    every = [c for runs in datasets.values() for c in cuts(runs)]
    levels = levels_of(default_weights())
    if kind == "kind":
        names = sorted(datasets)
        models = held_out_models(
            every, len(names), levels, extra=extra, version="without-kind",
            fold=lambda cut: names.index(cut.trajectory.dataset),
        )  # fmt: skip
        chosen: JudgeFor = lambda run: models[names.index(run.dataset)]  # noqa: E731
    else:
        models = held_out_models(every, FOLDS, levels, extra=extra)
        chosen = lambda run: models[fold_of(f"{run.dataset}/{run.group}", FOLDS)]  # noqa: E731
    print(f"(judges fitted on {len(every):,} cuts in {time.perf_counter() - started:.0f} s)\n")
    return chosen


def _k(window: int) -> str:
    return f"{window // 1000}k"


def fixed_strategies() -> list[Entry]:
    """The strategies that do not depend on the host's rule: (family, setting, strategy)."""
    out: list[Entry] = [("none", "", NoCompaction())]
    out += [("keep-last-N", str(n), KeepLastN(n)) for n in MASK_KEEPS]
    out += [
        ("openai ToolOutputTrimmer", "defaults", OpenAIToolOutputTrimmer()),
        ("anthropic clear_tool_uses", "100k (documented)", AnthropicClearToolUses(name="anthropic @100k")),
        ("langchain ClearToolUsesEdit", "100k (documented)", LangChainClearToolUses(name="langchain @100k")),
    ]
    return out


def host_strategies(
    window: int, host: HostRule, judge_for: JudgeFor, *, tombstones: bool = False, gates: bool = True
) -> list[tuple[str, str, ReplayStrategy]]:
    """The strategies fired at (or scaled to) the host's trigger for one window: the clearing edits,
    tracetrim's threshold and budget modes at the library's defaults, the budget adopting nothing short
    of its target (``adopt_partial=False``), offload; with ``gates`` both planner modes with the cache
    gate at Anthropic's and OpenAI's prices, with ``tombstones`` both without tombstones."""
    trigger = host.trigger_tokens or 0
    w = _k(window)

    def planner(family: str, short: str, make: Callable[..., ReplayStrategy], **config: Any) -> Entry:
        return (family, f"W={w}", make(judge_for=judge_for, name=f"{short} @{w}", **config))

    out: list[Entry] = [
        (
            "anthropic clear_tool_uses",
            f"W={w}",
            AnthropicClearToolUses(trigger=trigger, name=f"anthropic @{w}"),
        ),
        (
            "langchain ClearToolUsesEdit",
            f"W={w}",
            LangChainClearToolUses(trigger=trigger, name=f"langchain @{w}"),
        ),
        planner("tracetrim threshold", "threshold", tracetrim_threshold),
        planner("tracetrim budget", "budget", tracetrim_budget),
        planner(
            "tracetrim budget, target or nothing", "budget-strict", tracetrim_budget, adopt_partial=False
        ),
        ("tracetrim offload", f"W={w}", tracetrim_offload(name=f"offload @{w}")),
    ]
    if gates:
        for label, prices in (("Anthropic", ANTHROPIC), ("OpenAI", OPENAI)):
            ratios = prices.ratios
            out += [
                planner(f"tracetrim threshold, cache gate {label}", f"threshold-gate-{prices.name}",
                        tracetrim_threshold, cache_prices=ratios),
                planner(f"tracetrim budget, cache gate {label}", f"budget-gate-{prices.name}",
                        tracetrim_budget, cache_prices=ratios),
            ]  # fmt: skip
    if tombstones:
        out += [
            planner("tracetrim threshold without tombstones", "threshold-tomb", tracetrim_threshold,
                    tombstones=False),
            planner("tracetrim budget without tombstones", "budget-tomb", tracetrim_budget, tombstones=False),
        ]  # fmt: skip
    return out


def every_call_strategies(judge_for: JudgeFor) -> list[Entry]:
    """Threshold mode fired before every call (``every_call``) with ``minimum_reduction=0``,
    one point per `EVERY_CALL_KEEPS` threshold: the way a host that pays for every prompt token and
    has no prompt cache to keep would run it."""
    return [
        (
            EVERY_CALL,
            f"keep {keep:g}",
            tracetrim_threshold(
                judge_for=judge_for, name=f"threshold every call @{keep:g}", every_call=True,
                keep_threshold=keep, minimum_reduction=0.0,
            ),
        )
        for keep in EVERY_CALL_KEEPS
    ]  # fmt: skip


def _points(
    report: ReplayReport, chosen: Sequence[tuple[str, str, ReplayStrategy]], none: StrategyTotals
) -> list[Point]:
    by_name = {t.strategy: t for t in report.totals_for(ALL)}
    paid = {
        name: sum(e.pays_back(OPENAI) for r in report.runs if r.strategy == name for e in r.events)
        for name in by_name
    }
    return [Point(f, s, by_name[st.name], none, paid[st.name]) for f, s, st in chosen]


def frontier(points: Sequence[Point]) -> list[tuple[float, float]]:
    """The efficient (billed, gone) points of a family, no compaction at (1, 0) included: by billed
    ascending, each losing less than every cheaper one."""
    pairs = sorted({(p.billed, p.gone) for p in points} | {(1.0, 0.0)})
    out: list[tuple[float, float]] = []
    for billed, gone in pairs:
        if not out or gone < out[-1][1]:
            out.append((billed, gone))
    return out


def _interpolate(curve: Sequence[tuple[float, float]], x: float) -> float | None:
    for (x0, y0), (x1, y1) in itertools.pairwise(curve):
        if min(x0, x1) <= x <= max(x0, x1) and x1 != x0:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    exact = [y for x0, y in curve if x0 == x]
    return min(exact) if exact else None


def at_equal_billed(curve: Sequence[tuple[float, float]], billed: float) -> str:
    """The family's loss at ``billed``: between its points, linear; billing more than its most
    lenient point, that point's loss (a larger window gets there); billing less than its cheapest,
    unreachable (``-``)."""
    if billed < curve[0][0]:
        return "-"
    if billed >= curve[-1][0]:
        return _pct(curve[-1][1])
    return _pct(_interpolate(curve, billed))


def at_equal_loss(curve: Sequence[tuple[float, float]], gone: float) -> str:
    """The family's tokens billed at loss ``gone``: between its points, linear; a loss above its
    cheapest point's, at most that point's billed (``<=``: it bills that little and loses less)."""
    if gone >= curve[0][1]:
        return f"<={curve[0][0]:.1%}"
    return _pct(_interpolate([(y, x) for x, y in curve], gone))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def points_table(points: Sequence[Point]) -> str:
    """Every strategy at every setting: billed and cache-adjusted shares, losses, compactions."""
    header = (
        "strategy", "setting", "billed", "anthr.", "openai", "peak", "gone", "recall", "re-run", "silent",
        "compact", "paid A/O", "plans", "plan s",
    )  # fmt: skip
    body = [
        (
            p.family,
            p.setting,
            _pct(p.billed),
            _pct(p.cached(ANTHROPIC)),
            _pct(p.cached(OPENAI)),
            tokens(p.totals.peak_context),
            _pct(p.gone),
            f"{p.totals.recallable:,}",
            f"{p.totals.rerun:,}",
            f"{p.totals.silent:,}",
            f"{p.totals.compactions:,}",
            f"{p.totals.paid_back:,}/{p.paid_openai:,}",
            f"{p.totals.plans:,}",
            f"{p.totals.planning_ms / 1000:.1f}",
        )
        for p in points
    ]
    return table(header, body)


TRACETRIM_FAMILIES = ("tracetrim threshold", EVERY_CALL, "tracetrim budget", "tracetrim offload")
FAMILIES = (
    "none",
    "keep-last-N",
    "openai ToolOutputTrimmer",
    "anthropic clear_tool_uses",
    "langchain ClearToolUsesEdit",
    "tracetrim threshold",
    "tracetrim threshold, cache gate Anthropic",
    "tracetrim threshold, cache gate OpenAI",
    "tracetrim threshold without tombstones",
    EVERY_CALL,
    "tracetrim budget",
    "tracetrim budget, target or nothing",
    "tracetrim budget, cache gate Anthropic",
    "tracetrim budget, cache gate OpenAI",
    "tracetrim budget without tombstones",
    "tracetrim offload",
)
"""The order of the points table."""
BASELINE_FAMILIES = (
    "keep-last-N",
    "anthropic clear_tool_uses",
    "langchain ClearToolUsesEdit",
    "openai ToolOutputTrimmer",
)


def comparison_table(points: Sequence[Point]) -> str:
    """Per baseline point: tracetrim's curves at its tokens billed (loss there) and at its loss (billed)."""
    curves = {f: frontier([p for p in points if p.family == f]) for f in TRACETRIM_FAMILIES}
    header = ["baseline", "setting", "billed", "gone"]
    for family in TRACETRIM_FAMILIES:
        short = family.removeprefix("tracetrim ")
        header += [f"{short}: gone@=billed", "billed@=gone"]
    body = []
    for p in points:
        if p.family not in BASELINE_FAMILIES:
            continue
        row = [p.family, p.setting, _pct(p.billed), _pct(p.gone)]
        for family in TRACETRIM_FAMILIES:
            row += [at_equal_billed(curves[family], p.billed), at_equal_loss(curves[family], p.gone)]
        body.append(tuple(row))
    lines = [table(header, body), ""]
    for family in TRACETRIM_FAMILIES:
        curve = ", ".join(f"{b:.1%} billed / {g:.1%} gone" for b, g in curves[family])
        lines.append(f"{family} curve (efficient points, no compaction included): {curve}")
    return "\n".join(lines)


def standing_table(points: Sequence[Point]) -> str:
    """Per tracetrim point: each baseline family's curve at its tokens billed (what the baseline loses
    there) and at its loss (what the baseline bills there): where tracetrim stands against each."""
    families = [f for f in BASELINE_FAMILIES if f != "openai ToolOutputTrimmer"]
    curves = {f: frontier([p for p in points if p.family == f]) for f in families}
    header = ["tracetrim", "setting", "billed", "gone"]
    for family in families:
        short = family.split()[0]
        header += [f"{short}: gone@=billed", "billed@=gone"]
    body = []
    for p in points:
        if not p.family.startswith("tracetrim"):
            continue
        row = [p.family.removeprefix("tracetrim "), p.setting, _pct(p.billed), _pct(p.gone)]
        for family in families:
            row += [at_equal_billed(curves[family], p.billed), at_equal_loss(curves[family], p.gone)]
        body.append(tuple(row))
    return table(header, body)


def tombstone_lines(points: Sequence[Point]) -> list[str]:
    """Tombstones on against off, per planner mode and window: what they cost and what they recover."""
    out = []
    for mode in ("threshold", "budget"):
        marked = {p.setting: p for p in points if p.family == f"tracetrim {mode}"}
        plain = {p.setting: p for p in points if p.family == f"tracetrim {mode} without tombstones"}
        for setting, off in plain.items():
            on = marked.get(setting)
            if on is None:
                continue
            out.append(
                f"  {mode} {setting}: off {off.totals.recallable} recallable / {off.totals.silent} silent, "
                f"billed {off.billed:.1%}; on {on.totals.recallable} / {on.totals.silent}, "
                f"billed {on.billed:.1%}"
            )
    return out


def run_dataset(
    name: str,
    runs: list[Trajectory],
    judge_for: JudgeFor,
    html: Path | None,
    *,
    tombstones: bool = False,
    gates: bool = True,
    windows: Sequence[int] | None = None,
) -> tuple[list[Point], dict[str, object]]:
    """Every strategy at every setting on one dataset; the reference window's report goes to ``html``."""
    windows = WINDOWS[name] if windows is None else windows
    reference = windows[len(windows) // 2]
    fixed = fixed_strategies()
    started = time.perf_counter()
    base = replay_runs(runs, [s for _, _, s in fixed], HostRule.window(reference), ANTHROPIC)
    none = base.totals_for(ALL)[0]
    points = _points(base, fixed, none)
    reports: dict[str, object] = {"fixed": base.to_json()}
    for window in windows:
        host = HostRule.window(window)
        chosen = host_strategies(window, host, judge_for, tombstones=tombstones, gates=gates)
        report = replay_runs(runs, [s for _, _, s in chosen], host, ANTHROPIC)
        points += _points(report, chosen, none)
        reports[_k(window)] = report.to_json()
        if html is not None and window == reference:
            html.mkdir(parents=True, exist_ok=True)
            page = render_html(merged(base, report), title=f"tracetrim replay: {name}, W={_k(window)}")
            (html / f"replay-{name}.html").write_text(page, encoding="utf-8")
    every = every_call_strategies(judge_for)
    every_report = replay_runs(runs, [s for _, _, s in every], HostRule.window(reference), ANTHROPIC)
    points += _points(every_report, every, none)
    reports["every call"] = every_report.to_json()
    calls = none.steps
    points.sort(key=_rank)
    print(
        f"## {name}: {len(runs)} runs, {calls:,} model calls, {none.uses:,} uses of earlier results; "
        f"windows {', '.join(_k(w) for w in windows)} (60% -> 40%); {time.perf_counter() - started:.0f} s\n"
    )
    print(points_table(points))
    print(
        "\nbilled / anthr. / openai: tokens billed, and cost with Anthropic's (read 0.1x, write 1.25x) "
        "and OpenAI's (read 0.5x) cache, as shares of no compaction's; gone: uses whose strings the prompt "
        "lacked; paid A/O: compactions that paid back their cache rewrite over the rest of the run at "
        "Anthropic's / OpenAI's prices\n"
    )
    print(comparison_table(points))
    print("\nWhere each tracetrim point stands on the baselines' curves (no compaction included):\n")
    print(standing_table(points))
    if tombstones:
        print("\nTombstones (the uses gone, by what points to them, and tokens billed):")
        print("\n".join(tombstone_lines(points)))
    print()
    return points, reports


def share_sweep(
    name: str, runs: list[Trajectory], judge_for: JudgeFor, shares: Sequence[tuple[float, float]]
) -> None:
    """tracetrim's budget and threshold modes at the dataset's reference window, fired and compacted at
    each (trigger, target) share of it: where on the curve each pair of shares puts them, against
    keep-last-N masking's curve at the same tokens billed."""
    window = WINDOWS[name][len(WINDOWS[name]) // 2]
    fixed = fixed_strategies()
    base = replay_runs(runs, [s for _, _, s in fixed], HostRule.window(window), ANTHROPIC)
    none = base.totals_for(ALL)[0]
    masking = frontier([p for p in _points(base, fixed, none) if p.family == "keep-last-N"])
    rows = []
    for trigger, target in shares:
        host = HostRule.window(window, trigger_share=trigger, target_share=target)
        chosen: list[Entry] = [
            ("budget", f"{trigger:.0%}/{target:.0%}", tracetrim_budget(judge_for=judge_for, name="budget")),
            ("threshold", f"{trigger:.0%}/{target:.0%}", tracetrim_threshold(judge_for=judge_for, name="t")),
        ]
        report = replay_runs(runs, [s for _, _, s in chosen], host, ANTHROPIC)
        for point in _points(report, chosen, none):
            totals = point.totals
            rows.append(
                [
                    point.family,
                    point.setting,
                    f"{point.billed:.1%}",
                    f"{point.gone:.1%}",
                    at_equal_billed(masking, point.billed),
                    f"{point.cached(ANTHROPIC):.1%}",
                    f"{totals.compactions:,}",
                ]
            )
    print(f"## {name}: trigger / target shares of W={_k(window)} ({len(runs)} runs)\n")
    header = ["mode", "shares", "billed", "gone", "masking: gone@=billed", "cost, Anthropic cache", "compact"]
    print(table(header, rows))
    print()


def _rank(point: Point) -> tuple[int, int]:
    """Family order, then the setting: documented defaults first, then N or the window ascending."""
    setting = point.setting.removeprefix("W=").removesuffix("k")
    return FAMILIES.index(point.family), int(setting) if setting.isdigit() else -1


def merged(first: ReplayReport, second: ReplayReport) -> ReplayReport:
    """One report of two over the same runs: both reports' strategies, their runs, totals anew."""
    strategies = first.strategies + second.strategies
    runs = first.runs + second.runs
    names = [s.name for s in strategies]
    return attrs.evolve(
        second, strategies=strategies, runs=runs, totals=report_totals(names, runs, second.prices)
    )


def main() -> int:
    """Replay every dataset and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder (default ../shared)")
    parser.add_argument(
        "--mini-runs", type=int, default=60, help="mini-swe-agent runs to replay (0: all 196)"
    )
    parser.add_argument("--tau-runs", type=int, default=0, help="tau-bench runs to replay (0: all)")
    parser.add_argument("--datasets", default="mini-swe-agent,swe-agent,tau-bench", help="comma-separated")
    parser.add_argument("--judge", choices=("held-out", "kind", "shipped"), default="held-out")
    parser.add_argument(
        "--without-tombstones", action="store_true", help="add both planner modes without tombstones"
    )
    parser.add_argument("--no-gates", action="store_true", help="leave out the cache-gated variants")
    parser.add_argument(
        "--windows", help="comma-separated windows in tokens (default: three per dataset, see WINDOWS)"
    )
    parser.add_argument("--json", type=Path, help="write every report (all runs, all strategies) here")
    parser.add_argument(
        "--html", type=Path, help="write each dataset's reference-window report to this folder"
    )
    parser.add_argument(
        "--shares",
        help="only sweep tracetrim's trigger/target shares of the reference window, e.g. 0.6/0.4,0.8/0.6",
    )
    args = parser.parse_args()
    shares = [tuple(map(float, pair.split("/"))) for pair in args.shares.split(",")] if args.shares else []
    started = time.perf_counter()
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    everything = shared_datasets(args.shared)
    judge_for = judges(args.judge, args.shared, everything)
    limits = {"mini-swe-agent": args.mini_runs, "tau-bench": args.tau_runs}
    print(f"# Replay of {args.shared / 'data'} (judge: {args.judge})\n")
    dumped: dict[str, object] = {}
    for name in names:
        runs = sample(everything[name], limits.get(name, 0))
        if len(runs) < len(everything[name]):
            print(f"({name}: {len(runs)} of {len(everything[name])} runs, spread evenly by name)")
        if shares:
            share_sweep(name, runs, judge_for, shares)
            continue
        windows = [int(w) for w in args.windows.split(",")] if args.windows else None
        _, reports = run_dataset(
            name,
            runs,
            judge_for,
            args.html,
            tombstones=args.without_tombstones,
            gates=not args.no_gates,
            windows=windows,
        )
        dumped[name] = reports
    if args.json is not None:
        args.json.write_text(json.dumps(dumped, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
