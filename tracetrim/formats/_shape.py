"""What a parsed history file looks like, in words: for errors about files no format reads."""

from __future__ import annotations

from typing import Any


class JsonLines(list[Any]):
    """The values of a JSONL file, one per line, in order: a list that remembers it came from JSONL,
    so detection can say so and a writer can give back the same kind of file."""


def _keys(value: dict[str, Any], limit: int = 8) -> str:
    names = [str(k) for k in value]
    shown = ", ".join(names[:limit])
    return f"{shown}, ... ({len(names)} keys)" if len(names) > limit else shown or "no keys"


def _first_type(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("type", "kind", "role"):
            if isinstance(value.get(key), str):
                return f"{key} {value[key]!r}"
        return f"keys {_keys(value)}"
    return f"a JSON {type(value).__name__}"


def describe(data: Any) -> str:
    """A short description of ``data``'s shape: "a JSON object with keys a, b, c", "JSONL of 12 lines
    whose first has type 'x'", "a JSON list of 3 items whose first has role 'user'"."""
    if isinstance(data, JsonLines):
        if not data:
            return "an empty JSONL file"
        return f"JSONL of {len(data)} lines whose first has {_first_type(data[0])}"
    if isinstance(data, dict):
        return f"a JSON object with keys {_keys(data)}"
    if isinstance(data, list):
        if not data:
            return "an empty JSON list"
        return f"a JSON list of {len(data)} items whose first has {_first_type(data[0])}"
    return f"a JSON {type(data).__name__}"
