"""Stage 6 as the planner runs it: the action for every candidate, by thresholds or by a token budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from tracetrim._marker import keeps_its_place, removed_note, tombstone_block
from tracetrim._render import block_text
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter
from tracetrim.compactor._budget import PairCost, cache_boundary, plan_budget
from tracetrim.compactor._config import CompactorConfig
from tracetrim.compactor._excerpt import salience
from tracetrim.compactor._outcome import Action
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._policy import decide
from tracetrim.compactor._rebuild import Shortening, rebuild
from tracetrim.compactor._repeats import REPEATED, repeated_results
from tracetrim.decision._census import TermCensus

CACHE_CAP = "cache_cap"
"""Why a candidate before the `cache_boundary` is kept: changing it would rewrite more cached tokens
than ``max_cache_rewrite_tokens`` allows."""


@attrs.frozen
class Chosen:
    """Every candidate's action and reason, how the rebuild shortens results, and which shortened
    results point to a later copy (pair key -> that copy's call id)."""

    actions: dict[str, tuple[Action, str]]
    shortening: Shortening
    pointers: dict[str, str] = attrs.field(factory=dict)


def choose_actions(
    messages: list[Message],
    pairs: Sequence[Pair],
    candidates: Sequence[Pair],
    probabilities: Mapping[str, float],
    *,
    config: CompactorConfig,
    ref: str,
    tokens: Sequence[int],
    count: TokenCounter,
    census: TermCensus | None = None,
) -> Chosen:
    """The thresholds' action for each candidate or, with a token budget, the cheapest way to the target
    (`plan_budget`); candidates before the cache cap's boundary are kept either way. ``tokens`` holds
    each message's tokens (`token_counts`); ``census``, the judge's census of ``messages`` if it made
    one, spares the excerpts a pass over the history (`salience`)."""
    boundary = cache_boundary(tokens, config.max_cache_rewrite_tokens)
    changeable = [pair for pair in candidates if _first_message(pair) >= boundary]
    actions = {p.key: (Action.KEEP, CACHE_CAP) for p in candidates if _first_message(p) < boundary}
    shortening = Shortening(config.truncate_head_chars, config.truncate_tail_chars)
    if config.trigger_tokens is not None and config.target_tokens is not None:
        if config.excerpt_chars:
            shortening = _with_excerpts(shortening, config, messages, census)
        costs = pair_costs(
            messages, pairs, changeable, probabilities, ref, shortening, count, tombstones=config.tombstones
        )
        budget = plan_budget(
            costs, tokens=sum(tokens), target=config.target_tokens, drop_confident=config.drop_confident
        )
        return _with_pointers(Chosen({**actions, **budget.actions}, shortening), pairs, changeable, config)
    for pair in changeable:
        actions[pair.key] = decide(
            probabilities[f"call_{pair.key}"],
            probabilities[f"result_{pair.key}"],
            config.keep_threshold,
            config.discard,
        )
    if config.excerpt_chars and any(action is Action.DROP_RESULT for action, _ in actions.values()):
        shortening = _with_excerpts(shortening, config, messages, census)
    return _with_pointers(Chosen(actions, shortening), pairs, changeable, config)


def _with_pointers(
    chosen: Chosen, pairs: Sequence[Pair], changeable: Sequence[Pair], config: CompactorConfig
) -> Chosen:
    """``chosen`` with every changeable result that a later whole result repeats made a pointer to it:
    nothing is lost, so it goes whatever the thresholds or the budget said (``deduplicate``)."""
    if not config.deduplicate:
        return chosen
    found = repeated_results(pairs, chosen.actions, {pair.key for pair in changeable})
    if not found:
        return chosen
    actions = {**chosen.actions, **{key: (Action.DROP_RESULT, REPEATED) for key in found}}
    pointers = {key: later.call_id for key, later in found.items()}
    return attrs.evolve(chosen, actions=actions, pointers=pointers)


def _with_excerpts(
    shortening: Shortening, config: CompactorConfig, messages: list[Message], census: TermCensus | None
) -> Shortening:
    # The salience index costs a pass over the history: built only when something is shortened.
    return attrs.evolve(shortening, budget=config.excerpt_chars, index=salience(messages, census))


def _first_message(pair: Pair) -> int:
    return min(at[0] for at in (pair.call_at, pair.result_at) if at is not None)


def pair_costs(
    messages: list[Message],
    pairs: Sequence[Pair],
    candidates: Sequence[Pair],
    probabilities: Mapping[str, float],
    ref: str,
    shortening: Shortening,
    count: TokenCounter,
    *,
    tombstones: bool,
) -> list[PairCost]:
    """What each candidate weighs for the budget: its sizes whole, shortened and dropped (the excerpts
    are made once here, by a trial rebuild that shortens every candidate)."""
    trial = rebuild(
        messages,
        pairs,
        {pair.key: (Action.DROP_RESULT, "") for pair in candidates},
        archive_ref=ref,
        shortening=shortening,
    )
    costs = []
    for order, pair in enumerate(candidates):
        assert pair.call_at is not None and pair.result_at is not None
        (ci, cj), (ri, rj) = pair.call_at, pair.result_at
        shortened = None
        if trial.applied[pair.key][0] is Action.DROP_RESULT:
            shortened = count(block_text(trial.messages[ri]["content"][rj]))
        call_tokens = count(block_text(messages[ci]["content"][cj]))
        if keeps_its_place(messages[ci]["content"][cj]):
            # a drop keeps the call where it stands and leaves a stub result
            left = count(removed_note(pair.tool, pair.call_id, pair.result_chars))
            call_tokens = 0
        elif tombstones:
            left = count(block_text(tombstone_block(pair.tool, pair.call_id, pair.input, ref)))
        else:
            left = 0
        costs.append(
            PairCost(
                key=pair.key,
                order=order,
                keep_call=probabilities[f"call_{pair.key}"],
                keep_result=probabilities[f"result_{pair.key}"],
                call_tokens=call_tokens,
                result_tokens=count(block_text(messages[ri]["content"][rj])),
                shortened=shortened,
                tombstone=left,
            )
        )
    return costs
