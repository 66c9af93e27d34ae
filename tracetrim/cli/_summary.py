"""The closing line of a run over many histories: plans, how they ended, characters and tokens saved."""

from __future__ import annotations

from collections import Counter

import attrs

from tracetrim.compactor import Outcome, Status


@attrs.define
class RunSummary:
    """Totals over the outcomes of one command run (mutable: it accumulates as histories finish)."""

    plans: int = 0
    statuses: Counter[str] = attrs.field(factory=Counter)
    chars_before: int = 0
    chars_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    adopted: int = 0

    def add(self, outcome: Outcome) -> None:
        """Count one outcome; only a DECIDED plan's savings count (the others change nothing)."""
        self.plans += 1
        self.statuses[outcome.status.value] += 1
        self.adopted += outcome.adopted
        if outcome.plan is not None and outcome.status is Status.DECIDED:
            stats = outcome.plan.stats
            self.chars_before += stats.chars_before
            self.chars_after += stats.chars_after
            self.tokens_before += stats.tokens_before
            self.tokens_after += stats.tokens_after

    @property
    def errors(self) -> int:
        """How many plans ended in ERROR."""
        return self.statuses[Status.ERROR.value]

    def line(self) -> str:
        """One line: ``12 plans: 9 decided, 2 inconclusive, 1 skipped; saved 84,120 characters (31.2%),
        ~21,030 tokens`` (the share is of the decided histories' characters; "would save" in SHADOW)."""
        order = [s.value for s in Status]
        ends = ", ".join(f"{self.statuses[s]} {s.lower()}" for s in order if self.statuses[s])
        saved = self.chars_before - self.chars_after
        share = saved / self.chars_before if self.chars_before else 0.0
        tokens = self.tokens_before - self.tokens_after
        verb = "saved" if self.adopted else "would save"  # SHADOW adopts nothing: say so
        counts = f"{self.plans} plans: {ends or 'none'}"
        return f"{counts}; {verb} {saved:,} characters ({share:.1%}), ~{tokens:,} tokens"
