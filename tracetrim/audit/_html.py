"""The audit as one self-contained HTML page: inline SVG charts, the recommendation, drops to review."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from tracetrim._record import Record
from tracetrim.audit._advice import Recommendation, ThresholdPoint
from tracetrim.audit._observer import Junk
from tracetrim.audit._summary import AuditSummary, PairRow, histogram
from tracetrim.audit._svg import Mark, Series, escape, lines, message, stacked_bars, visible
from tracetrim.audit._svg import histogram as histogram_svg
from tracetrim.audit._text import summary_lines

KEEP, SHORTEN, DROP = "#5b8c5a", "#e0a030", "#c0392b"
LATENCY_BINS = 20
LARGEST = 25
"""Rows in the table of largest would-be drops."""

CHARTS = (
    "savings",
    "tools",
    "keep_result",
    "keep_call",
    "reasons",
    "latency",
    "loss",
)
"""Every chart the report draws, by its ``data-chart`` name."""

PAGE_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.sub{color:#666;margin:0 0 16px}.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:150px}
.card b{display:block;font-size:20px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(580px,1fr));gap:14px}
figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{max-width:100%;height:auto}table{border-collapse:collapse;font-size:12.5px}
td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.ready{color:#2e7d32;font-weight:600}.wait{color:#b26a00;font-weight:600}.lost{color:#c0392b;font-weight:600}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
"""
"""The style sheet of tracetrim's self-contained report pages (this audit report's and the replay's)."""

# Marks each chart with the size it actually drew at, so a headless browser check can read it back.
PAGE_SCRIPT = """
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.getBBox();
  svg.dataset.drawn = Math.round(box.width) + 'x' + Math.round(box.height);
}
document.body.dataset.charts = document.querySelectorAll('svg.chart').length;
"""
"""The closing script of the report pages (the audit's and the replay's)."""


def _time(record: Record) -> float | None:
    if not record.at:
        return None
    try:
        return _dt.datetime.fromisoformat(record.at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def savings_chart(records: Sequence[Record]) -> str:
    """Cumulative characters seen and saved, over time when records carry times, else by plan."""
    if not records:
        return message("savings", "Savings over time", "no plans")
    times = [_time(r) for r in records]
    timed = all(t is not None for t in times)
    order = sorted(range(len(records)), key=lambda i: times[i] or 0.0) if timed else list(range(len(records)))
    seen = saved = 0
    xs: list[float] = []
    seen_ys: list[float] = []
    saved_ys: list[float] = []
    for n, i in enumerate(order, start=1):
        record = records[i]
        seen += record.chars_before
        if record.status == "DECIDED":
            saved += max(record.chars_before - record.chars_after, 0)
        xs.append((times[i] or 0.0) if timed else float(n))
        seen_ys.append(seen)
        saved_ys.append(saved)

    span = max(xs) - min(xs)
    shape = "%H:%M:%S" if span < 3600 else ("%m-%d %H:%M" if span < 7 * 86400 else "%Y-%m-%d")

    def clock(value: float) -> str:
        return _dt.datetime.fromtimestamp(value, _dt.UTC).strftime(shape)

    return lines(
        "savings",
        "Characters seen and would-be saved, cumulative",
        xs,
        [Series("seen", "#4a78a8", seen_ys), Series("would be saved", KEEP, saved_ys)],
        x_format=clock if timed else (lambda v: f"plan {v:.0f}"),
    )


def tools_chart(summary: AuditSummary) -> str:
    """Actions per tool, stacked: kept, shortened, dropped."""
    if not summary.tools:
        return message("tools", "Actions per tool", "no per-pair detail: record with pairs=True")
    tools = summary.tools[:20]
    return stacked_bars(
        "tools",
        "Actions per tool",
        [t.tool for t in tools],
        [
            Series("dropped", DROP, [t.drop_call for t in tools]),
            Series("shortened", SHORTEN, [t.drop_result for t in tools]),
            Series("kept", KEEP, [t.keep for t in tools]),
        ],
    )


def probability_chart(summary: AuditSummary, question: str) -> str:
    """The histogram of one question's probabilities with the thresholds drawn."""
    title = f"P({question}) over answered pairs"
    spread = summary.spread
    if spread is None:
        return message(question, title, "no probabilities recorded")
    counts = spread.keep_result if question == "keep_result" else spread.keep_call
    marks = [Mark(spread.keep_threshold, f"keep {spread.keep_threshold:g}", "#2e7d32")]
    if spread.discard_threshold != spread.keep_threshold:
        marks.append(Mark(spread.discard_threshold, f"discard {spread.discard_threshold:g}", DROP))
    return histogram_svg(question, title, counts, marks=marks)


def reasons_chart(summary: AuditSummary) -> str:
    """How plans ended: one bar per status/reason, coloured by status."""
    colors = {"DECIDED": KEEP, "INCONCLUSIVE": "#8e8e8e", "SKIPPED": "#4a78a8", "ERROR": DROP}
    ordered = sorted(summary.reasons.items(), key=lambda item: (-item[1], item[0]))
    labels = [name for name, _ in ordered]
    statuses = sorted({name.split("/")[0] for name in labels})
    series = [
        Series(
            status,
            colors.get(status, "#6d4c9f"),
            [n if name.startswith(status + "/") else 0 for name, n in ordered],
        )
        for status in statuses
    ]
    return stacked_bars("reasons", "Outcomes and reasons", labels, series)


def latency_chart(records: Sequence[Record]) -> str:
    """The distribution of plan times, in equal bins up to the slowest plan."""
    elapsed = [r.elapsed_ms for r in records]
    if not elapsed or max(elapsed) <= 0:
        return message("latency", "Plan latency", "no timings")
    top = max(elapsed)
    counts = histogram([value / top for value in elapsed], LATENCY_BINS)
    return histogram_svg(
        "latency",
        "Plan latency (ms)",
        counts,
        high=top,
        color="#6d4c9f",
        x_format=lambda v: f"{v:,.0f}",
    )


def loss_chart(advice: Recommendation) -> str:
    """Loss rate and share of would-be savings per threshold, the threshold in force marked."""
    points = [p for p in advice.points if p.removed]
    if not points:
        return message("loss", "Loss rate by threshold", "no pair carried the model's probabilities")
    if not points[0].tracked:
        return message("loss", "Loss rate by threshold", "no follow-ups reported: loss rate unknown")
    most = max(p.chars_saved for p in points) or 1
    marks = [Mark(advice.current, f"in force {advice.current:g}", "#333")]
    if advice.best is not None:
        marks.append(Mark(advice.best.threshold, f"best {advice.best.threshold:g}", KEEP))
    return lines(
        "loss",
        "Loss rate and savings by threshold (keep = discard)",
        [p.threshold for p in points],
        [
            Series("loss rate", DROP, [p.loss_rate or 0.0 for p in points]),
            Series("savings (share of most)", KEEP, [p.chars_saved / most for p in points]),
        ],
        y_format=lambda v: f"{v:.0%}",
        ymax=1.0,
        marks=marks,
    )


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def drops_table(rows: Sequence[PairRow]) -> str:
    """The largest would-be drops, with their probabilities, age and whether they were needed later."""
    removed = sorted((row for row in rows if row.removed), key=lambda row: (-row.saved, row.plan))[:LARGEST]
    if not removed:
        return "<p>No pair was shortened or dropped (or the records carry no per-pair detail).</p>"
    head = (
        "<tr><th>plan</th><th>session</th><th>call id</th><th>tool</th><th>action</th><th>reason</th>"
        "<th>P(call)</th><th>P(result)</th><th>chars before → after</th><th>tokens saved</th>"
        "<th>age (turns)</th><th>needed later</th></tr>"
    )
    body = []
    for row in removed:
        pair = row.pair
        session = (row.record.scope or {}).get("session_id", "")
        needed = "unknown" if row.needed is None else "no"
        if row.lost:
            needed = "<span class=lost>yes</span>"
        elif row.needed:
            needed = "yes, in the later copy"
        body.append(
            f"<tr><td class=n>{row.plan + 1}</td><td>{escape(session)}</td><td>{escape(pair.call_id)}</td>"
            f"<td>{escape(pair.tool)}</td><td>{escape(pair.action)}</td><td>{escape(pair.reason)}</td>"
            f"<td class=n>{_number(pair.keep_call)}</td><td class=n>{_number(pair.keep_result)}</td>"
            f"<td class=n>{pair.chars_before:,} → {pair.chars_after:,}</td>"
            f"<td class=n>{pair.tokens_before - pair.tokens_after:,}</td>"
            f"<td class=n>{'' if pair.age_turns is None else pair.age_turns}</td><td>{needed}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _cards(summary: AuditSummary) -> str:
    cost = f"${summary.cost_saved:,.2f}" if summary.cost_saved is not None else "—"
    loss = "unknown" if summary.loss_rate is None else f"{summary.loss_rate:.1%}"
    cards = [
        ("plans", f"{summary.plans:,}"),
        ("would save (all plans)", f"{summary.reduction:.1%}"),
        ("characters saved", f"{summary.chars_saved:,}"),
        ("tokens saved (est.)", f"{summary.tokens_saved:,}"),
        ("cost saved", cost),
        ("decided", f"{summary.decided:,}"),
        ("median latency", f"{summary.latency.median_ms:,.0f} ms"),
        ("loss rate", loss),
    ]
    return "".join(f"<div class=card>{escape(name)}<b>{escape(value)}</b></div>" for name, value in cards)


def _best(point: ThresholdPoint | None) -> str:
    if point is None:
        return "—"
    return escape(f"{point.threshold:.2f}: {point.removed} removed, {point.chars_saved:,} chars")


def _verdicts(advice: Recommendation) -> str:
    rows = "".join(
        f"<tr><td><b>{escape(v.tool)}</b></td><td><span class={'ready' if v.ready else 'wait'}>"
        f"{'ENFORCE' if v.ready else 'SHADOW'}</span></td><td>{escape(v.why)}</td>"
        f"<td>{_best(v.best)}</td></tr>"
        for v in advice.verdicts
    )
    table = (
        f"<details><summary>Verdict per tool ({len(advice.verdicts)} tools)</summary>"
        "<table><tr><th>tool</th><th>mode</th><th>why</th><th>best threshold within target</th></tr>"
        f"{rows}</table></details>"
        if advice.verdicts
        else ""
    )
    return f"<p>{escape(advice.threshold_text)}</p><p><b>Verdict.</b> {escape(advice.text)}</p>{table}"


def render_html(
    summary: AuditSummary,
    advice: Recommendation,
    records: Sequence[Record],
    rows: Sequence[PairRow],
    junk: Sequence[Junk] = (),
    *,
    title: str = "tracetrim shadow audit",
) -> str:
    """The whole report: figures, recommendation, seven charts, the drops table, skipped lines.

    Every piece of text from the records (tool names, call ids, sessions, reasons, failure details,
    junk lines) is HTML-escaped and has its invisible control characters shown as escapes
    (`tracetrim.audit._svg.visible`): bidi overrides and zero-width characters from tool output cannot
    reorder or hide what the report shows.
    """
    charts = {
        "savings": ("Savings over time", savings_chart(records)),
        "tools": ("Actions per tool", tools_chart(summary)),
        "keep_result": (
            "Is the result needed? Probabilities and thresholds",
            probability_chart(summary, "keep_result"),
        ),
        "keep_call": (
            "Is the call needed? Probabilities and thresholds",
            probability_chart(summary, "keep_call"),
        ),
        "reasons": ("Outcomes and reasons", reasons_chart(summary)),
        "latency": ("Latency distribution", latency_chart(records)),
        "loss": ("Loss rate when follow-ups are known", loss_chart(advice)),
    }
    figures = "".join(
        f"<figure><figcaption>{escape(caption)}</figcaption>{svg}</figure>"
        for caption, svg in charts.values()
    )
    skipped = (
        "<h2>Skipped lines</h2><ul>" + "".join(f"<li>{escape(str(item))}</li>" for item in junk) + "</ul>"
        if junk
        else ""
    )
    text = "\n".join(summary_lines(summary))
    # Once more over the whole page, so no text that skipped `escape` on its way in shows raw: the
    # page's own markup holds no invisible character, so nothing of it changes.
    return visible(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{PAGE_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class=sub>{summary.plans:,} plans; self-contained report written by "
        "<code>tracetrim audit --html</code></p>"
        f"<div class=cards>{_cards(summary)}</div>"
        f"<h2>Recommendation</h2>{_verdicts(advice)}"
        f"<h2>Charts</h2><div class=grid>{figures}</div>"
        f"<h2>Largest would-be drops to review</h2>{drops_table(rows)}"
        f"<h2>Figures</h2><pre>{escape(text)}</pre>{skipped}"
        f"<script>{PAGE_SCRIPT}</script></body></html>\n"
    )
