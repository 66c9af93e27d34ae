"""One audit of record files: the summary, the recommendation and the rows behind them, computed once."""

from __future__ import annotations

import attrs

from tracetrim._validators import int_in, probability
from tracetrim.audit._advice import MIN_DECISIONS, Recommendation, recommend
from tracetrim.audit._html import render_html
from tracetrim.audit._observer import AuditInput
from tracetrim.audit._summary import AuditSummary, PairRow, pair_rows, summarise


@attrs.frozen(kw_only=True)
class AuditOptions:
    """How to read the records: the thresholds in force, the price, the target loss rate."""

    keep_threshold: float = attrs.field(default=0.5, validator=probability)
    discard_threshold: float | None = None
    price_per_mtok: float | None = None
    target_loss: float = attrs.field(default=0.0, validator=probability)
    min_decisions: int = attrs.field(default=MIN_DECISIONS, validator=int_in(1))


@attrs.frozen
class AuditReport:
    """What the records say (`AuditSummary`), what to do (`Recommendation`), and the input behind it."""

    found: AuditInput
    rows: tuple[PairRow, ...]
    summary: AuditSummary
    advice: Recommendation

    def html(self, title: str = "tracetrim shadow audit") -> str:
        """The self-contained HTML report."""
        return render_html(
            self.summary, self.advice, self.found.records, self.rows, self.found.junk, title=title
        )


def audit(found: AuditInput, options: AuditOptions | None = None) -> AuditReport:
    """Audit what record files held."""
    options = options or AuditOptions()
    rows = tuple(pair_rows(found.records, found.followups))
    summary = summarise(
        found.records,
        found.followups,
        keep_threshold=options.keep_threshold,
        discard_threshold=options.discard_threshold,
        price_per_mtok=options.price_per_mtok,
        junk=len(found.junk),
    )
    advice = recommend(
        rows,
        summary.tools,
        target_loss=options.target_loss,
        current=options.keep_threshold,
        min_decisions=options.min_decisions,
    )
    return AuditReport(found, rows, summary, advice)
