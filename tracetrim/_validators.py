"""Shared checks for numbers, probabilities, counts, names and ids: attrs validators and predicates."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard

import attrs

from tracetrim._errors import TracetrimError

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
"""The shape of an attrs validator: ``(instance, attribute, value) -> None``, raising when refused."""


class FieldValueError(TracetrimError, ValueError):
    """A value a field refuses; ``field`` names the field (None when the value stands alone).

    ``reason`` is the message without the field's name, so input parsing can put the value's path
    (``options.keep_threshold``) in front of it instead of the class's name.
    """

    def __init__(self, reason: str, *, owner: str | None = None, field: str | None = None) -> None:
        where = f"{owner}.{field}" if owner and field else field or owner or ""
        super().__init__(f"{where} {reason}" if where else reason)
        self.reason = reason
        self.field = field


class FieldTypeError(FieldValueError, TypeError):
    """A value of the wrong type for its field (a `TypeError` as well as a `FieldValueError`)."""


def describe(value: Any) -> str:
    """What kind of JSON value ``value`` is, for messages: ``null``, ``a boolean``, ``a number``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def is_real(value: object) -> TypeGuard[float]:
    """True for an int or float that is not a bool (NaN and infinities included)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[float]:
    """True for a finite int or float that is not a bool: what every numeric setting accepts."""
    return is_real(value) and math.isfinite(value)


def is_count(value: object) -> TypeGuard[int]:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _owner(instance: Any) -> str:
    return type(instance).__name__


def int_in(low: int, high: int | None = None) -> Validator:
    """An attrs validator: an integer (not a bool) from ``low`` up to ``high``, errors naming the field."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        where = {"owner": _owner(instance), "field": attribute.name}
        if not is_count(value):
            raise FieldTypeError(f"must be an integer, got {value!r}", **where)
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise FieldValueError(f"must be {bound}, got {value}", **where)

    return check


def _number_in(
    instance: Any, attribute: attrs.Attribute[Any], value: Any, ok: Callable[[float], bool], bound: str
) -> None:
    where = {"owner": _owner(instance), "field": attribute.name}
    if not is_number(value):
        raise FieldTypeError(f"must be a finite number, got {value!r}", **where)
    if not ok(value):
        raise FieldValueError(f"must be {bound}, got {value}", **where)


def probability(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: a finite number (not a bool) within [0, 1]."""
    _number_in(instance, attribute, value, lambda v: 0.0 <= v <= 1.0, "within [0, 1]")


def fraction(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: a finite number (not a bool) within [0, 1): a share that leaves something."""
    _number_in(instance, attribute, value, lambda v: 0.0 <= v < 1.0, "within [0, 1)")


def positive_number(unit: str = "") -> Validator:
    """An attrs validator: a finite number (not a bool) above 0, ``unit`` named in the message."""
    noun = f"a positive number of {unit}" if unit else "a positive number"

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not is_number(value) or value <= 0:
            raise FieldValueError(
                f"must be {noun}, got {value!r}", owner=_owner(instance), field=attribute.name
            )

    return check


def non_negative_number(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: a finite number (not a bool) of 0 or more."""
    if not is_number(value) or value < 0:
        raise FieldValueError(
            f"must be a finite number >= 0, got {value!r}", owner=_owner(instance), field=attribute.name
        )


def non_empty_string(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: a string with at least one character (an id, a name)."""
    if not isinstance(value, str) or not value:
        error = FieldValueError if isinstance(value, str) else FieldTypeError
        raise error(
            f"must be a non-empty string, got {value!r}", owner=_owner(instance), field=attribute.name
        )


def name_set(value: Any) -> frozenset[str]:
    """An attrs converter: a collection of non-empty strings as a frozenset (a lone string refused)."""
    if isinstance(value, str):
        raise FieldTypeError("expected a collection of names, got a single string")
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise FieldTypeError(f"names must be non-empty strings, got {name!r}")
    return names


def callable_or_none(taking: str = "") -> Validator:
    """An attrs validator: a callable (a token counter, an observer, a hook) or None; ``taking`` says
    what it is called with, for the message."""
    noun = f"a callable taking {taking}, or None" if taking else "a callable or None"

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and not callable(value):
            raise FieldTypeError(f"must be {noun}", owner=_owner(instance), field=attribute.name)

    return check
