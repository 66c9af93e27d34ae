"""The replay's numbers: one strategy on one run, totals per strategy (and dataset), the whole report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from tracetrim._convert import to_json_object
from tracetrim._tally import share, summed
from tracetrim.compactor._budget import pays_back
from tracetrim.replay._host import HostRule
from tracetrim.replay._prices import CachePrices


@attrs.frozen
class Compaction:
    """One model call whose prompt changed what the previous prompt held."""

    step: int
    """The model call's number (from 0)."""
    saved: int
    """Tokens the prompt is smaller than the previous prompt plus what is new since would have been."""
    rewrite: int
    """Tokens written to the cache again: from the first change to the end, less what is new since."""
    remaining: int
    """Model calls of the run after this one: how often the saving is read back."""

    def pays_back(self, prices: CachePrices) -> bool:
        """Whether the compaction costs less than it saves with ``prices`` over the rest of the run.

        This call writes the ``rewrite`` tokens instead of reading them and the ``saved`` ones, which
        costs ``(write - read) * rewrite - read * saved`` more; each later call reads ``saved`` fewer
        tokens, ``read * saved`` less. So it pays back when ``(remaining + 1) * read * saved`` exceeds
        ``(write - read) * rewrite``: the rule `tracetrim.CompactorConfig.cache_prices` applies.
        """
        return pays_back(self.saved, self.rewrite, self.remaining, prices.read, prices.write)


@attrs.frozen(kw_only=True)
class Figures:
    """What one strategy billed and lost, over one run (`StrategyRun`) or many (`StrategyTotals`).

    Tokens are prompt (input) tokens, by the replay's counter. ``prompt_tokens`` sums the prompt of
    every model call (the context plus any result recalled earlier and still carried); ``recall_tokens``
    is what the extra turns cost (each recall or re-run: one more call with the same prompt plus the
    result it brings back); ``billed_tokens`` is both. ``cache_cost`` prices the same calls with the
    cache model, in plain-input-token units. A *use* is a model call writing strings an earlier result
    first showed; ``recallable``, ``rerun`` and ``silent`` count the uses whose strings were not in
    that call's prompt, by what still pointed to them (`Missing`).
    """

    strategy: str
    dataset: str
    steps: int
    prompt_tokens: int
    recall_tokens: int
    billed_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_cost: float
    peak_context: int
    compactions: int
    """Model calls whose prompt changed something the previous prompt held (its prefix broke)."""
    rewrite_tokens: int
    """Summed over compactions: prompt tokens written to the cache again from the first change on,
    beyond the messages new since the previous call."""
    saved_tokens: int
    """Summed over compactions: how much smaller each made its prompt (`Compaction.saved`)."""
    plans: int
    """Compaction attempts the strategy ran (tracetrim's plans, adopted or not; 0 for per-request edits)."""
    planning_ms: float
    uses: int
    recallable: int
    rerun: int
    silent: int
    reasons: dict[str, int] = attrs.field(factory=dict)
    """Plan outcomes by reason (``ARCHIVED_PROPOSAL``, ``INSUFFICIENT_REDUCTION``, ...)."""

    @property
    def missing(self) -> int:
        """Uses whose strings the prompt lacked, whatever pointed to them."""
        return self.recallable + self.rerun + self.silent

    @property
    def missing_share(self) -> float:
        """Share of uses whose strings the prompt lacked."""
        return share(self.missing, self.uses)

    @property
    def silent_share(self) -> float:
        """Share of uses silently lost."""
        return share(self.silent, self.uses)


@attrs.frozen(kw_only=True)
class StrategyRun(Figures):
    """One strategy walked over one run: the figures, the prompt's size at every call, each compaction."""

    run: str
    context: tuple[int, ...] = attrs.field(default=(), repr=False)
    """The prompt's tokens at each model call: the sawtooth."""
    events: tuple[Compaction, ...] = attrs.field(default=(), repr=False)
    """Each compaction: when, what it saved, what it rewrote."""


@attrs.frozen(kw_only=True)
class StrategyTotals(Figures):
    """One strategy's totals over runs (of one dataset, or ``all``); ``peak_context`` is the largest."""

    runs: int
    mean_context: float
    rewrite_per_compaction: float
    paid_back: int
    """Compactions that paid back their cache rewrite with the report's prices (`Compaction.pays_back`)."""


SUMMED = tuple(
    f.name for f in attrs.fields(Figures) if f.name not in ("strategy", "dataset", "peak_context", "reasons")
)
"""The figures whose total over runs is their sum."""


def totals(strategy: str, dataset: str, runs: Sequence[StrategyRun], prices: CachePrices) -> StrategyTotals:
    """The totals of ``runs`` (all of one strategy); ``prices`` decide which compactions paid back."""
    sums: dict[str, Any] = {name: sum(getattr(r, name) for r in runs) for name in SUMMED}
    return StrategyTotals(
        strategy=strategy,
        dataset=dataset,
        runs=len(runs),
        peak_context=max((r.peak_context for r in runs), default=0),
        mean_context=share(sums["prompt_tokens"], sums["steps"]),
        rewrite_per_compaction=share(sums["rewrite_tokens"], sums["compactions"]),
        paid_back=sum(e.pays_back(prices) for r in runs for e in r.events),
        reasons=dict(sorted(summed((r.reasons for r in runs), 0).items())),
        **sums,
    )


@attrs.frozen
class StrategyInfo:
    """A strategy's name and the one line saying what it models."""

    name: str
    models: str


ALL = "all"
"""The ``dataset`` of totals over every run."""


@attrs.frozen(kw_only=True)
class ReplayReport:
    """Every strategy on every run under one host rule and one cache price model, with totals."""

    host: HostRule
    prices: CachePrices
    strategies: tuple[StrategyInfo, ...]
    runs: tuple[StrategyRun, ...] = attrs.field(repr=lambda runs: f"<{len(runs)} strategy runs>")
    totals: tuple[StrategyTotals, ...] = attrs.field(repr=False)
    """Per strategy over all runs (dataset ``all``), then per dataset when there are several."""
    elapsed_s: float = 0.0

    @property
    def datasets(self) -> tuple[str, ...]:
        """The datasets of the runs, in the order first met."""
        return tuple(dict.fromkeys(r.dataset for r in self.runs))

    def totals_for(self, dataset: str = ALL) -> tuple[StrategyTotals, ...]:
        """The strategies' totals over ``dataset`` (``all``: every run), in the strategies' order."""
        found = tuple(t for t in self.totals if t.dataset == dataset)
        if not found and dataset != ALL and dataset in self.datasets:
            return tuple(t for t in self.totals if t.dataset == ALL)  # one dataset only: all is it
        return found

    def to_json(self) -> dict[str, object]:
        """The report as plain JSON data (the project's converter)."""
        data: dict[str, object] = to_json_object(self)
        return data


def report_totals(
    strategies: Iterable[str], runs: Sequence[StrategyRun], prices: CachePrices
) -> tuple[StrategyTotals, ...]:
    """Totals per strategy over all runs, then per dataset when the runs come from more than one."""
    names = list(strategies)
    datasets = list(dict.fromkeys(r.dataset for r in runs))
    out = [totals(name, ALL, [r for r in runs if r.strategy == name], prices) for name in names]
    if len(datasets) > 1:
        for dataset in datasets:
            out += [
                totals(
                    name, dataset, [r for r in runs if r.strategy == name and r.dataset == dataset], prices
                )
                for name in names
            ]
    return tuple(out)
