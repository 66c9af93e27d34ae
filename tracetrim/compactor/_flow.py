"""What every strategy shares besides the runner: per-pair decisions, sizes, reduction, the harness answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from tracetrim._json import canonical_lengths
from tracetrim._snapshot import BlockSizes, Message
from tracetrim._token_budget import TokenBudget
from tracetrim.compactor._budget import pays_back
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._outcome import Action, Outcome, PairDecision, Plan, PlanStats, Reason, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._transcript import Transcript

BELOW_TRIGGER = "below_trigger"
"""Why every candidate is kept when the history is at or under the budget's trigger."""


def unchanged_stats(
    transcript: Transcript, pairs: Sequence[Pair], tokens: int, target: int | None
) -> PlanStats:
    """The stats of ``transcript`` as it stands (``tokens`` of it; ``target``: the budget's, if any):
    where every plan's stats start."""
    candidates = sum(1 for pair in pairs if pair.candidate)
    return PlanStats(
        messages_before=len(transcript.messages),
        messages_after=len(transcript.messages),
        chars_before=transcript.chars,
        chars_after=transcript.chars,
        candidates=candidates,
        protected=len(pairs) - candidates,
        tokens_before=tokens,
        tokens_after=tokens,
        target_tokens=target or 0,
    )


def skipped(
    reason: Reason,
    detail: str,
    transcript: Transcript,
    pairs: Sequence[Pair],
    kept: Mapping[str, tuple[Action, str]],
    stats: PlanStats,
) -> Outcome:
    """A SKIPPED outcome whose plan is ``transcript`` unchanged, each pair with its ``kept`` reason."""
    messages = transcript.messages
    decisions = pair_decisions(messages, pairs, kept, {}, {}, transcript.blocks)
    plan = Plan(messages=messages, decisions=decisions, stats=stats)
    return Outcome(status=Status.SKIPPED, reason=reason, detail=detail, plan=plan)


def below_trigger(
    budget: TokenBudget | None, transcript: Transcript, pairs: Sequence[Pair], stats: PlanStats
) -> Outcome | None:
    """``BELOW_TRIGGER`` when ``budget`` does not fire over ``stats.tokens_before``, else None."""
    if budget is None or budget.fires(stats.tokens_before):
        return None
    kept = {pair.key: (Action.KEEP, BELOW_TRIGGER) for pair in pairs if pair.candidate}
    detail = budget.below_trigger(stats.tokens_before)
    return skipped(Reason.BELOW_TRIGGER, detail, transcript, pairs, kept, stats)


def pair_decisions(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    applied: Mapping[str, tuple[Action, str]],
    chars_after: Mapping[str, int],
    probabilities: Mapping[str, float],
    blocks: BlockSizes | None = None,
) -> tuple[PairDecision, ...]:
    """One `PairDecision` per pair: the action applied (keep with the pair's own reason by default).

    ``blocks`` (`Transcript.blocks`, when ``messages`` is the transcript's) has every block's size,
    so none is encoded again to measure the pairs."""
    decisions = []
    for pair, before in zip(pairs, _pair_sizes(messages, pairs, blocks), strict=True):
        action, reason = applied.get(pair.key, (Action.KEEP, pair.reason))
        decisions.append(
            PairDecision(
                key=pair.key,
                call_id=pair.call_id,
                tool=pair.tool,
                action=action,
                reason=reason,
                keep_call=probabilities.get(f"call_{pair.key}"),
                keep_result=probabilities.get(f"result_{pair.key}"),
                chars_before=before,
                chars_after=chars_after.get(pair.key, before),
            )
        )
    return tuple(decisions)


def _pair_sizes(messages: Sequence[Message], pairs: Sequence[Pair], blocks: BlockSizes | None) -> list[int]:
    """Characters of each pair's call and result blocks as they stand in ``messages``
    (`tracetrim.compactor._rebuild.pair_chars` of each pair, measured in one batch)."""
    if blocks is not None:
        of = blocks.of
        return [
            (of(*pair.call_at) if pair.call_at else 0) + (of(*pair.result_at) if pair.result_at else 0)
            for pair in pairs
        ]
    places = [[at for at in (pair.call_at, pair.result_at) if at] for pair in pairs]
    sizes = iter(canonical_lengths([messages[i]["content"][j] for found in places for i, j in found]))
    return [sum(next(sizes) for _ in found) for found in places]


def _list_overhead(count: int) -> int:
    """Characters of a JSON list's brackets and commas."""
    return 2 + max(count - 1, 0)


def rebuilt_length(before: Sequence[Message], after: Sequence[Message], sizes: Sequence[int]) -> int:
    """``canonical_length(after)``, where ``after`` is a rebuild of ``before`` whose messages are
    ``sizes`` characters long (`Transcript.sizes`).

    A rebuild keeps every message it does not touch as the same object, so only the messages it
    added are measured: the history is not encoded whole again.
    """
    kept = {id(message) for message in after}
    was = {id(message) for message in before}
    inner = sum(size for message, size in zip(before, sizes, strict=True) if id(message) in kept)
    inner += sum(canonical_lengths([message for message in after if id(message) not in was]))
    return inner + _list_overhead(len(after))


def carried_chars(transcript: Transcript) -> int:
    """Characters of the messages that hold no content: the carriers in which a format keeps what its
    file holds besides the conversation (a session's bookkeeping lines, a request's tools), which no
    plan changes and no model is sent as history."""
    return sum(
        size
        for message, size in zip(transcript.messages, transcript.sizes, strict=True)
        if message.get("role") == "system" and not message.get("content")
    )


def with_reduction(stats: PlanStats, carried: int = 0) -> PlanStats:
    """``stats`` with ``reduction`` computed from the characters before and after, less the ``carried``
    characters (`carried_chars`) on both sides: a session file's bookkeeping must not make a plan that
    halves the conversation look like a small saving."""
    before, after = stats.chars_before - carried, stats.chars_after - carried
    reduction = 1 - after / before if before > 0 else 0.0
    return attrs.evolve(stats, reduction=reduction)


def refusal(config: CompactorConfig, stats: PlanStats, calls: int) -> tuple[Reason, str] | None:
    """Why a `Compactor` proposal with ``stats`` is not adopted, as a reason and a detail line, or None
    when it is; ``calls`` is the model calls the history holds (``expected_calls``' default).

    Thresholds: a proposal saving less than ``minimum_reduction`` is ``INSUFFICIENT_REDUCTION``. A
    budget: one short of its target is ``TARGET_NOT_REACHED`` unless ``adopt_partial`` and it saves at
    least ``minimum_reduction`` (one that meets its target needs no minimum). Then, with
    ``cache_prices``, one whose saving would not pay back the cache it rewrites is
    ``CACHE_NOT_PAID_BACK`` (`pays_back`).
    """
    if stats.target_met is False and not (
        config.adopt_partial and stats.reduction >= config.minimum_reduction
    ):
        partial = (
            f"; below minimum_reduction ({config.minimum_reduction:.0%}) it adopts nothing"
            if config.adopt_partial
            else ""
        )
        return Reason.TARGET_NOT_REACHED, (
            f"the proposal reaches {stats.tokens_after:,} tokens, "
            f"{stats.tokens_after - stats.target_tokens:,} over target_tokens "
            f"({stats.target_tokens:,}), within the protections, saving {stats.reduction:.1%}{partial}"
        )
    if stats.target_met is None and stats.reduction < config.minimum_reduction:
        return Reason.INSUFFICIENT_REDUCTION, (
            f"the proposal saves {stats.reduction:.1%}; minimum_reduction is {config.minimum_reduction:.0%}"
        )
    if config.cache_prices is not None:
        read, write = config.cache_prices
        later = calls if config.expected_calls is None else config.expected_calls
        saved = stats.tokens_before - stats.tokens_after
        rewrite = stats.cache_rewrite_tokens
        if not pays_back(saved, rewrite, later, read, write):
            return Reason.CACHE_NOT_PAID_BACK, (
                f"saving {saved:,} tokens at each of {later + 1:,} calls does not pay back rewriting "
                f"{rewrite:,} cached tokens at cache prices read {read:g}x, write {write:g}x"
            )
    return None


def proposal_detail(stats: PlanStats, note: str) -> str:
    """The detail of a `Compactor` proposal: the judge's ``note``, and where a budget's target was not
    met, by how much (an adopted plan short of its target says so)."""
    if stats.target_met is not False:
        return note
    short = (
        f"target_tokens ({stats.target_tokens:,}) not reached: {stats.tokens_before:,} -> "
        f"{stats.tokens_after:,} tokens within the protections"
    )
    return f"{note}; {short}" if note else short


def compacted_history(
    execution: ExecutionOptions, request: CompactionRequest, outcome: Outcome
) -> list[Message] | None:
    """What a strategy's ``compact`` hands the harness: the new history, the original one after a
    failure in ENFORCE mode, or None (OFF and SHADOW) so the host runs its own compaction unchanged."""
    if execution.mode is not Mode.ENFORCE:
        return None
    if outcome.adopted and outcome.plan is not None:
        return outcome.plan.messages
    try:
        return list(request.messages)
    except TypeError:
        return None
