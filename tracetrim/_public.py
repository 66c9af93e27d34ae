"""Giving re-exported classes and functions their public home as ``__module__``, the way httpx does.

``tracetrim.Compactor`` then reads as that in reprs, tracebacks, docs and pickles, not as the private
module it is defined in. A name's home is the shortest public package that re-exports it (ties go to
the package it is defined under): each package calls `publish` at the end of its ``__init__``, and a
later, shorter home (the top-level package finishes importing last) replaces an earlier one.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs

# Where each published object was defined, before its __module__ was changed.
_ORIGINS: dict[object, str] = {}


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _rank(home: str, origin: str) -> tuple[int, int]:
    """Smaller is better: fewer dotted parts, then a home the object's own module lies under."""
    return home.count("."), 0 if origin == home or origin.startswith(home + ".") else 1


def _globals_of(cls: type, home: Mapping[str, Any]) -> dict[str, Any]:
    """The names every class in ``cls``'s MRO was defined among (its own module's winning), then
    those of the package publishing it (for names a module imports only for type checking)."""
    names: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        origin = _ORIGINS.get(base, base.__module__)
        module = sys.modules.get(origin)
        if module is not None:
            names.update(vars(module))
    for name, value in home.items():
        names.setdefault(name, value)
    return names


def _resolve(cls: type, home: Mapping[str, Any]) -> bool:
    """Resolve a class's string annotations while the modules that wrote them are known.

    With ``from __future__ import annotations`` every annotation is a string that
    ``typing.get_type_hints``, attrs and cattrs evaluate in ``sys.modules[cls.__module__]``; a public
    home lacks most of those names. So the class's own annotations are replaced by what they name
    (and an attrs class's field types with them), evaluated where they were written. False when that
    cannot be done: the class then keeps its private module rather than break structuring.
    """
    own = inspect.get_annotations(cls)
    try:
        hints = typing.get_type_hints(cls, globalns=_globals_of(cls, home), include_extras=True)
        cls.__annotations__ = {name: hints[name] for name in own}
        if attrs.has(cls):
            attrs.resolve_types(cls)
    except Exception:  # a name that cannot be found: leave the class where it is
        return False
    return not (attrs.has(cls) and any(isinstance(field.type, str) for field in attrs.fields(cls)))


def publish(home: str, namespace: Mapping[str, Any]) -> None:
    """Set ``__module__`` to ``home`` for each class and function in ``namespace["__all__"]`` defined
    under a private module, unless it already has a home at least as good (see the module docstring).

    Names not (yet) in ``namespace``, such as lazily imported ones, are skipped, as are objects whose
    name differs from the one they are exported as (pickling finds an object by its own name).
    """
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if not isinstance(obj, (type, types.FunctionType)) or obj.__name__ != name:
            continue
        current = obj.__module__
        if not current.startswith("tracetrim"):
            continue
        origin = _ORIGINS.get(obj, current)
        if not _private(origin) or obj.__qualname__ != name:
            continue  # defined in a public module already, or nested in a class
        if not _private(current) and _rank(current, origin) <= _rank(home, origin):
            continue
        if isinstance(obj, type) and not _resolve(obj, namespace):
            continue
        _ORIGINS[obj] = origin
        obj.__module__ = home


def origin_of(obj: object) -> str:
    """The module ``obj`` was defined in, whatever `publish` made its ``__module__``."""
    return _ORIGINS.get(obj, getattr(obj, "__module__", ""))
