"""Public names live at their public home (``tracetrim.Compactor``), and still structure, hint and pickle."""

from __future__ import annotations

import importlib
import pickle
import typing
from typing import Any

import attrs
import pytest
from cattrs.preconf.json import make_converter

import tracetrim as tt
from tracetrim._public import origin_of
from tracetrim.archive import ArchiveNotFoundError, FileArchive
from tracetrim.decision import DecisionModelError

PACKAGES = (
    "tracetrim",
    "tracetrim.archive",
    "tracetrim.cli",
    "tracetrim.compactor",
    "tracetrim.decision",
    "tracetrim.formats",
    "tracetrim.harness_adapter",
    "tracetrim.learn",
    "tracetrim.service",
)


def _exported(package: str) -> list[tuple[str, Any]]:
    module = importlib.import_module(package)
    found = []
    for name in module.__all__:
        try:
            found.append((name, getattr(module, name)))
        except ImportError:  # an adapter whose framework is not installed here
            continue
    return found


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_no_internals(package: str) -> None:
    names = importlib.import_module(package).__all__
    assert [name for name in names if name.startswith("_") and name != "__version__"] == []
    assert len(names) == len(set(names))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_class_and_function_shows_a_public_home(package: str) -> None:
    for name, value in _exported(package):
        module = getattr(value, "__module__", None)
        if not callable(value) or not isinstance(module, str):
            continue
        assert not _private(module), f"{package}.{name} shows {module}"
        # the home really holds it under that name: what pickle and the docs rely on
        assert getattr(importlib.import_module(module), value.__qualname__) is value


def test_the_home_is_the_shortest_public_package() -> None:
    assert repr(tt.Compactor) == "<class 'tracetrim.Compactor'>"
    assert tt.compactor.Compactor is tt.Compactor
    assert tt.Status.__module__ == tt.Scope.__module__ == tt.SnapshotError.__module__ == "tracetrim"
    assert FileArchive.__module__ == "tracetrim.archive"
    assert DecisionModelError.__module__ == "tracetrim.decision"
    assert origin_of(tt.Compactor) == "tracetrim.compactor._compactor"


def _attrs_classes() -> list[type]:
    found: dict[type, None] = {}
    for package in PACKAGES:
        for _, value in _exported(package):
            if isinstance(value, type) and attrs.has(value):
                found[value] = None
    return list(found)


@pytest.mark.parametrize("cls", _attrs_classes(), ids=lambda cls: cls.__qualname__)
def test_annotations_of_moved_classes_still_resolve(cls: type) -> None:
    hints = typing.get_type_hints(cls)
    assert set(hints) >= {field.name for field in attrs.fields(cls) if field.init}
    attrs.resolve_types(cls)
    assert not any(isinstance(field.type, str) for field in attrs.fields(cls))


def test_a_fresh_converter_round_trips_moved_classes() -> None:
    converter = make_converter()  # builds its structuring code now, after the homes moved
    stats = tt.PlanStats(messages_before=3, messages_after=2, chars_before=10, chars_after=5)
    for value in (tt.Scope("u", "a", "s"), stats):
        text = converter.dumps(value)
        assert converter.loads(text, type(value)) == value


def test_values_and_errors_pickle_through_their_public_home() -> None:
    stats = tt.PlanStats(messages_before=3, messages_after=2, chars_before=10, chars_after=5)
    for value in (tt.Status.DECIDED, tt.Scope("u", "a", "s"), stats, tt.Mode.SHADOW):
        assert pickle.loads(pickle.dumps(value)) == value
    for error in (ArchiveNotFoundError("no snapshot x"), tt.SnapshotError("bad"), tt.TracetrimError("t")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
    assert b"tracetrim.archive" in pickle.dumps(ArchiveNotFoundError("x"))
