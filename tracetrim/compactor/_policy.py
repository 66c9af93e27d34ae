"""Stage 6: turn the two probabilities of a pair into keep, drop_result or drop_call."""

from __future__ import annotations

from tracetrim.compactor._outcome import Action


def decide(p_call: float, p_result: float, keep: float, discard: float) -> tuple[Action, str]:
    """The action and its reason for one candidate pair.

    The result question goes first: a result that must stay verbatim keeps the pair. Only a result
    confidently not needed (at or below ``discard`` and below ``keep``) is shortened, and only a call
    that is also confidently not needed is dropped. Between two thresholds the pair is kept.
    """
    if p_result >= keep:
        return Action.KEEP, "needed_result"
    if p_result <= discard and p_result < keep:
        if p_call >= keep:
            return Action.DROP_RESULT, "result_not_needed"
        if p_call <= discard and p_call < keep:
            return Action.DROP_CALL, "call_not_needed"
    return Action.KEEP, "uncertain"
