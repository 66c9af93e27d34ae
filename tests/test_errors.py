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


BUILTIN_ERRORS = frozenset(
    {"TypeError", "ValueError", "RuntimeError", "LookupError", "KeyError", "OSError", "Exception"}
)
PROTOCOL_RAISES = {
    # json.dumps' ``default`` hook must raise TypeError itself; json turns it into its own error
    "formats/_langchain.py": 1,
    # the bundled examples are looked up like a mapping (tracetrim._examples is private)
    "_examples/__init__.py": 1,
}


def _bare_raises() -> dict[str, int]:
    """Per module, the ``raise TypeError(...)``-like statements: builtin errors that are no TracetrimError."""
    import ast
    from pathlib import Path

    root = Path(tracetrim.__file__).parent
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            exc = node.exc if isinstance(node, ast.Raise) else None
            if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id in BUILTIN_ERRORS:
                key = path.relative_to(root).as_posix()
                found[key] = found.get(key, 0) + 1
    return found


def test_the_library_raises_its_own_errors() -> None:
    # A mistake in a setting is a FieldValueError / FieldTypeError: a TracetrimError and still the
    # builtin ValueError / TypeError a caller may catch.
    found = _bare_raises()
    assert {k: found.get(k) for k in PROTOCOL_RAISES} == PROTOCOL_RAISES  # the walk sees raises
    assert {k: v for k, v in found.items() if k not in PROTOCOL_RAISES} == {}  # and nowhere else
    from tracetrim.harness_adapter._window import check_settings

    with pytest.raises(TracetrimError) as raised:
        check_settings("many", None, None)
    assert isinstance(raised.value, TypeError)
