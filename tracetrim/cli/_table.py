"""Plain-text tables of a plan's decisions, savings and quality, readable in a 100-column terminal."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tracetrim.compactor import Plan
from tracetrim.learn._quality import QualityRow

WIDTH = 100
"""Columns every table and paragraph the CLI prints fits in."""

_MIN_COLUMN = 6


def _probability(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _clip(cell: str, width: int) -> str:
    return cell if len(cell) <= width else cell[: width - 1] + "…"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, width: int = WIDTH) -> str:
    """Columns padded to their widest cell; when the table would pass ``width`` the widest columns are
    narrowed (long cells end in ``…``) until it fits."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    floors = [max(_MIN_COLUMN, min(len(str(h)), w)) for h, w in zip(header, widths, strict=True)]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        widest = max(range(len(widths)), key=lambda i: widths[i] - floors[i])
        if widths[widest] <= floors[widest]:
            break  # every column at its floor: print it wide rather than unreadable
        widths[widest] -= 1
    lines = [
        "  ".join(_clip(str(cell), w).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def paragraph(text: str, *, width: int = WIDTH, indent: str = "") -> str:
    """``text`` wrapped to ``width`` columns, continuation lines indented by ``indent``."""
    return textwrap.fill(text, width=width, subsequent_indent=indent, break_on_hyphens=False)


def decision_table(plan: Plan) -> str:
    """One row per pair (tool, action, both probabilities, why) and a paragraph of totals."""
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
    return f"{table}\n{paragraph(totals, indent='  ')}"


def quality_table(rows: Sequence[QualityRow]) -> str:
    """The quality comparison for a terminal: one block per history, one row per strategy, label counts
    abbreviated (a legend follows)."""
    blocks: list[str] = []
    for history in dict.fromkeys(row.history for row in rows):
        mine = [row for row in rows if row.history == history]
        cells = []
        for row in mine:
            s = row.labels
            labels = (
                [str(s.critical), str(s.irrelevant), str(s.superseded), str(s.needed), str(s.protected)]
                + [str(s.must_contain)]
                if s is not None
                else ["-"] * 6
            )
            cut = f"{row.reduction:.1%}"
            cells.append(
                [
                    row.strategy,
                    f"{row.chars_after:,}",
                    cut,
                    f"{row.eligible_reduction:.1%}",
                    *labels,
                    str(row.requests),
                ]
            )
        header = (
            "strategy",
            "after",
            "cut",
            "elig",
            "crit",
            "irrel",
            "supers",
            "needed",
            "prot",
            "strings",
            "req",
        )
        blocks.append(f"{history} ({mine[0].chars_before:,} characters before)\n{text_table(header, cells)}")
    legend = (
        "after: characters left; cut: share removed; elig: share of the eligible pairs' characters "
        "removed; crit: critical results kept verbatim; irrel/supers: irrelevant/superseded results cut; "
        "needed: needed calls kept; prot: protected blocks identical; strings: must-contain strings kept; "
        "req: decision requests"
    )
    return "\n\n".join(blocks) + "\n" + paragraph(legend)
