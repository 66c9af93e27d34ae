"""Key order of a JSON value, recorded and put back, so that an entry a converter rebuilt reads as it did."""

from __future__ import annotations

from typing import Any


def order_of(value: Any) -> Any:
    """The key order of ``value``'s objects, nested (no strings or numbers of it): None for a scalar,
    ``["d", [[key, order], ...]]`` for an object, ``["l", [order, ...]]`` for a list holding containers."""
    if isinstance(value, dict):
        return ["d", [[k, order_of(v)] for k, v in value.items()]]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return ["l", [order_of(v) for v in value]]
    return None


def reorder(value: Any, order: Any) -> Any:
    """``value`` with its keys in ``order`` (from `order_of`) where they are there; keys ``order`` does
    not know keep their place after them. Only order changes, never a value."""
    if not isinstance(order, list) or len(order) != 2:
        return value
    kind, parts = order
    if kind == "d" and isinstance(value, dict) and isinstance(parts, list):
        out: dict[str, Any] = {}
        for part in parts:
            if isinstance(part, list) and len(part) == 2 and part[0] in value:
                out[part[0]] = reorder(value[part[0]], part[1])
        out.update({k: v for k, v in value.items() if k not in out})
        return out
    if kind == "l" and isinstance(value, list) and isinstance(parts, list):
        return [reorder(v, parts[n]) if n < len(parts) else v for n, v in enumerate(value)]
    return value
