"""The rollout numbers of plan records: savings over all plans, outcomes, tools, spread, cost and loss."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from tracetrim._convert import to_json_object
from tracetrim._followup import Followup
from tracetrim._record import PairRecord, Record
from tracetrim._tokens import chars_to_tokens
from tracetrim.compactor._repeats import REPEATED

PROBABILITY_BINS = 20
"""Histogram bins over [0, 1] for the model's probabilities (0.05 wide)."""

NEAR = 0.05
"""A probability this close to a threshold is "near" it: a small change of threshold flips it."""

REMOVING = ("drop_result", "drop_call")
"""Actions that take something out of the history (shorten the result, drop the pair)."""


@attrs.frozen
class PairRow:
    """One pair decision in one plan, and whether the agent needed it afterwards.

    ``needed`` is None when no follow-ups were reported at all (nothing is known either way).
    """

    plan: int
    record: Record = attrs.field(repr=False)
    pair: PairRecord
    needed: bool | None

    @property
    def removed(self) -> bool:
        """True when a decided plan shortened or dropped this pair (what adopting it would remove);
        an inconclusive plan's would-be drops were never going to happen."""
        return self.pair.action in REMOVING and self.record.status == "DECIDED"

    @property
    def points_to_copy(self) -> bool:
        """True when the plan made this result a pointer to a later copy (reason `REPEATED`), which
        holds every line of it, kept whole."""
        return self.pair.reason == REPEATED

    @property
    def lost(self) -> bool:
        """True when a removed pair was needed later and the history no longer holds its content (a
        pointer to a later copy still holds it there)."""
        return self.removed and bool(self.needed) and not self.points_to_copy

    @property
    def saved(self) -> int:
        """Characters the plan would have saved on this pair."""
        return max(self.pair.chars_before - self.pair.chars_after, 0)


def _same_scope(record: Record, followup: Followup) -> bool:
    return record.scope is None or followup.scope is None or record.scope == followup.scope


def _after(record: Record, followup: Followup) -> bool:
    # ISO 8601 UTC strings of one format order as their times do; lines without a time always match.
    return not record.at or not followup.at or followup.at >= record.at


def pair_rows(records: Sequence[Record], followups: Sequence[Followup]) -> list[PairRow]:
    """Every pair of every record that carries pairs, matched with the follow-ups about its call."""
    by_call: dict[str, list[Followup]] = defaultdict(list)
    for followup in followups:
        by_call[followup.call_id].append(followup)
    tracked = bool(followups)
    rows = []
    for index, record in enumerate(records):
        for pair in record.pairs or ():
            needed = (
                any(_same_scope(record, f) and _after(record, f) for f in by_call.get(pair.call_id, ()))
                if tracked
                else None
            )
            rows.append(PairRow(index, record, pair, needed))
    return rows


@attrs.frozen(kw_only=True)
class ToolStats:
    """What decided plans did to one tool's pairs, and how often a removed one was lost (`PairRow.lost`).

    ``keep`` counts every other pair of the tool: kept, or in a plan that was not decided.
    """

    tool: str
    pairs: int
    keep: int
    drop_result: int
    drop_call: int
    chars_saved: int
    needed: int
    tracked: bool

    @property
    def removed(self) -> int:
        """Pairs shortened or dropped."""
        return self.drop_result + self.drop_call

    @property
    def loss_rate(self) -> float | None:
        """Share of removed pairs the agent needed later (None without follow-ups or removed pairs)."""
        return self.needed / self.removed if self.tracked and self.removed else None


def tool_stats(rows: Iterable[PairRow]) -> tuple[ToolStats, ...]:
    """Per tool, most removed first."""
    by_tool: dict[str, list[PairRow]] = defaultdict(list)
    for row in rows:
        by_tool[row.pair.tool].append(row)
    stats = []
    for tool, group in by_tool.items():
        actions = Counter(row.pair.action.value for row in group if row.removed)
        stats.append(
            ToolStats(
                tool=tool,
                pairs=len(group),
                keep=len(group) - actions.total(),
                drop_result=actions["drop_result"],
                drop_call=actions["drop_call"],
                chars_saved=sum(row.saved for row in group if row.removed),
                needed=sum(1 for row in group if row.lost),
                tracked=any(row.needed is not None for row in group),
            )
        )
    return tuple(sorted(stats, key=lambda s: (-s.removed, -s.chars_saved, s.tool)))


def histogram(values: Iterable[float], bins: int = PROBABILITY_BINS) -> tuple[int, ...]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1] (1.0 in the last)."""
    counts = [0] * bins
    for value in values:
        counts[min(int(value * bins), bins - 1)] += 1
    return tuple(counts)


@attrs.frozen(kw_only=True)
class Spread:
    """How the model's probabilities fall around the thresholds in force."""

    keep_call: tuple[int, ...]
    keep_result: tuple[int, ...]
    keep_threshold: float
    discard_threshold: float
    near: float
    """Share of all answered probabilities within `NEAR` of a threshold."""


def spread(rows: Sequence[PairRow], keep: float, discard: float) -> Spread | None:
    """The spread of answered probabilities, or None when no pair carried one."""
    calls = [row.pair.keep_call for row in rows if row.pair.keep_call is not None]
    results = [row.pair.keep_result for row in rows if row.pair.keep_result is not None]
    every = calls + results
    if not every:
        return None
    near = sum(1 for p in every if min(abs(p - keep), abs(p - discard)) <= NEAR) / len(every)
    return Spread(
        keep_call=histogram(calls),
        keep_result=histogram(results),
        keep_threshold=keep,
        discard_threshold=discard,
        near=near,
    )


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in [0, 1]) of ``values``; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(max(int(share * len(ordered) + 0.999999) - 1, 0), len(ordered) - 1)]


@attrs.frozen(kw_only=True)
class Latency:
    """The decision model's cost: plan times, requests, retries, tokens."""

    median_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    requests: int
    retries: int
    input_tokens: int
    output_tokens: int


@attrs.frozen(kw_only=True)
class AuditSummary:
    """What a set of records says, over every plan (not only the decided ones)."""

    plans: int
    modes: dict[str, int]
    statuses: dict[str, int]
    reasons: dict[str, int]
    decided: int
    chars_before: int
    """Characters of every sized plan's history (plans that stopped before sizing count 0)."""
    chars_saved: int
    """Characters decided plans would have removed; every other plan saves nothing."""
    tokens_saved: int
    price_per_mtok: float | None
    cost_saved: float | None
    unsized: int
    median_reduction: float
    """Median reduction of the decided plans."""
    actions: dict[str, int]
    detailed: int
    """Plans whose records carry per-pair decisions."""
    tools: tuple[ToolStats, ...]
    spread: Spread | None
    latency: Latency
    fitting_stages: dict[str, int]
    failures: dict[str, str]
    followups: dict[str, int]
    removed: int
    needed: int
    record_versions: dict[str, int]
    junk: int

    @property
    def reduction(self) -> float:
        """Characters saved as a fraction of all plans' characters."""
        return self.chars_saved / self.chars_before if self.chars_before else 0.0

    @property
    def tracked(self) -> bool:
        """True when the records carry follow-ups, so a removed pair with none was not needed."""
        return bool(self.followups)

    @property
    def loss_rate(self) -> float | None:
        """Share of removed pairs needed afterwards; None without follow-ups or removed pairs."""
        return self.needed / self.removed if self.tracked and self.removed else None


def summarise(
    records: Iterable[Record],
    followups: Iterable[Followup] = (),
    *,
    keep_threshold: float = 0.5,
    discard_threshold: float | None = None,
    price_per_mtok: float | None = None,
    junk: int = 0,
) -> AuditSummary:
    """Aggregate ``records`` (and the ``followups`` about their calls) into the rollout numbers."""
    records = list(records)
    followups = list(followups)
    rows = pair_rows(records, followups)
    decided = [r for r in records if r.status == "DECIDED"]
    actions: Counter[str] = Counter()
    for record in decided:
        actions.update(record.actions)
    chars_saved = sum(max(r.chars_before - r.chars_after, 0) for r in decided)
    tokens_saved = chars_to_tokens(chars_saved)
    failures: dict[str, str] = {}
    for r in records:
        if r.status in ("ERROR", "CANCELLED"):
            failures.setdefault(f"{r.status}/{r.reason}", r.detail)
    elapsed = [r.elapsed_ms for r in records]
    removed = [row for row in rows if row.removed]
    return AuditSummary(
        plans=len(records),
        modes=dict(Counter(r.mode for r in records)),
        statuses=dict(Counter(r.status for r in records)),
        reasons=dict(Counter(f"{r.status}/{r.reason}" for r in records)),
        decided=len(decided),
        chars_before=sum(r.chars_before for r in records),
        chars_saved=chars_saved,
        tokens_saved=tokens_saved,
        price_per_mtok=price_per_mtok,
        cost_saved=tokens_saved * price_per_mtok / 1e6 if price_per_mtok is not None else None,
        unsized=sum(1 for r in records if not r.chars_before),
        median_reduction=statistics.median(r.reduction for r in decided) if decided else 0.0,
        actions=dict(actions),
        detailed=sum(1 for r in records if r.pairs is not None),
        tools=tool_stats(rows),
        spread=spread(
            rows, keep_threshold, keep_threshold if discard_threshold is None else discard_threshold
        ),
        latency=Latency(
            median_ms=statistics.median(elapsed) if elapsed else 0.0,
            p90_ms=percentile(elapsed, 0.9),
            p99_ms=percentile(elapsed, 0.99),
            max_ms=max(elapsed, default=0.0),
            requests=sum(r.requests for r in records),
            retries=sum(r.retries for r in records),
            input_tokens=sum(r.input_tokens for r in records),
            output_tokens=sum(r.output_tokens for r in records),
        ),
        fitting_stages=dict(Counter(r.fitting_stage for r in records if r.fitting_stage)),
        failures=failures,
        followups=dict(Counter(f.event for f in followups)),
        removed=len(removed),
        needed=sum(1 for row in removed if row.lost),
        record_versions=dict(Counter(str(r.record_version) for r in records)),
        junk=junk,
    )


def summary_json(summary: AuditSummary) -> dict[str, Any]:
    """The summary as JSON data, with the derived rates (reduction, loss rates) included."""
    data: dict[str, Any] = to_json_object(summary)
    data["reduction"] = summary.reduction
    data["loss_rate"] = summary.loss_rate
    for tool, stats in zip(data["tools"], summary.tools, strict=True):
        tool["removed"] = stats.removed
        tool["loss_rate"] = stats.loss_rate
    return data
