"""The frontier: needed content still there against how much of the history went, for any strategy."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from tracetrim._json import canonical_length
from tracetrim._snapshot import Message, text_of_output
from tracetrim._tally import share
from tracetrim._tokens import estimate_tokens, history_tokens
from tracetrim.compactor import (
    CompactionRequest,
    Compactor,
    CompactorConfig,
    ExecutionOptions,
    Mode,
    Reason,
)
from tracetrim.compactor._excerpt import excerpt, salience
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._repeats import MIN_REPEAT_CHARS
from tracetrim.decision import HistoryView, PairJudgement
from tracetrim.decision._remote import ModelOrJudge
from tracetrim.learn._examples import Cut
from tracetrim.learn._labels import findable, history_text

MASK_PLACEHOLDER = "[old tool output cleared]"

CutStrategy = Callable[[Cut], list[Message]]
"""A compaction under test: a cut in, the compacted prefix out."""


@attrs.frozen
class Point:
    """Totals over cuts: needed old results, how many are still findable or verbatim, characters."""

    needed: int = 0
    findable: int = 0
    verbatim: int = 0
    chars_before: int = 0
    chars_after: int = 0
    cuts: int = 0

    def __add__(self, other: Point) -> Point:
        return Point(*(a + b for a, b in zip(attrs.astuple(self), attrs.astuple(other), strict=True)))

    @property
    def recall(self) -> float:
        """Share of later-used old results whose used strings are still somewhere in the history."""
        return share(self.findable, self.needed, 1.0)

    @property
    def verbatim_recall(self) -> float:
        """Share of later-used old results still there word for word."""
        return share(self.verbatim, self.needed, 1.0)

    @property
    def removed(self) -> float:
        """Share of the whole history's characters removed (canonical JSON, summed over cuts)."""
        return 1.0 - self.chars_after / self.chars_before if self.chars_before else 0.0


def score_cut(cut: Cut, compacted: Sequence[Message]) -> Point:
    """How one compacted prefix did on its cut's old (candidate) results that were used later."""
    haystack = history_text(compacted)
    outputs: dict[str, str | None] = {}
    for message in compacted:
        for block in message["content"]:
            if block.get("type") == "tool_result":
                outputs[block["id"]] = text_of_output(block["output"])
    shown = "\n".join(text for text in outputs.values() if text is not None)
    needed = found = verbatim = 0
    for pair in cut.candidates:
        item = cut.evidence.get(pair.call_id)
        if item is None:
            continue
        needed += 1
        found += findable(item, haystack)
        verbatim += outputs.get(pair.call_id) == pair.result_text or _shown_whole(pair.result_text, shown)
    return Point(needed, found, verbatim, canonical_length(cut.prefix), canonical_length(list(compacted)), 1)


def _shown_whole(text: str | None, shown: str) -> bool:
    """True when a long result's whole text is still word for word in another result (a later copy
    it points to): its content is verbatim in the history even though its own block changed."""
    return text is not None and len(text) >= MIN_REPEAT_CHARS and text in shown


def evaluate(cuts: Iterable[Cut], strategy: CutStrategy) -> Point:
    """The strategy's totals over ``cuts``."""
    total = Point()
    for cut in cuts:
        total += score_cut(cut, strategy(cut))
    return total


def _replace(messages: list[Message], pair: Pair, output: str | None, clear_input: bool) -> None:
    if output is not None and pair.result_at is not None:
        i, j = pair.result_at
        message = messages[i] = {**messages[i], "content": list(messages[i]["content"])}
        message["content"][j] = {**message["content"][j], "output": output}
    if clear_input and pair.call_at is not None:
        i, j = pair.call_at
        message = messages[i] = {**messages[i], "content": list(messages[i]["content"])}
        message["content"][j] = {**message["content"][j], "input": "{}"}


def keep_last(n: int, *, clear_inputs: bool = False) -> CutStrategy:
    """Observation masking: every eligible text result but the last ``n`` replaced by a placeholder
    (``clear_inputs``: the calls' inputs cleared too, as context editing's clear-tool-uses does)."""

    def run(cut: Cut) -> list[Message]:
        messages = list(cut.prefix)
        tools = cut.trajectory.tools()
        results = [p for p in cut.pairs if p.result_text is not None and p.tool in tools and p.call_at]
        for pair in results[: max(len(results) - n, 0)]:
            _replace(messages, pair, MASK_PLACEHOLDER, clear_inputs)
        return messages

    return run


def label_oracle(*, used_lines: bool) -> CutStrategy:
    """The ceiling the labels allow: every old result used after the cut kept (verbatim, or with
    ``used_lines`` its first 300 characters plus exactly the lines holding its evidence, when that is
    shorter), every other
    one cleared like masking does. It reads the future, so no judge can reach it."""

    def run(cut: Cut) -> list[Message]:
        messages = list(cut.prefix)
        for pair in cut.candidates:
            item = cut.evidence.get(pair.call_id)
            text = pair.result_text or ""
            if item is None:
                _replace(messages, pair, MASK_PLACEHOLDER, False)
            elif used_lines:
                lines = [line for line in text.splitlines() if any(s in line for s in item.strings)]
                excerpt = "\n".join([text[:300], *lines])
                if len(excerpt) < len(text):
                    _replace(messages, pair, excerpt, False)
        return messages

    return run


def tracetrim(compactor_for: Callable[[Cut], Compactor]) -> CutStrategy:
    """tracetrim's proposal for each cut (SHADOW: judged and rebuilt, never archived), whatever the
    planner concluded; a plan that kept the original (INCONCLUSIVE, SKIPPED) counts as no change."""

    def run(cut: Cut) -> list[Message]:
        request = CompactionRequest(cut.prefix, cut.view.goal, cut.view.next_action)
        outcome = asyncio.run(compactor_for(cut).plan(request))
        if outcome.plan is None or outcome.reason is Reason.INSUFFICIENT_REDUCTION:
            return list(cut.prefix)
        return outcome.plan.messages

    return run


class ExcerptEvery:
    """A judge that keeps every call and shortens every result: the excerpt alone, with no judgement.

    A baseline, not a model: it shows how much of the frontier the excerpt gives by itself (the
    planner still keeps whole a result whose excerpt would not be short enough). It answers every
    history the same way, so it never drops a pair.
    """

    name = "excerpt-every"

    def judge(self, view: HistoryView) -> dict[str, PairJudgement]:
        """Keep the call, shorten the result, for every pair of ``view``."""
        return {pair.key: PairJudgement(keep_call=1.0, keep_result=0.0) for pair in view.pairs}


def excerpt_every() -> CutStrategy:
    """Every old result shortened to its excerpt at default settings, every call kept (`ExcerptEvery`)."""
    return tracetrim(default_compactor(ExcerptEvery(), minimum_reduction=0.0))


def default_compactor(
    model: ModelOrJudge, *, budget_share: float | None = None, **overrides: Any
) -> Callable[[Cut], Compactor]:
    """A SHADOW compactor per cut with the trajectory's eligible tools and default settings.

    With ``budget_share`` each cut's prefix is taken to be at the trigger and is compacted down to that
    share of its tokens (the token budget of `CompactorConfig`) instead of by the thresholds.
    """

    def make(cut: Cut) -> Compactor:
        if budget_share is not None:
            target = int(history_tokens(cut.prefix, estimate_tokens) * budget_share)
            overrides.update(trigger_tokens=target + 1, target_tokens=target)
        config = CompactorConfig(eligible_tools=cut.trajectory.tools(), **overrides)
        return Compactor(model, config=config, execution=ExecutionOptions(mode=Mode.SHADOW))

    return make


@attrs.frozen
class ShorteningScore:
    """How one way of shortening did on the long old results the agent used later."""

    needed: int
    kept: int
    chars_before: int
    chars_after: int

    @property
    def recall(self) -> float:
        """Share of those results whose used strings (found nowhere else in the history) survive."""
        return self.kept / self.needed if self.needed else 1.0

    @property
    def kept_share(self) -> float:
        """Characters kept, as a share of the results' characters."""
        return self.chars_after / self.chars_before if self.chars_before else 1.0


def shortening_score(
    cuts: Iterable[Cut], *, head: int, budget: int, longer_than: int = 1000
) -> ShorteningScore:
    """Shorten every used old result over ``longer_than`` characters (the ``head`` only when ``budget``
    is 0, else the excerpt) and count how many keep every used string the rest of the history lacks."""
    needed = kept = before = after = 0
    for cut in cuts:
        haystack = history_text(cut.prefix)
        index = salience(cut.prefix)
        for pair in cut.candidates:
            text = pair.result_text or ""
            item = cut.evidence.get(pair.call_id)
            if item is None or len(text) <= longer_than or pair.result_at is None:
                continue
            only_here = [s for s in item.strings if haystack.count(s) <= text.count(s)]
            short = excerpt(text, pair.result_at[0], index, head=head, tail=0, budget=budget).text
            needed += 1
            kept += all(s in short for s in only_here)
            before += len(text)
            after += len(short)
    return ShorteningScore(needed, kept, before, after)
