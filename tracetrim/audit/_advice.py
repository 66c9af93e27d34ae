"""The rollout recommendation: a threshold sweep over recorded probabilities and a verdict per tool."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import attrs

from tracetrim._validators import FieldValueError
from tracetrim.audit._summary import REMOVING, PairRow, ToolStats
from tracetrim.compactor._outcome import Action
from tracetrim.compactor._policy import decide

THRESHOLDS = tuple(round(0.05 * step, 2) for step in range(1, 20))
"""The single thresholds (keep = discard) the sweep tries: 0.05 to 0.95."""

FALLBACK_LEFT = {"drop_result": 0.25, "drop_call": 0.0}
"""Share of a pair left after an action no recorded pair took (a rough guess, used only then)."""

MIN_DECISIONS = 20
"""Would-be drops a tool needs before a verdict trusts its measured loss rate."""


@attrs.frozen(kw_only=True)
class ThresholdPoint:
    """What one threshold would have done to the recorded pairs (savings estimated where not observed)."""

    threshold: float
    removed: int
    needed: int
    chars_saved: int
    tracked: bool

    @property
    def loss_rate(self) -> float | None:
        """Share of removed pairs needed afterwards (None without follow-ups or removals)."""
        return self.needed / self.removed if self.tracked and self.removed else None


def _left_ratios(rows: Sequence[PairRow]) -> dict[str, float]:
    """Per removing action, the median share of a pair the recorded plans left behind."""
    ratios = dict(FALLBACK_LEFT)
    for action in REMOVING:
        seen = [
            row.pair.chars_after / row.pair.chars_before
            for row in rows
            if row.pair.action == action and row.pair.chars_before
        ]
        if seen:
            ratios[action] = statistics.median(seen)
    return ratios


def sweep(rows: Sequence[PairRow], thresholds: Sequence[float] = THRESHOLDS) -> tuple[ThresholdPoint, ...]:
    """Replay the threshold policy on every pair the model answered, at each threshold."""
    answered = [row for row in rows if row.pair.keep_call is not None and row.pair.keep_result is not None]
    tracked = any(row.needed is not None for row in rows)
    left = _left_ratios(rows)
    points = []
    for threshold in thresholds:
        removed = needed = saved = 0
        for row in answered:
            assert row.pair.keep_call is not None and row.pair.keep_result is not None
            action, _ = decide(row.pair.keep_call, row.pair.keep_result, threshold, threshold)
            if row.points_to_copy and action is not Action.DROP_CALL:
                # The planner points an old copy at a later one whatever the thresholds say, and the
                # later copy still holds all of it: removed at every threshold, never a loss.
                removed += 1
                saved += row.saved
                continue
            if action.value not in REMOVING:
                continue
            removed += 1
            needed += bool(row.needed)
            if action.value == row.pair.action:
                saved += row.saved
            else:
                saved += round(row.pair.chars_before * (1 - left[action.value]))
        points.append(
            ThresholdPoint(
                threshold=threshold, removed=removed, needed=needed, chars_saved=saved, tracked=tracked
            )
        )
    return tuple(points)


@attrs.frozen(kw_only=True)
class Verdict:
    """Whether one tool is ready for ENFORCE, and why (or why not)."""

    tool: str
    kind: str
    """``ready``, ``loss`` (above target), ``few`` (too few drops), ``unknown`` (no follow-ups), ``idle``."""
    why: str
    best: ThresholdPoint | None = None
    """The threshold that would have saved most on this tool's pairs within the target loss rate."""

    @property
    def ready(self) -> bool:
        """True when the tool can go to ENFORCE."""
        return self.kind == "ready"


def verdict(
    stats: ToolStats, target: float, min_decisions: int = MIN_DECISIONS, best: ThresholdPoint | None = None
) -> Verdict:
    """The plain verdict for one tool from its recorded decisions and follow-ups; ``best`` is the
    tool's own best threshold within ``target``, offered where its loss is above target."""
    found = _verdict(stats, target, min_decisions)
    if found.kind == "loss" and best is not None and best.removed:
        found = attrs.evolve(
            found,
            why=f"{found.why}; at threshold {best.threshold:.2f} it would have removed {best.removed} "
            f"with loss {best.loss_rate or 0.0:.1%}",
        )
    return attrs.evolve(found, best=best)


def _verdict(stats: ToolStats, target: float, min_decisions: int) -> Verdict:
    if not stats.removed:
        return Verdict(tool=stats.tool, kind="idle", why="nothing to gain: no pair was shortened or dropped")
    if stats.loss_rate is None:
        return Verdict(
            tool=stats.tool,
            kind="unknown",
            why="no follow-ups reported, so the loss rate is unknown (report recalls and later uses)",
        )
    if stats.loss_rate > target:
        return Verdict(
            tool=stats.tool,
            kind="loss",
            why=f"{stats.needed} of {stats.removed} removed results were needed later "
            f"(loss {stats.loss_rate:.1%}, target {target:.1%})",
        )
    if stats.removed < min_decisions:
        return Verdict(
            tool=stats.tool,
            kind="few",
            why=f"only {stats.removed} would-be drops so far; need {min_decisions} before trusting the rate",
        )
    bound = f"; 95% upper bound {3 / stats.removed:.1%}" if not stats.needed else ""
    return Verdict(
        tool=stats.tool,
        kind="ready",
        why=f"loss {stats.loss_rate:.1%} over {stats.removed} removed results{bound}",
    )


@attrs.frozen(kw_only=True)
class Recommendation:
    """The thresholds that would have saved most within the target loss rate, and a verdict per tool."""

    target_loss: float
    points: tuple[ThresholdPoint, ...]
    best: ThresholdPoint | None
    current: float
    verdicts: tuple[Verdict, ...]
    min_decisions: int = MIN_DECISIONS

    @property
    def text(self) -> str:
        """The plain verdict: where ENFORCE is safe and where SHADOW stays, grouped by reason."""
        if not self.verdicts:
            return "No per-pair detail in these records: record with pairs=True to get a verdict per tool."
        groups: dict[str, list[Verdict]] = {}
        for item in self.verdicts:
            groups.setdefault(item.kind, []).append(item)
        parts = []
        if "ready" in groups:
            parts.append(f"Ready for ENFORCE on {_names(groups['ready'])}")
        if "loss" in groups:
            lossy = ", ".join(f"{v.tool} ({v.why})" for v in groups["loss"])
            parts.append(f"keep SHADOW for {lossy}: results they drop are needed later")
        if "few" in groups:
            parts.append(
                f"keep SHADOW for {_names(groups['few'])}: fewer than {self.min_decisions} "
                "would-be drops each, too few to trust a loss rate"
            )
        if "unknown" in groups:
            parts.append(
                f"keep SHADOW for {_names(groups['unknown'])}: no follow-ups reported, so the loss "
                "rate is unknown (give RecallTool a reporter, report later uses)"
            )
        if "idle" in groups:
            parts.append(f"nothing to gain yet on {_names(groups['idle'])}: never shortened or dropped")
        sentence = "; ".join(parts)
        return sentence[0].upper() + sentence[1:] + "."

    @property
    def threshold_text(self) -> str:
        """One sentence on the thresholds: the best one within target, or why none can be named."""
        if not self.points or not any(p.removed for p in self.points):
            return "No pair carried the model's probabilities: nothing to sweep."
        if self.best is None:
            if not self.points[0].tracked:
                return (
                    "No follow-ups reported, so no threshold can be chosen by loss rate; the sweep "
                    "shows only what each would save."
                )
            lowest = min(
                (p for p in self.points if p.removed),
                key=lambda p: (p.loss_rate or 0.0, -p.chars_saved),
            )
            return (
                f"Replaying the policy on every answered pair, no threshold kept the loss rate within "
                f"{self.target_loss:.1%}: the lowest, "
                f"{lowest.loss_rate or 0.0:.1%}, comes at keep_threshold = discard_threshold = "
                f"{lowest.threshold:.2f} ({lowest.removed} removed, about {lowest.chars_saved:,} "
                "characters); raise --target-loss to see what a higher rate would buy."
            )
        best = self.best
        text = (
            f"Replaying the policy on every answered pair: keep_threshold = discard_threshold = "
            f"{best.threshold:.2f} would have removed {best.removed} results, saving about "
            f"{best.chars_saved:,} characters with loss {best.loss_rate or 0.0:.1%} "
            f"(target {self.target_loss:.1%})"
        )
        here = min(self.points, key=lambda p: abs(p.threshold - self.current))
        if abs(here.threshold - self.current) < 1e-9 and here is not best:
            loss = "unknown" if here.loss_rate is None else f"{here.loss_rate:.1%}"
            text += (
                f"; at {self.current:.2f}, the threshold in force, it removes {here.removed} "
                f"(about {here.chars_saved:,} characters, loss {loss})"
            )
        return text + "."


def recommend(
    rows: Sequence[PairRow],
    tools: Sequence[ToolStats],
    *,
    target_loss: float = 0.0,
    current: float = 0.5,
    min_decisions: int = MIN_DECISIONS,
) -> Recommendation:
    """Sweep the thresholds and judge every tool against ``target_loss`` (default: no loss observed)."""
    if not 0.0 <= target_loss <= 1.0:
        raise FieldValueError(f"target_loss must be between 0 and 1, got {target_loss!r}")
    points = sweep(rows)
    by_tool: dict[str, list[PairRow]] = {}
    for row in rows:
        by_tool.setdefault(row.pair.tool, []).append(row)
    verdicts = tuple(
        verdict(
            s, target_loss, min_decisions, best_point(sweep(by_tool.get(s.tool, [])), target_loss, current)
        )
        for s in tools
    )
    return Recommendation(
        target_loss=target_loss,
        points=points,
        best=best_point(points, target_loss, current),
        current=current,
        verdicts=verdicts,
        min_decisions=min_decisions,
    )


def best_point(points: Sequence[ThresholdPoint], target: float, current: float) -> ThresholdPoint | None:
    """The point that saved most with a known loss rate within ``target``; None when there is none."""
    within = [p for p in points if p.removed and p.loss_rate is not None and p.loss_rate <= target + 1e-12]
    # On a tie the threshold nearest the one in force wins: no change is the cheaper advice.
    return max(within, key=lambda p: (p.chars_saved, -abs(p.threshold - current)), default=None)


def _names(verdicts: Sequence[Verdict], shown: int = 8) -> str:
    names = [v.tool for v in verdicts]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
