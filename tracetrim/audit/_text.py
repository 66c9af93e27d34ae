"""The audit in the terminal: the rollout questions answered in a few plain lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from tracetrim.audit._advice import Recommendation
from tracetrim.audit._observer import Junk
from tracetrim.audit._summary import AuditSummary
from tracetrim.audit._svg import visible

TOP_TOOLS = 8
"""Tools listed in the terminal (the HTML report shows them all)."""


def counts(counts: dict[str, int]) -> str:
    """``name n, name n`` by count, largest first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {count}" for name, count in ordered) or "-"


def _rate(rate: float | None) -> str:
    return "unknown" if rate is None else f"{rate:.1%}"


def summary_lines(summary: AuditSummary) -> list[str]:
    """The summary's lines: savings over all plans, outcomes, tools, spread, cost, loss."""
    s = summary
    cost = f", ${s.cost_saved:,.4f} at ${s.price_per_mtok:g}/Mtok" if s.cost_saved is not None else ""
    lines = [
        f"plans: {s.plans} ({counts(s.modes)}); record versions: {counts(s.record_versions)}",
        f"status: {counts(s.statuses)}",
        f"why: {counts(s.reasons)}",
        f"would save: {s.chars_saved:,} of {s.chars_before:,} characters over all {s.plans} plans "
        f"({s.reduction:.1%}), about {s.tokens_saved:,} tokens{cost}; "
        f"{s.decided} decided (median {s.median_reduction:.1%} each), "
        f"{s.plans - s.decided} saved nothing, {s.unsized} stopped before sizing",
        f"actions: {counts(s.actions)}",
    ]
    if s.tools:
        shown = [
            f"{t.tool} {t.removed}/{t.pairs} ({t.drop_call} dropped, {t.drop_result} shortened, "
            f"{t.chars_saved:,} chars, loss {_rate(t.loss_rate)})"
            for t in s.tools[:TOP_TOOLS]
        ]
        more = f"; and {len(s.tools) - TOP_TOOLS} more" if len(s.tools) > TOP_TOOLS else ""
        lines.append(f"tools removed/pairs: {'; '.join(shown)}{more}")
    else:
        lines.append("tools: no per-pair detail in these records (JsonLinesObserver(path, pairs=True))")
    if s.spread is not None:
        sp = s.spread
        lines.append(
            f"probabilities: {sum(sp.keep_result)} result and {sum(sp.keep_call)} call answers; "
            f"{sp.near:.1%} within 0.05 of a threshold (keep {sp.keep_threshold:g}, "
            f"discard {sp.discard_threshold:g})"
        )
    lat = s.latency
    lines += [
        f"latency per plan: median {lat.median_ms:.1f} ms, p90 {lat.p90_ms:.1f}, p99 {lat.p99_ms:.1f}, "
        f"max {lat.max_ms:.1f}",
        f"decision model: {lat.requests} requests ({lat.retries} retries), {lat.input_tokens:,} input and "
        f"{lat.output_tokens:,} output tokens",
        f"fitting stages: {counts(s.fitting_stages)}",
    ]
    if s.tracked:
        lines.append(
            f"follow-ups: {counts(s.followups)}; {s.needed} of {s.removed} removed results needed later "
            f"(loss {_rate(s.loss_rate)})"
        )
    else:
        lines.append("follow-ups: none reported, so the loss rate is unknown")
    lines += [f"failure {outcome}: {detail}" for outcome, detail in sorted(s.failures.items())]
    return lines


def write_audit(
    summary: AuditSummary, advice: Recommendation, junk: Sequence[Junk], out: TextIO, err: TextIO
) -> None:
    """The summary and the recommendation on ``out``; each skipped junk line on ``err``.

    Text from the records goes out through `tracetrim.audit._svg.visible`: a bidi override, a zero-width
    character or a terminal escape sequence (ESC is a control character) from tool output is shown
    as ``\\u202e`` or ``\\u001b``, never acted on by the terminal.
    """
    for item in junk:
        err.write(visible(f"skipped {item}") + "\n")
    lines = summary_lines(summary)
    lines += [f"recommendation: {advice.threshold_text}", f"verdict: {advice.text}"]
    if junk:
        lines.append(f"skipped {len(junk)} junk line(s), listed on stderr")
    out.write(visible("\n".join(lines)) + "\n")
