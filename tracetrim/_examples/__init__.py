"""The bundled example histories (copies of the labelled scenarios), readable from an installed wheel."""

from __future__ import annotations

from importlib import resources
from typing import Any

from tracetrim._json import strict_loads

NAMES = ("payment_retry", "replication_incident")


def load_example(name: str) -> dict[str, Any]:
    """One bundled labelled history: messages, goal, next action, eligible tools, labels."""
    if name not in NAMES:
        raise KeyError(f"no bundled example {name!r}; choose from {', '.join(NAMES)}")
    text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    data: dict[str, Any] = strict_loads(text)
    return data
