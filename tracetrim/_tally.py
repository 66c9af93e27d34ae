"""Small arithmetic over counts that the learning and replay figures share: shares and summed mappings."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Protocol, Self, TypeVar


class Summable(Protocol):
    """A value that adds to another of its kind (an int, a `tracetrim.learn.Count`)."""

    def __add__(self, other: Self, /) -> Self: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Summable)


def share(part: float, whole: float, empty: float = 0.0) -> float:
    """``part / whole``, or ``empty`` when ``whole`` is 0 (what a share of nothing is taken to be)."""
    return part / whole if whole else empty


def summed(mappings: Iterable[Mapping[K, V]], zero: V) -> dict[K, V]:
    """The mappings added key by key (a key one lacks counts as ``zero``), keys in the order first met."""
    out: dict[K, V] = {}
    for mapping in mappings:
        for key, value in mapping.items():
            out[key] = out.get(key, zero) + value
    return out
