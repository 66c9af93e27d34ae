"""Structuring JSON input (service bodies, request files, options) strictly, errors naming the path.

`input_converter` is the shared `tracetrim._convert.converter` made strict: no unknown keys, no
coercion (``"0.5"`` is not a number, ``true`` is not 1, ``"ab"`` is not a list of names), and every
attrs class checked to be given a JSON object. `structure_input` turns cattrs' detailed validation
errors into one `InputError` whose problems carry the path of the value at fault
(``options.keep_threshold``, ``scope.user_id``, ``eligible_tool_names[1]``).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from typing import Any, Literal, NewType, TypeVar

import attrs
from cattrs import transform_error
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, override

from tracetrim._convert import converter
from tracetrim._errors import TracetrimError
from tracetrim._validators import FieldTypeError, FieldValueError, describe, is_count, is_number

T = TypeVar("T")

NonEmptyStr = NewType("NonEmptyStr", str)
"""A string with at least one character (a tool name, an id): structured strictly."""

input_converter = converter.copy(forbid_extra_keys=True)
"""The shared converter, strict for input; attrs classes registered with `register_object`."""


@attrs.frozen
class InputProblem:
    """One thing wrong with an input: where (``options.keep_threshold``; "" for the whole document),
    a stable code (``invalid_field``, ``missing_field``, ``unknown_field``) and what is wrong."""

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        # an unknown key's message names the key and where it is already
        shown = self.path and self.code != "unknown_field"
        return f"{self.path}: {self.message}" if shown else self.message


class InputError(TracetrimError, ValueError):
    """An input that does not have the shape it must; ``problems`` lists each fault with its path.

    ``field`` and ``code`` are the first problem's, for callers that answer with one field.
    """

    def __init__(self, problems: Iterable[InputProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems) or "invalid input")

    @property
    def field(self) -> str:
        """The path of the first problem ("" for the whole document)."""
        return self.problems[0].path if self.problems else ""

    @property
    def code(self) -> str:
        """The code of the first problem."""
        return self.problems[0].code if self.problems else "invalid_field"


@attrs.frozen
class _Keys:
    noun: str
    known: frozenset[str]


_KEYS: dict[type, _Keys] = {}


def known_keys(cl: type[Any]) -> frozenset[str]:
    """The keys a class accepts as input (its fields, or what `register_object` was told)."""
    return _KEYS[cl].known if cl in _KEYS else frozenset(a.name for a in attrs.fields(cl))


def expect_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object; a `FieldTypeError` saying what it is otherwise."""
    if not isinstance(value, dict):
        raise FieldTypeError(f"expected a JSON object, got {describe(value)}")
    return value


def _object_hook(cl: type[Any], omit: frozenset[str]) -> Callable[[Any, Any], Any]:
    generated = make_dict_structure_fn(
        cl,
        input_converter,
        _cattrs_forbid_extra_keys=True,
        **{name: override(omit=True) for name in omit},  # type: ignore[arg-type]
    )

    def structure(value: Any, _: Any) -> Any:
        return generated(expect_object(value), cl)

    return structure


def register_object(
    cl: type[Any],
    *,
    omit: Iterable[str] = (),
    noun: str = "field",
    known: Iterable[str] | None = None,
    hook: Callable[[Any, Any], Any] | None = None,
) -> None:
    """Structure ``cl`` from a JSON object: its fields but ``omit``, unknown keys refused.

    ``noun`` and ``known`` word the unknown-key error (``unknown option(s) x; known: ...``);
    ``hook`` replaces the generated structuring (it must refuse unknown keys itself).
    """
    skipped = frozenset(omit)
    names = frozenset(known) if known is not None else frozenset(a.name for a in attrs.fields(cl)) - skipped
    _KEYS[cl] = _Keys(noun, names)
    input_converter.register_structure_hook(cl, hook or _object_hook(cl, skipped))


def _string(value: Any, _: Any) -> str:
    if not isinstance(value, str):
        raise FieldTypeError(f"expected a string, got {describe(value)}")
    return value


def _non_empty(value: Any, _: Any) -> str:
    if not isinstance(value, str) or not value:
        raise FieldTypeError(f"expected a non-empty string, got {describe(value)}")
    return value


def _boolean(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise FieldTypeError(f"expected true or false, got {describe(value)}")
    return value


def _integer(value: Any, _: Any) -> int:
    if not is_count(value):
        shown = f"{describe(value)} ({value!r})" if isinstance(value, (int, float, str)) else describe(value)
        raise FieldTypeError(f"expected a whole number, got {shown}")
    return int(value)


def _number(value: Any, _: Any) -> float:
    if not is_number(value):
        shown = f"{describe(value)} ({value!r})" if isinstance(value, (int, float, str)) else describe(value)
        raise FieldTypeError(f"expected a finite number, got {shown}")
    return value  # an int stays an int, as the caller wrote it


def _is_literal(t: Any) -> bool:
    return typing.get_origin(t) is Literal


def _literal(value: Any, t: Any) -> Any:
    choices = typing.get_args(t)
    if value not in choices or isinstance(value, bool) != any(isinstance(c, bool) for c in choices):
        shown = [repr(c) for c in choices]
        listed = f"{', '.join(shown[:-1])} or {shown[-1]}" if len(shown) > 1 else shown[0]
        raise FieldValueError(f"expected {listed}, got {value!r}")
    return value


def _is_sequence(t: Any) -> bool:
    origin = typing.get_origin(t)
    if origin is list:
        return True
    args = typing.get_args(t)
    return origin is tuple and len(args) == 2 and args[1] is Ellipsis


def _items(value: Any, t: Any, element: Any) -> list[Any]:
    errors: list[Exception] = []
    out: list[Any] = []
    for index, item in enumerate(value):
        try:
            out.append(input_converter.structure(item, element))
        except Exception as exc:  # each item's fault is reported with its index, as cattrs does
            exc.__notes__ = [
                *getattr(exc, "__notes__", []),
                IterableValidationNote(f"Structuring {t} @ index {index}", index, element),
            ]
            errors.append(exc)
    if errors:
        raise IterableValidationError(f"While structuring {t!r}", errors, t)
    return out


def _sequence(value: Any, t: Any) -> Any:
    if not isinstance(value, list):
        raise FieldTypeError(f"expected an array, got {describe(value)}")
    element = typing.get_args(t)[0] if typing.get_args(t) else Any
    if element is Any:
        # raw JSON (a messages array) is passed on as sent: the same list, not a copy
        return value if typing.get_origin(t) is list else tuple(value)
    items = _items(value, t, element)
    return items if typing.get_origin(t) is list else tuple(items)


def _names(value: Any, t: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise FieldTypeError("expected an array of names, got a single string")
    if not isinstance(value, list):
        raise FieldTypeError(f"expected an array of names, got {describe(value)}")
    return frozenset(_items(value, t, NonEmptyStr))


input_converter.register_structure_hook(str, _string)
input_converter.register_structure_hook(NonEmptyStr, _non_empty)
input_converter.register_structure_hook(bool, _boolean)
input_converter.register_structure_hook(int, _integer)
input_converter.register_structure_hook(float, _number)
input_converter.register_structure_hook_func(lambda t: t == frozenset[str], _names)
input_converter.register_structure_hook_func(_is_literal, _literal)
input_converter.register_structure_hook_func(_is_sequence, _sequence)
input_converter.register_structure_hook_factory(attrs.has, lambda cl: _object_hook(cl, frozenset()))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _required(t: Any) -> str:
    if isinstance(t, type) and attrs.has(t):
        return f"is required: an object with {', '.join(sorted(known_keys(t)))}"
    if _is_sequence(t):
        return "is required: an array"
    return "is required"


def _problem(exc: BaseException, t: Any, path: str) -> InputProblem:
    if isinstance(exc, ForbiddenExtraKeysError):
        extra = sorted(exc.extra_fields)
        where = f" in {path}" if path else ""
        message = (
            f"unknown {_KEYS[exc.cl].noun if exc.cl in _KEYS else 'field'}(s) {', '.join(extra)}{where}; "
            f"known: {', '.join(sorted(known_keys(exc.cl)))}"
        )
        return InputProblem(_join(path, extra[0]), "unknown_field", message)
    if isinstance(exc, KeyError):  # a required field the document does not have
        return InputProblem(path, "missing_field", _required(t))
    if isinstance(exc, FieldValueError):
        return InputProblem(_join(path, exc.field) if exc.field else path, "invalid_field", exc.reason)
    return InputProblem(path, "invalid_field", str(exc))


def problems_of(exc: BaseException, path: str = "") -> list[InputProblem]:
    """The problems in a structuring error, each with its path below ``path``, in document order."""
    seen: list[tuple[BaseException, Any]] = []

    def remember(error: BaseException, t: Any) -> str:
        seen.append((error, t))
        return ""

    lines = transform_error(exc, path="$", format_exception=remember)
    out: list[InputProblem] = []
    for (error, t), line in zip(seen, lines, strict=True):
        found = line.rsplit(" @ $", 1)[-1].lstrip(".")
        out.append(_problem(error, t, _join(path, found) if found else path))
    return out


def structure_input(data: Any, cl: type[T], *, path: str = "") -> T:
    """``data`` (parsed JSON) as ``cl`` through `input_converter`; `InputError` naming each fault.

    ``path`` is where ``data`` sits in a larger document (``options``), put in front of every path.
    """
    try:
        return input_converter.structure(data, cl)
    except (BaseValidationError, TracetrimError, TypeError, ValueError, KeyError) as exc:
        raise InputError(problems_of(exc, path)) from None


def structure_part(data: Any, cl: Any, errors: list[Exception], name: str | None = None) -> Any:
    """``data`` as ``cl`` inside a custom hook; a failure is added to ``errors`` and None returned.

    With ``name`` the failure is noted as that attribute's, so its path continues there; without,
    the failure's own faults are added as they are (paths relative to the hook's object).
    """
    try:
        return input_converter.structure(data, cl)
    except ClassValidationError as exc:
        if name is None:
            errors.extend(exc.exceptions)
            return None
        failure: Exception = exc
    except Exception as exc:  # collected, to be raised together as the hook's class error
        failure = exc
    if name is not None:
        failure.__notes__ = [
            *getattr(failure, "__notes__", []),
            AttributeValidationNote(f"Structuring @ attribute {name}", name, cl),
        ]
    errors.append(failure)
    return None


__all__ = [
    "InputError",
    "InputProblem",
    "NonEmptyStr",
    "expect_object",
    "input_converter",
    "known_keys",
    "problems_of",
    "register_object",
    "structure_input",
    "structure_part",
]
