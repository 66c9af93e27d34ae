"""The policy with one and with two thresholds, at and around each boundary."""

from __future__ import annotations

import pytest

from tracetrim import Action
from tracetrim.compactor._policy import decide

KEEP, DROP_RESULT, DROP_CALL = Action.KEEP, Action.DROP_RESULT, Action.DROP_CALL


@pytest.mark.parametrize(
    ("p_call", "p_result", "expected"),
    [
        (0.0, 0.5, (KEEP, "needed_result")),  # result exactly at the threshold keeps
        (0.0, 0.9, (KEEP, "needed_result")),
        (1.0, 1.0, (KEEP, "needed_result")),
        (0.5, 0.49, (DROP_RESULT, "result_not_needed")),  # call exactly at the threshold keeps the call
        (0.9, 0.0, (DROP_RESULT, "result_not_needed")),
        (0.49, 0.49, (DROP_CALL, "call_not_needed")),
        (0.0, 0.0, (DROP_CALL, "call_not_needed")),
        (0.4999999, 0.4999999, (DROP_CALL, "call_not_needed")),
    ],
)
def test_one_threshold(p_call: float, p_result: float, expected: tuple[Action, str]) -> None:
    assert decide(p_call, p_result, 0.5, 0.5) == expected


@pytest.mark.parametrize(
    ("p_call", "p_result", "expected"),
    [
        (0.0, 0.7, (KEEP, "needed_result")),
        (0.0, 0.69, (KEEP, "uncertain")),  # result in the band
        (0.0, 0.31, (KEEP, "uncertain")),
        (0.7, 0.3, (DROP_RESULT, "result_not_needed")),  # result at discard, call at keep
        (0.69, 0.3, (KEEP, "uncertain")),  # call in the band
        (0.31, 0.3, (KEEP, "uncertain")),
        (0.3, 0.3, (DROP_CALL, "call_not_needed")),  # both at discard
        (0.0, 0.0, (DROP_CALL, "call_not_needed")),
        (1.0, 0.0, (DROP_RESULT, "result_not_needed")),
    ],
)
def test_two_thresholds(p_call: float, p_result: float, expected: tuple[Action, str]) -> None:
    assert decide(p_call, p_result, 0.7, 0.3) == expected


def test_equal_thresholds_at_zero_and_one() -> None:
    assert decide(0.0, 0.0, 0.0, 0.0) == (KEEP, "needed_result")  # everything is >= 0
    assert decide(0.99, 0.99, 1.0, 1.0) == (DROP_CALL, "call_not_needed")
    assert decide(1.0, 0.99, 1.0, 1.0) == (DROP_RESULT, "result_not_needed")
