"""One exception root: every error tracetrim defines or exports derives from `tracetrim.TracetrimError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import tracetrim
from tracetrim import TracetrimError
from tracetrim._snapshot import SnapshotError
from tracetrim.archive import ArchiveNotFoundError, InvalidReferenceError
from tracetrim.decision import DecisionModelError

# Internal control flow, never raised out of the library; it must not be caught as an error.
_CONTROL_FLOW = frozenset({"tracetrim._json._NotPlain", "tracetrim._json._TooDeep"})


def _modules() -> list[ModuleType]:
    modules = [tracetrim]
    for info in pkgutil.walk_packages(tracetrim.__path__, "tracetrim."):
        if info.name.endswith(".__main__"):  # importing it runs the CLI
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:  # an optional extra that is not installed
            if (exc.name or "").startswith("tracetrim"):
                raise
    return modules


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in _modules():
        exported = set(getattr(module, "__all__", ()))
        for name, value in vars(module).items():
            if not (inspect.isclass(value) and issubclass(value, BaseException)):
                continue
            if value.__module__.startswith("tracetrim") or name in exported:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_library_exception_derives_from_the_root() -> None:
    classes = _exception_classes()
    assert len(classes) >= 15  # the walk did find the library's errors
    strays = [name for name, cls in classes.items() if not issubclass(cls, TracetrimError)]
    assert sorted(set(strays) - _CONTROL_FLOW) == []


def test_the_root_is_exported_and_builtin_mixins_are_kept() -> None:
    assert "TracetrimError" in tracetrim.__all__ and tracetrim.TracetrimError is TracetrimError
    assert issubclass(SnapshotError, ValueError) and issubclass(InvalidReferenceError, ValueError)
    assert issubclass(ArchiveNotFoundError, LookupError)
    assert issubclass(DecisionModelError, RuntimeError)


def test_one_except_clause_catches_any_library_error() -> None:
    with pytest.raises(TracetrimError):
        tracetrim.validate_messages([{"role": "nobody", "content": []}])
