"""The one cattrs converter: every value class goes to and from JSON through it."""

from __future__ import annotations

from typing import Any

from cattrs.preconf.json import make_converter

converter = make_converter()
"""Shared converter; enums become their values, frozensets sorted lists via `to_json_object`."""

converter.register_unstructure_hook(frozenset, lambda value: sorted(value))


def to_json_object(value: Any) -> Any:
    """Plain JSON data (dicts, lists, strings, numbers) for any tracetrim value."""
    return converter.unstructure(value)
