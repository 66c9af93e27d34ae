"""The replay as one self-contained HTML page: the sawtooth per strategy, billed and cached totals, losses.

Built the way the audit report is (`tracetrim.audit._html`): inline SVG from `tracetrim.audit._svg`, the same
style sheet and the same closing script, which marks each chart with the size it drew at so a headless
browser can check every chart was drawn. Nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from tracetrim.audit._html import PAGE_SCRIPT, PAGE_STYLE
from tracetrim.audit._svg import Series, lines, message, stacked_bars
from tracetrim.replay._result import ALL, ReplayReport, StrategyRun, StrategyTotals
from tracetrim.replay._text import HEADER, LOSS_HEADER, loss_rows, rows, tokens

PALETTE = (
    "#4a78a8",
    "#e0a030",
    "#c0392b",
    "#6d4c9f",
    "#2e7d32",
    "#00838f",
    "#ad1457",
    "#8d6e63",
    "#5d4037",
    "#1565c0",
    "#9e9d24",
    "#ef6c00",
)
"""A strategy's colour is its place in the report's strategy list."""
NONE_COLOR = "#9e9e9e"
RECALL, RERUN, SILENT = "#e0a030", "#4a78a8", "#c0392b"
EXPLAINED = (
    "Billed: prompt tokens summed over every model call, plus the extra turns recalls and re-runs cost. "
    "Cache-adjusted: the unchanged prefix since the previous call read from the cache, the rest written. "
    "Missing: a call wrote strings an earlier result first showed, and its prompt no longer held them: "
    "recallable when a tracetrim marker names the call, re-run when the call is still shown with its "
    "result cleared, silent when nothing points to it."
)
"""The paragraph under the page's title."""
SAWTOOTH_RUNS = 2
"""How many runs get a sawtooth per strategy: the one whose uncompacted context peaks highest, and the
one where the strategies compacted most often (when that is another)."""

SUMMARY_CHARTS = ("billed", "cached", "losses", "planning")
"""The totals charts, by ``data-chart`` name, drawn for all runs (then per dataset)."""


def _number(value: float) -> str:
    return tokens(value)


def _bars(
    name: str,
    title: str,
    totals: Sequence[StrategyTotals],
    series: Sequence[Series],
    *,
    number: Callable[[float], str] = _number,
    empty: tuple[str, str] | None = None,
) -> str:
    """One stacked bar per strategy of ``totals``; with ``empty`` (a title and a line), that message
    instead when every value is 0."""
    if empty is not None and not any(v for s in series for v in s.values):
        return message(name, *empty)
    return stacked_bars(name, title, [t.strategy for t in totals], series, number=number)


def billed_chart(name: str, totals: Sequence[StrategyTotals]) -> str:
    """Prompt tokens summed over calls, and the extra turns of recalls and re-runs, per strategy."""
    return _bars(
        name,
        "Tokens billed (prompt tokens over every call)",
        totals,
        [
            Series("prompts", "#4a78a8", [t.prompt_tokens for t in totals]),
            Series("recall and re-run turns", "#e0a030", [t.recall_tokens for t in totals]),
        ],
    )


def cached_chart(name: str, totals: Sequence[StrategyTotals], read: float, write: float) -> str:
    """The same calls priced with the cache model: what reads cost and what writes cost."""
    return _bars(
        name,
        "Cache-adjusted cost, in plain input tokens",
        totals,
        [
            Series("cache reads", "#5b8c5a", [t.cache_read_tokens * read for t in totals]),
            Series("cache writes", "#c0392b", [t.cache_write_tokens * write for t in totals]),
        ],
    )


def losses_chart(name: str, totals: Sequence[StrategyTotals]) -> str:
    """Uses whose strings a prompt lacked, by what still pointed to them."""
    return _bars(
        name,
        "Uses whose strings were gone when used",
        totals,
        [
            Series("recallable", RECALL, [t.recallable for t in totals]),
            Series("re-run", RERUN, [t.rerun for t in totals]),
            Series("silent", SILENT, [t.silent for t in totals]),
        ],
        number=lambda v: f"{v:,.0f}",
        empty=("Later-used content missing when used", "nothing used later was missing"),
    )


def planning_chart(name: str, totals: Sequence[StrategyTotals]) -> str:
    """Seconds spent planning (or editing requests), per strategy."""
    return _bars(
        name,
        "Time spent planning, seconds",
        totals,
        [Series("planning", "#6d4c9f", [t.planning_ms / 1000 for t in totals])],
        number=lambda v: f"{v:.2f}",
        empty=("Planning time", "no time measured"),
    )


def sawtooth_runs(report: ReplayReport, count: int = SAWTOOTH_RUNS) -> list[str]:
    """The runs to draw: the highest uncompacted peak first, then the most compactions."""
    by_run: dict[str, list[StrategyRun]] = {}
    for run in report.runs:
        by_run.setdefault(run.run, []).append(run)
    if not by_run:
        return []
    chosen = [max(by_run, key=lambda name: (max(r.peak_context for r in by_run[name]), name))]
    busiest = max(by_run, key=lambda name: (sum(r.compactions for r in by_run[name]), name))
    if busiest not in chosen:
        chosen.append(busiest)
    return chosen[:count]


def sawtooth_charts(report: ReplayReport, run: str, index: int) -> list[tuple[str, str, str]]:
    """One chart per strategy for ``run`` (name, caption, SVG): its context at every call, against no
    compaction (the strategy named ``none``, when the report has it)."""
    walked = {r.strategy: r for r in report.runs if r.run == run}
    names = [s.name for s in report.strategies]
    reference = walked.get("none")
    out = []
    for k, name in enumerate(names):
        mine = walked.get(name)
        if mine is None or (reference is not None and name == "none"):
            continue
        series = []
        if reference is not None:
            series.append(Series("none", NONE_COLOR, reference.context))
        series.append(Series(name, PALETTE[k % len(PALETTE)], mine.context))
        caption = (
            f"{name}: {mine.compactions} compactions, peak {tokens(mine.peak_context)}, "
            f"billed {tokens(mine.billed_tokens)}"
        )
        name_k = f"sawtooth-{index}-{k}"
        chart = lines(
            name_k,
            f"Prompt tokens at each model call of {run}",
            list(range(1, len(mine.context) + 1)),
            series,
            x_format=lambda v: f"call {v:.0f}",
            y_format=_number,
        )
        out.append((name_k, caption, chart))
    return out


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    cells = "".join(
        "<tr>" + "".join(f"<td{' class=n' if i else ''}>{escape(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in body
    )
    return f"<table><tr>{head}</tr>{cells}</table>"


def _figures(charts: Sequence[tuple[str, str]]) -> str:
    return "".join(f"<figure><figcaption>{escape(c)}</figcaption>{svg}</figure>" for c, svg in charts)


def chart_names(report: ReplayReport) -> list[str]:
    """Every ``data-chart`` name the page draws, in order (what a browser check expects to find)."""
    return [name for name, _ in _all_charts(report)]


def _sections(report: ReplayReport) -> list[str]:
    datasets = report.datasets
    return [ALL, *datasets] if len(datasets) > 1 else [ALL]


def _all_charts(report: ReplayReport) -> list[tuple[str, tuple[str, str]]]:
    out: list[tuple[str, tuple[str, str]]] = []
    for n, dataset in enumerate(_sections(report)):
        totals = report.totals_for(dataset)
        suffix = "" if n == 0 else f"-{n}"
        out += [
            (f"billed{suffix}", ("Tokens billed", billed_chart(f"billed{suffix}", totals))),
            (
                f"cached{suffix}",
                (
                    f"Cache-adjusted ({report.prices.describe()})",
                    cached_chart(f"cached{suffix}", totals, report.prices.read, report.prices.write),
                ),
            ),
            (
                f"losses{suffix}",
                ("Later-used content gone when used", losses_chart(f"losses{suffix}", totals)),
            ),
            (f"planning{suffix}", ("Planning time", planning_chart(f"planning{suffix}", totals))),
        ]
    for index, run in enumerate(sawtooth_runs(report)):
        for name, caption, svg in sawtooth_charts(report, run, index):
            out.append((name, (caption, svg)))
    return out


def render_html(report: ReplayReport, *, title: str = "tracetrim replay") -> str:
    """The whole page: the settings, the totals table and charts per dataset, the sawtooth of chosen
    runs for every strategy, and what each strategy models."""
    charts = dict(_all_charts(report))
    sections = []
    for n, dataset in enumerate(_sections(report)):
        totals = report.totals_for(dataset)
        if not totals:
            continue
        suffix = "" if n == 0 else f"-{n}"
        label = "All runs" if dataset == ALL else dataset
        if len(report.datasets) == 1:
            label = report.datasets[0]
        first = totals[0]
        figures = _figures([charts[f"{kind}{suffix}"] for kind in SUMMARY_CHARTS])
        sections.append(
            f"<h2>{escape(label)}</h2><p class=sub>{first.runs:,} runs, {first.steps:,} model calls, "
            f"{first.uses:,} uses of earlier results</p>{_table(HEADER, rows(totals))}"
            f"<p></p>{_table(LOSS_HEADER, loss_rows(totals))}<div class=grid>{figures}</div>"
        )
    saw = []
    for index, run in enumerate(sawtooth_runs(report)):
        figures = _figures([v for name, v in charts.items() if name.startswith(f"sawtooth-{index}-")])
        saw.append(f"<h3>{escape(run)}</h3><div class=grid>{figures}</div>")
    legend = "".join(
        f"<tr><td><b>{escape(s.name)}</b></td><td>{escape(s.models)}</td></tr>" for s in report.strategies
    )
    runs = len({r.run for r in report.runs})
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{PAGE_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class=sub>{runs:,} runs, {len(report.strategies)} strategies; "
        f"host rule: {escape(report.host.describe())}; prices: {escape(report.prices.describe())}; "
        "self-contained report written by <code>tracetrim replay --html</code></p>"
        f"<p>{escape(EXPLAINED)}</p>"
        f"{''.join(sections)}<h2>Context at each model call</h2>{''.join(saw) or '<p>No runs.</p>'}"
        f"<h2>Strategies</h2><table>{legend}</table>"
        f"<script>{PAGE_SCRIPT}</script></body></html>\n"
    )
