"""Quality scoring shared by `benchmarks/quality.py` and `tracetrim demo`: strategies, label checks, table."""

from __future__ import annotations

import copy
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._json import canonical_json, canonical_length
from tracetrim._snapshot import Message
from tracetrim._tally import summed
from tracetrim.compactor import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages
from tracetrim.decision import DecisionModel, LearnedDecisionModel, ScriptedDecisionModel
from tracetrim.decision._remote import ModelOrJudge

LABEL_KINDS = ("critical", "needed", "irrelevant", "superseded", "protected")


@attrs.frozen
class Count:
    """``kept`` of ``total`` (what "kept" means depends on the column)."""

    kept: int = 0
    total: int = 0

    def __add__(self, other: Count) -> Count:
        return Count(self.kept + other.kept, self.total + other.total)

    def __str__(self) -> str:
        return f"{self.kept}/{self.total}"

    @property
    def complete(self) -> bool:
        """True when every one was kept."""
        return self.kept == self.total


@attrs.frozen
class Labels:
    """What a good compaction does with each call id of a labelled history, plus strings that must stay."""

    critical: frozenset[str] = frozenset()
    needed: frozenset[str] = frozenset()
    irrelevant: frozenset[str] = frozenset()
    superseded: frozenset[str] = frozenset()
    protected: frozenset[str] = frozenset()
    must_contain: tuple[str, ...] = ()

    @classmethod
    def from_scenario(cls, scenario: Mapping[str, Any]) -> Labels:
        """The ``labels`` and ``must_contain`` of a scenario file (see ../shared/scenarios/README.md)."""
        labels = scenario.get("labels", {})
        kinds = {kind: frozenset(labels.get(kind, ())) for kind in LABEL_KINDS}
        return cls(**kinds, must_contain=tuple(scenario.get("must_contain", ())))

    def answers(self) -> dict[str, tuple[float, float]]:
        """``{call_id: (p_call, p_result)}`` a perfect judge would give: the label-reading upper bound."""
        table: dict[str, tuple[float, float]] = {}
        for call_id in self.critical:
            table[call_id] = (1.0, 1.0)
        for call_id in self.needed:
            table[call_id] = (1.0, 0.0)
        for call_id in self.irrelevant | self.superseded:
            table[call_id] = (0.0, 0.0)
        return table


@attrs.frozen
class LabelScore:
    """Label checks of one compacted history.

    ``critical``: results kept verbatim; ``needed``: calls still present; ``irrelevant`` and
    ``superseded``: results removed or shortened; ``protected``: every block of the id byte-identical;
    ``must_contain``: strings still present in some text, input or output.
    """

    critical: Count
    needed: Count
    irrelevant: Count
    superseded: Count
    protected: Count
    must_contain: Count

    @property
    def meets_targets(self) -> bool:
        """The scenario targets other than reduction: all critical, protected and strings kept, and at
        least 60% of irrelevant pairs removed or shortened."""
        return (
            self.critical.complete
            and self.protected.complete
            and self.must_contain.complete
            and self.irrelevant.kept >= 0.6 * self.irrelevant.total
        )


@attrs.frozen
class Case:
    """One history to compact and what the host would pass with it."""

    name: str
    messages: Sequence[Message]
    goal: str = ""
    next_action: str = ""
    eligible_tools: frozenset[str] = frozenset()
    protected_message_ids: tuple[str, ...] = ()
    protected_call_ids: tuple[str, ...] = ()
    preserve_recent_messages: int = 6
    minimum_reduction: float = 0.10
    labels: Labels | None = None
    oracle: Mapping[str, tuple[float, float]] | None = None
    """``{call_id: (p_call, p_result)}`` for the upper-bound row where no labels exist (real data)."""

    @classmethod
    def from_scenario(cls, scenario: Mapping[str, Any]) -> Case:
        """A case from a labelled scenario (or a bundled example)."""
        options = dict(scenario.get("options", {}))
        return cls(
            name=str(scenario.get("name", "scenario")),
            messages=scenario["messages"],
            goal=str(scenario.get("goal", "")),
            next_action=str(scenario.get("next_action", "")),
            eligible_tools=frozenset(scenario.get("eligible_tool_names", ())),
            protected_message_ids=tuple(scenario.get("protected_message_ids", ())),
            protected_call_ids=tuple(scenario.get("protected_call_ids", ())),
            preserve_recent_messages=int(options.get("preserve_recent_messages", 6)),
            labels=Labels.from_scenario(scenario),
        )

    def config(self, **overrides: Any) -> CompactorConfig:
        """The planner settings for this case."""
        settings: dict[str, Any] = {
            "eligible_tools": self.eligible_tools,
            "preserve_recent_messages": self.preserve_recent_messages,
            "minimum_reduction": self.minimum_reduction,
        }
        settings.update(overrides)
        return CompactorConfig(**settings)

    def candidates(self) -> tuple[list[Pair], list[Pair]]:
        """All pairs and the candidates, by the same rules the planner applies (eligibility, protection)."""
        messages = list(self.messages)
        protected = protected_messages(
            messages,
            preserve_recent=self.preserve_recent_messages,
            protected_ids=set(self.protected_message_ids),
            pinned_ids=frozenset(),
        )
        pairs = find_pairs(
            messages,
            eligible_tools=self.eligible_tools,
            protected=protected,
            protected_call_ids=set(self.protected_call_ids),
        )
        return pairs, [pair for pair in pairs if pair.candidate]


@attrs.frozen
class Compacted:
    """What a strategy made of a case: the new history and how many decision requests it took."""

    messages: list[Message]
    requests: int = 0
    detail: str = ""


Strategy = Callable[[Case], Coroutine[Any, Any, Compacted]]
"""A compaction strategy under test: a case in, the compacted history out."""


@attrs.frozen
class QualityRow:
    """One line of the quality table: one strategy on one history."""

    history: str
    strategy: str
    chars_before: int
    chars_after: int
    requests: int
    eligible_before: int = 0
    eligible_after: int = 0
    labels: LabelScore | None = None
    extra: Mapping[str, Count] = attrs.field(factory=dict)
    detail: str = ""

    @property
    def reduction(self) -> float:
        """Fraction of characters removed (canonical JSON)."""
        return 1.0 - self.chars_after / self.chars_before if self.chars_before else 0.0

    @property
    def eligible_reduction(self) -> float:
        """Fraction of the characters of the eligible (candidate) pairs removed: the part any strategy
        may touch, since protected pairs, texts and thinking stay by rule."""
        return 1.0 - self.eligible_after / self.eligible_before if self.eligible_before else 0.0


def history_chars(messages: Sequence[Message]) -> int:
    """Characters of the canonical JSON of a history (the planner's measure)."""
    return canonical_length(list(messages))


def strings_of(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (texts, inputs, outputs, ids), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_of(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_of(item)


def blocks_by_id(messages: Sequence[Message], kind: str | None = None) -> dict[str, list[str]]:
    """Canonical JSON of every tool_call/tool_result block, by call id (``kind`` limits to one type)."""
    found: dict[str, list[str]] = {}
    for message in messages:
        for block in message.get("content", ()):
            if block.get("type") in ("tool_call", "tool_result") and kind in (None, block.get("type")):
                found.setdefault(str(block.get("id")), []).append(canonical_json(block))
    return found


def pair_chars(messages: Sequence[Message], call_ids: Iterable[str]) -> int:
    """Characters of the canonical JSON of every call and result block of ``call_ids``."""
    wanted = set(call_ids)
    return sum(
        len(block)
        for call_id, blocks in blocks_by_id(messages).items()
        if call_id in wanted
        for block in blocks
    )


def score_labels(original: Sequence[Message], compacted: Sequence[Message], labels: Labels) -> LabelScore:
    """Check a compacted history against the labels of its original."""
    before_results, after_results = (
        blocks_by_id(original, "tool_result"),
        blocks_by_id(compacted, "tool_result"),
    )
    before_all, after_all = blocks_by_id(original), blocks_by_id(compacted)
    after_calls = blocks_by_id(compacted, "tool_call")

    def verbatim(call_id: str) -> bool:
        wanted = before_results.get(call_id, [])
        return bool(wanted) and all(block in after_results.get(call_id, []) for block in wanted)

    def count(ids: Iterable[str], test: Callable[[str], bool]) -> Count:
        ids = sorted(ids)
        return Count(sum(1 for call_id in ids if test(call_id)), len(ids))

    text = "\n".join(strings_of(list(compacted)))
    return LabelScore(
        critical=count(labels.critical, verbatim),
        needed=count(labels.needed, lambda call_id: call_id in after_calls),
        irrelevant=count(labels.irrelevant, lambda call_id: not verbatim(call_id)),
        superseded=count(labels.superseded, lambda call_id: not verbatim(call_id)),
        protected=count(labels.protected, lambda call_id: before_all.get(call_id) == after_all.get(call_id)),
        must_contain=Count(sum(1 for s in labels.must_contain if s in text), len(labels.must_contain)),
    )


# --- strategies ---------------------------------------------------------------------------------------


def tracetrim_strategy(
    model: ModelOrJudge | None = None,
    *,
    model_for: Callable[[Case], ModelOrJudge] | None = None,
    keep_threshold: float = 0.5,
    discard_threshold: float | None = None,
) -> Strategy:
    """tracetrim in SHADOW mode with ``model`` (or one built per case by ``model_for``). The proposal is
    scored even where ``minimum_reduction`` would keep the original, so the decisions themselves are
    measured; `Compacted.detail` carries the planner's reason."""

    async def run(case: Case) -> Compacted:
        judge = model_for(case) if model_for is not None else (model or LearnedDecisionModel())
        config = case.config(keep_threshold=keep_threshold, discard_threshold=discard_threshold)
        compactor = Compactor(judge, config=config, execution=ExecutionOptions(mode=Mode.SHADOW))
        outcome = await compactor.plan(
            CompactionRequest(
                case.messages,
                case.goal,
                case.next_action,
                protected_message_ids=case.protected_message_ids,
                protected_call_ids=case.protected_call_ids,
            )
        )
        if outcome.plan is None:
            return Compacted(list(case.messages), 0, f"{outcome.status.value} {outcome.reason}")
        return Compacted(outcome.plan.messages, outcome.plan.stats.requests, outcome.reason)

    return run


def label_model(case: Case) -> DecisionModel:
    """A `ScriptedDecisionModel` answering from the case's labels (or its ``oracle`` table); unlabelled
    pairs are kept whole."""
    if case.oracle is not None:
        table = dict(case.oracle)
    else:
        table = case.labels.answers() if case.labels is not None else {}
    return ScriptedDecisionModel.by_call_id(table, default=(1.0, 1.0), name="labels")


def _replace_output(messages: list[Message], pair: Pair, text: str) -> None:
    assert pair.result_at is not None
    i, j = pair.result_at
    block = dict(messages[i]["content"][j])
    block["output"] = text
    content = list(messages[i]["content"])
    content[j] = block
    messages[i] = {**messages[i], "content": content}


def _mask(case: Case, keep: Callable[[list[Pair], list[Pair]], set[str]], placeholder: str) -> Compacted:
    messages = copy.deepcopy(list(case.messages))
    pairs, candidates = case.candidates()
    kept = keep(pairs, candidates)
    for pair in candidates:
        if pair.call_id in kept:
            continue
        line = placeholder.format(
            tool=pair.tool, chars=pair.result_chars, lines=(pair.result_text or "").count("\n") + 1
        )
        if len(line) < pair.result_chars:
            _replace_output(messages, pair, line)
    return Compacted(messages)


def keep_last_n(n: int) -> Strategy:
    """Observation masking: every eligible result older than the last ``n`` tool results (of any tool)
    becomes a one-line placeholder; calls stay."""

    def keep(pairs: list[Pair], candidates: list[Pair]) -> set[str]:
        with_results = sorted(
            (p for p in pairs if p.result_at is not None), key=lambda p: p.result_at or (0, 0)
        )
        return {p.call_id for p in with_results[-n:]} if n else set()

    async def run(case: Case) -> Compacted:
        return _mask(case, keep, "[Old tool output omitted: {lines} lines]")

    return run


def clear_tool_uses(keep_recent: int = 3) -> Strategy:
    """Framework-style context editing: clear every eligible tool result except the most recent
    ``keep_recent`` eligible ones."""

    def keep(pairs: list[Pair], candidates: list[Pair]) -> set[str]:
        ordered = sorted(candidates, key=lambda p: p.result_at or (0, 0))
        return {p.call_id for p in ordered[-keep_recent:]} if keep_recent else set()

    async def run(case: Case) -> Compacted:
        return _mask(case, keep, "[cleared: old {tool} result]")

    return run


def standard_strategies(*, with_labels: bool = True) -> list[tuple[str, Strategy]]:
    """The strategies of the quality table, in order (the label-reading upper bound last)."""
    strategies: list[tuple[str, Strategy]] = [
        ("tracetrim", tracetrim_strategy(LearnedDecisionModel())),
        ("keep-last-10", keep_last_n(10)),
        ("keep-last-3", keep_last_n(3)),
        ("clear-tool-uses-3", clear_tool_uses(3)),
    ]
    if with_labels:
        strategies.append(("labels (upper bound)", tracetrim_strategy(model_for=label_model)))
    return strategies


Check = Callable[[Case, Sequence[Message]], Mapping[str, Count]]
"""An extra per-history check (evidence kept, quoted observations kept): named counts."""


async def evaluate(
    case: Case, strategies: Sequence[tuple[str, Strategy]], checks: Sequence[Check] = ()
) -> list[QualityRow]:
    """Run every strategy on ``case`` and score the result."""
    rows: list[QualityRow] = []
    before = history_chars(case.messages)
    eligible = [pair.call_id for pair in case.candidates()[1]]
    eligible_before = pair_chars(case.messages, eligible)
    for name, strategy in strategies:
        result = await strategy(case)
        extra: dict[str, Count] = {}
        for check in checks:
            extra.update(check(case, result.messages))
        rows.append(
            QualityRow(
                history=case.name,
                strategy=name,
                chars_before=before,
                chars_after=history_chars(result.messages),
                requests=result.requests,
                eligible_before=eligible_before,
                eligible_after=pair_chars(result.messages, eligible),
                labels=score_labels(case.messages, result.messages, case.labels) if case.labels else None,
                extra=extra,
                detail=result.detail,
            )
        )
    return rows


async def example_rows(
    names: Sequence[str] | None = None, strategies: Sequence[tuple[str, Strategy]] | None = None
) -> list[QualityRow]:
    """The quality rows of the bundled examples (what `tracetrim demo` shows)."""
    from tracetrim._examples import NAMES, load_example

    rows: list[QualityRow] = []
    for name in names or NAMES:
        rows.extend(
            await evaluate(Case.from_scenario(load_example(name)), strategies or standard_strategies())
        )
    return rows


def total(history: str, strategy: str, rows: Sequence[QualityRow]) -> QualityRow:
    """One row summing ``rows`` (characters, requests and every count)."""
    labels: LabelScore | None = None
    scored = [row.labels for row in rows if row.labels is not None]
    if scored:
        labels = LabelScore(
            *(sum((getattr(s, f.name) for s in scored), Count()) for f in attrs.fields(LabelScore))
        )
    extra = summed((row.extra for row in rows), Count())
    return QualityRow(
        history=history,
        strategy=strategy,
        chars_before=sum(r.chars_before for r in rows),
        chars_after=sum(r.chars_after for r in rows),
        requests=sum(r.requests for r in rows),
        eligible_before=sum(r.eligible_before for r in rows),
        eligible_after=sum(r.eligible_after for r in rows),
        labels=labels,
        extra=extra,
    )


def format_table(rows: Sequence[QualityRow]) -> str:
    """A Markdown table of ``rows``; label columns appear when any row has labels, extra columns by name."""
    with_labels = any(row.labels is not None for row in rows)
    extra_names: list[str] = []
    for row in rows:
        extra_names.extend(k for k in row.extra if k not in extra_names)
    header = ["history", "strategy", "chars before", "chars after", "reduction", "eligible reduction"]
    if with_labels:
        header += [
            "critical verbatim",
            "irrelevant cut",
            "superseded cut",
            "needed call kept",
            "protected identical",
            "must_contain kept",
        ]
    header += [*extra_names, "requests"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [
            row.history,
            row.strategy,
            f"{row.chars_before:,}",
            f"{row.chars_after:,}",
            f"{row.reduction:.1%}",
            f"{row.eligible_reduction:.1%}",
        ]
        if with_labels:
            s = row.labels
            cells += (
                [
                    str(s.critical),
                    str(s.irrelevant),
                    str(s.superseded),
                    str(s.needed),
                    str(s.protected),
                    str(s.must_contain),
                ]
                if s is not None
                else ["-"] * 6
            )
        cells += [str(row.extra[k]) if k in row.extra else "-" for k in extra_names]
        cells.append(str(row.requests))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
