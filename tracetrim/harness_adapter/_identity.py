"""Handing the host back its own objects wherever the compacted history did not change them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def reuse_originals(original: Sequence[Any], new: Sequence[T]) -> list[Any]:
    """``new`` with each item equal to a not-yet-used original replaced by that very object, in order.

    Frameworks track what they already sent or stored by identity, so unchanged items must stay theirs.
    """
    out: list[Any] = []
    cursor = 0
    for item in new:
        at = next((j for j in range(cursor, len(original)) if original[j] == item), None)
        if at is None:
            out.append(item)
        else:
            out.append(original[at])
            cursor = at + 1
    return out
