"""The argparse converters the commands share: each refuses what it must, with a message naming the value."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from tracetrim.cli._arg_types import finite_float, non_negative_float, non_negative_int, unit_fraction


@pytest.mark.parametrize(
    ("convert", "text", "expected"),
    [
        (non_negative_float, "0", 0.0),
        (non_negative_float, "2.5", 2.5),
        (finite_float, "-0.3", -0.3),
        (finite_float, "1e3", 1000.0),
        (unit_fraction, "0.9", 0.9),
        (unit_fraction, "1", 1.0),
        (non_negative_int, "7", 7),
    ],
)
def test_accepted_values_convert(convert: Callable[[str], float], text: str, expected: float) -> None:
    assert convert(text) == expected


@pytest.mark.parametrize(
    ("convert", "text", "message"),
    [
        (non_negative_float, "abc", "expected a number, got 'abc'"),
        (non_negative_float, "-1", "must be a finite, non-negative number, got '-1'"),
        (non_negative_float, "nan", "must be a finite, non-negative number, got 'nan'"),
        (non_negative_float, "inf", "must be a finite, non-negative number, got 'inf'"),
        (finite_float, "x1", "expected a number, got 'x1'"),
        (finite_float, "nan", "must be a finite number, got 'nan'"),
        (finite_float, "-inf", "must be a finite number, got '-inf'"),
        (unit_fraction, "1.5", "must be a share from 0 to 1, got '1.5'"),
        (unit_fraction, "inf", "must be a finite number, got 'inf'"),
        (non_negative_int, "1.5", "expected a whole number, got '1.5'"),
        (non_negative_int, "-2", "must not be negative, got -2"),
    ],
)
def test_refused_values_name_themselves(convert: Callable[[str], float], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        convert(text)
    assert str(caught.value) == message
