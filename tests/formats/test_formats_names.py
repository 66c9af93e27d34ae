"""Where an agent's file has a name (a ``type``, ``role``, ``subtype``, ``kind``: any short string), a
hostile file may have a list or an object instead; ``tracetrim compact`` reads it as no name or refuses
the file naming the place, never a traceback (a list cannot be looked up in a table of names).

Deterministic where `test_formats_mutated.py` samples: every key of every seed (the agents' own files and
each format's written histories), at its first and last place, a list and an object by turns."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests._format_mutations import Seed, _at, _paths, check, seeds

NAME_CHARS = 40
"""A string this short is a name, an id or a flag rather than content."""
OPTIONS = ("--mode", "enforce", "--emit", "history", "--preserve-recent", "0",
           "--keep-threshold", "0.999", "--discard-threshold", "0.2")  # fmt: skip


def _name_places(value: Any) -> list[tuple[Any, ...]]:
    """The first and last place of each key that holds a short string somewhere in ``value``."""
    places: dict[str, list[tuple[Any, ...]]] = {}
    for path in _paths(value):
        if path and isinstance(path[-1], str):
            held = _at(value, path)
            if isinstance(held, str) and len(held) < NAME_CHARS:
                places.setdefault(path[-1], []).append(path)
    return sorted({p for found in places.values() for p in (found[0], found[-1])}, key=repr)


def _replaced(seed: Seed, path: tuple[Any, ...], by: Any) -> str:
    value = seed.value()
    _at(value, path[:-1])[path[-1]] = by
    return seed.dumped(value)


@pytest.mark.parametrize("seed", seeds(), ids=[seed.name for seed in seeds()])
def test_a_list_or_an_object_where_a_name_stands_is_read_as_no_name_or_refused(seed: Seed) -> None:
    for n, path in enumerate(_name_places(seed.value())):
        by: Any = [path[-1]] if n % 2 else {"name": path[-1]}
        with tempfile.TemporaryDirectory() as tmp:
            assert check(Path(tmp), seed, _replaced(seed, path, by), OPTIONS) is None, (seed.name, path)
