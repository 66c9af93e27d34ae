"""Stage 6, with a token budget: which pairs to shorten or drop to get a history down to a target size.

Hosts think in tokens, not thresholds: compact once the history passes ``trigger_tokens``, down to
``target_tokens``. Each candidate offers up to two steps, shortening its result and then dropping the
pair; a step's price is its expected loss (the probability that what it removes is needed) per token
it saves. The cheapest steps go first, oldest first among equals, until the target is met; nothing
dearer is touched while a cheaper step is left. Because the target sits below the trigger, the next
turns do not fire again until the history has grown back past the trigger.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import attrs

from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, token_counts
from tracetrim.compactor._outcome import Action


def rebuilt_tokens(
    before: Sequence[Message], after: Sequence[Message], tokens: Sequence[int], count: TokenCounter
) -> list[int]:
    """`token_counts` of ``after``, a rebuild of ``before`` whose messages hold ``tokens`` each: the
    messages the rebuild kept (the same objects) are not counted again."""
    known = {id(message): n for message, n in zip(before, tokens, strict=True)}
    return [known[id(m)] if id(m) in known else token_counts([m], count)[0] for m in after]


def rewrite_tokens(before: Sequence[Message], after: Sequence[Message], tokens: Sequence[int]) -> int:
    """Of ``after`` (``tokens`` per message), the tokens from its first message that is not
    ``before``'s to the end: the part of a prompt cache that adopting ``after`` invalidates (0 when
    nothing changed). A rebuild keeps each untouched message as the same object, so the first change
    is found by identity."""
    for at, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is not new:
            return sum(tokens[at:])
    return sum(tokens[len(before) :])


def cache_boundary(tokens: Sequence[int], cap: int | None) -> int:
    """The first message index a plan may change so that at most ``cap`` tokens of cache are rewritten,
    given the history's ``tokens`` per message.

    Shortening and dropping only make the messages after a change smaller, so counting the original's
    tokens from the boundary to the end bounds what the change invalidates. 0 (anything goes) without a
    cap.
    """
    if cap is None:
        return 0
    total = 0
    for at in range(len(tokens) - 1, -1, -1):
        total += tokens[at]
        if total > cap:
            return at + 1
    return 0


def pays_back(saved: int, rewrite: int, later_calls: int, read: float, write: float) -> bool:
    """Whether a compaction saving ``saved`` tokens and rewriting ``rewrite`` tokens of prompt cache
    costs less than it saves over the call it is made for and ``later_calls`` more, at cache prices
    ``read`` and ``write`` (ratios of the plain input price).

    The call it is made for writes the ``rewrite`` tokens instead of reading them, which costs
    ``(write - read) * rewrite`` more, and every call from it on reads ``saved`` fewer tokens, ``read *
    saved`` less each: it pays back when ``(later_calls + 1) * read * saved > (write - read) * rewrite``.
    Without a write premium (``write <= read``) any saving pays back.
    """
    return (later_calls + 1) * read * saved > (write - read) * rewrite


def model_calls(messages: Sequence[Message]) -> int:
    """The model calls a history holds: assistant messages that say or call something (one of tool
    results only, as text-protocol readers write a command's output, is no call)."""
    return sum(
        1
        for message in messages
        if message["role"] == "assistant" and any(b.get("type") != "tool_result" for b in message["content"])
    )


@attrs.frozen(kw_only=True)
class PairCost:
    """What the budget knows of one candidate: its two probabilities and its token sizes.

    ``shortened`` is the result's size once shortened, or None where no shortening is short enough
    (the pair can then only be dropped whole). ``order`` ranks pairs by age (smaller is older).
    """

    key: str
    order: int
    keep_call: float
    keep_result: float
    call_tokens: int
    result_tokens: int
    shortened: int | None
    tombstone: int = 0
    """Tokens of what a drop leaves behind: the tombstone (0 without one), or the stub result of a call in
    the assistant's prose (whose ``call_tokens`` are then 0: the call stays)."""


@attrs.frozen(kw_only=True)
class BudgetPlan:
    """The chosen actions, the estimated tokens afterwards, and whether they are within the target."""

    actions: dict[str, tuple[Action, str]]
    tokens_after: int
    met: bool


SHORTEN_REASON = "budget_shorten"
DROP_REASON = "budget_drop"
CONFIDENT_REASON = "confidently_not_needed"
KEPT_REASON = "within_budget"


def plan_budget(
    costs: Sequence[PairCost], *, tokens: int, target: int, drop_confident: float | None = None
) -> BudgetPlan:
    """The least expected loss that brings ``tokens`` to ``target`` or below.

    A shortening costs the probability that the result was needed verbatim; the later drop of a
    shortened pair costs the probability that the call itself still matters (a pair that cannot be
    shortened costs both when dropped). Steps are taken by cost per token saved, oldest first among
    equals, a pair's drop only after its shortening. With ``drop_confident``, pairs whose two
    probabilities are both at or below it are dropped even once the target is met.
    """
    by_key = {cost.key: cost for cost in costs}
    heap: list[tuple[float, int, str, Action]] = []
    for cost in costs:
        heapq.heappush(heap, _first_step(cost))
    actions: dict[str, tuple[Action, str]] = {}
    remaining = tokens
    while heap and remaining > target:
        _, _, key, action = heapq.heappop(heap)
        cost = by_key[key]
        if action is Action.DROP_RESULT:
            assert cost.shortened is not None
            remaining -= cost.result_tokens - cost.shortened
            actions[key] = (Action.DROP_RESULT, SHORTEN_REASON)
            heapq.heappush(heap, _drop_after_shortening(cost))
        else:
            was = cost.shortened if actions.get(key, (Action.KEEP, ""))[0] is Action.DROP_RESULT else None
            remaining -= cost.call_tokens + (cost.result_tokens if was is None else was) - cost.tombstone
            actions[key] = (Action.DROP_CALL, DROP_REASON)
    met = remaining <= target
    if drop_confident is not None:
        for cost in costs:
            if actions.get(key := cost.key, (Action.KEEP, ""))[0] is Action.DROP_CALL:
                continue
            if max(cost.keep_call, cost.keep_result) <= drop_confident:
                shortened = actions.get(key, (Action.KEEP, ""))[0] is Action.DROP_RESULT
                remaining -= (
                    cost.call_tokens
                    + (cost.shortened if shortened and cost.shortened is not None else cost.result_tokens)
                    - cost.tombstone
                )
                actions[key] = (Action.DROP_CALL, CONFIDENT_REASON)
    for cost in costs:
        actions.setdefault(cost.key, (Action.KEEP, KEPT_REASON))
    return BudgetPlan(actions=actions, tokens_after=remaining, met=met or remaining <= target)


def _price(loss: float, saves: int) -> float:
    return loss / saves if saves > 0 else float("inf")


def _first_step(cost: PairCost) -> tuple[float, int, str, Action]:
    if cost.shortened is not None and cost.shortened < cost.result_tokens:
        price = _price(cost.keep_result, cost.result_tokens - cost.shortened)
        return price, cost.order, cost.key, Action.DROP_RESULT
    saves = cost.call_tokens + cost.result_tokens - cost.tombstone
    return _price(cost.keep_result + cost.keep_call, saves), cost.order, cost.key, Action.DROP_CALL


def _drop_after_shortening(cost: PairCost) -> tuple[float, int, str, Action]:
    assert cost.shortened is not None
    saves = cost.call_tokens + cost.shortened - cost.tombstone
    return _price(cost.keep_call, saves), cost.order, cost.key, Action.DROP_CALL
