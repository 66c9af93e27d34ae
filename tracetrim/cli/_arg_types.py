"""The argparse ``type=`` converters every command uses: whole numbers, finite numbers, shares, ports."""

from __future__ import annotations

import argparse
import math


def non_negative_int(text: str) -> int:
    """A whole number >= 0, or an `argparse.ArgumentTypeError` argparse shows as a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1, or an `argparse.ArgumentTypeError`."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be positive, got 0")
    return value


def port(text: str) -> int:
    """A TCP port, 1 to 65535, or an `argparse.ArgumentTypeError`."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, got {value}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (``nan`` and ``inf`` refused), or an `argparse.ArgumentTypeError`."""
    value = _number(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite, non-negative number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0, or an `argparse.ArgumentTypeError`."""
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """A finite number (``nan`` and ``inf`` refused), or an `argparse.ArgumentTypeError`."""
    value = _number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def unit_fraction(text: str) -> float:
    """A number from 0 to 1 (a share), or an `argparse.ArgumentTypeError`."""
    value = finite_float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share from 0 to 1, got {text!r}")
    return value
