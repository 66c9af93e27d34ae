"""The replay as plain text: one table per dataset, what each strategy models, the host rule and prices."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tracetrim.replay._result import ALL, ReplayReport, StrategyTotals

HEADER = ("strategy", "billed", "vs none", "cached", "vs none", "peak", "mean", "compact", "rw/c", "paid")
"""The cost table's columns: prompt tokens billed and cache-adjusted (and against no compaction), peak
and mean context, compactions, the cache tokens each rewrote, and how many paid that back."""
LOSS_HEADER = ("strategy", "uses", "gone", "gone %", "recall", "re-run", "silent", "plans", "plan s")
"""The loss table's columns: uses of earlier results, those whose strings were gone from the prompt (by
what pointed to them: recallable by call id, re-runnable, silent), plans run, seconds planning."""


WIDTH = 100
"""Where the paragraphs under the tables wrap (the CLI's width)."""
LEGEND = (
    "billed: prompt tokens summed over model calls, plus the extra turns of recalls and re-runs; cached: "
    "the same priced with the cache model, in plain input tokens; rw/c: cache tokens rewritten per "
    "compaction; paid: compactions whose saving over the rest of the run outweighed their rewrite; "
    "gone: uses of an earlier result whose strings the prompt lacked, by what pointed to them (recall: a "
    "tracetrim marker names the call; re-run: the call is shown, its result cleared; silent: nothing)"
)
"""What the columns mean, printed under the tables."""


def tokens(value: float) -> str:
    """A token count in a few characters: ``950``, ``12.3k``, ``4.56M``."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:.2f}M"
    if abs(value) >= 1e4:
        return f"{value / 1e3:.0f}k"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def _relative(value: float, base: float | None) -> str:
    if not base:
        return "-"
    return f"{value / base - 1:+.1%}"


def rows(totals: Sequence[StrategyTotals]) -> list[tuple[str, ...]]:
    """One row of `HEADER` per strategy; "vs none" against the strategy named ``none`` when present."""
    base = next((t for t in totals if t.strategy == "none"), None)
    return [
        (
            t.strategy,
            tokens(t.billed_tokens),
            _relative(t.billed_tokens, base.billed_tokens if base else None),
            tokens(t.cache_cost),
            _relative(t.cache_cost, base.cache_cost if base else None),
            tokens(t.peak_context),
            tokens(t.mean_context),
            f"{t.compactions:,}",
            tokens(t.rewrite_per_compaction),
            f"{t.paid_back:,}",
        )
        for t in totals
    ]


def loss_rows(totals: Sequence[StrategyTotals]) -> list[tuple[str, ...]]:
    """One row of `LOSS_HEADER` per strategy."""
    return [
        (
            t.strategy,
            f"{t.uses:,}",
            f"{t.missing:,}",
            f"{t.missing_share:.1%}",
            f"{t.recallable:,}",
            f"{t.rerun:,}",
            f"{t.silent:,}",
            f"{t.plans:,}",
            f"{t.planning_ms / 1000:.1f}",
        )
        for t in totals
    ]


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, the first left-aligned, the rest right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *body, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))]
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in body)])


def format_report(report: ReplayReport) -> str:
    """The whole report as text: a table for all runs, one per dataset when there are several, the
    uses per dataset, then what each strategy models and the settings."""
    parts = []
    datasets = report.datasets
    sections = [ALL, *datasets] if len(datasets) > 1 else [ALL]
    for dataset in sections:
        totals = report.totals_for(dataset)
        if not totals:
            continue
        first = totals[0]
        label = "all runs" if dataset == ALL else dataset
        if len(datasets) == 1:
            label = datasets[0]
        parts.append(
            f"{label}: {first.runs:,} runs, {first.steps:,} model calls, "
            f"{first.uses:,} uses of earlier results"
        )
        parts.append(table(HEADER, rows(totals)))
        parts.append("")
        parts.append(table(LOSS_HEADER, loss_rows(totals)))
        parts.append("")
    parts.append(f"host rule: {report.host.describe()}; prices: {report.prices.describe()}")
    parts.append(textwrap.fill(LEGEND, width=WIDTH))
    parts.append("")
    parts.extend(
        textwrap.fill(f"{info.name}: {info.models}", width=WIDTH, subsequent_indent="  ")
        for info in report.strategies
    )
    return "\n".join(parts)
