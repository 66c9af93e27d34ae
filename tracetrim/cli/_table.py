"""Plain-text tables of a plan's decisions and savings for people reading a terminal."""

from __future__ import annotations

from collections.abc import Sequence

from tracetrim.compactor import Plan


def _probability(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def decision_table(plan: Plan) -> str:
    """One row per pair (tool, action, both probabilities, why) and a line of totals."""
    rows = [
        (
            d.key,
            d.call_id,
            d.tool,
            d.action.value,
            _probability(d.keep_call),
            _probability(d.keep_result),
            f"{d.chars_before:,}",
            f"{d.chars_after:,}",
            d.reason,
        )
        for d in plan.decisions
    ]
    table = text_table(
        ("key", "call", "tool", "action", "p_call", "p_result", "chars", "after", "reason"), rows
    )
    s = plan.stats
    totals = (
        f"characters: {s.chars_before:,} -> {s.chars_after:,} ({s.reduction:.1%} less); "
        f"{s.candidates} judged, {s.protected} protected; {s.requests} decision request(s), "
        f"state {s.state_tokens:,} tokens ({s.fitting_stage})"
    )
    return f"{table}\n{totals}"
