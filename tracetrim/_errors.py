"""`TracetrimError`, the root of every exception tracetrim defines (no imports, so no cycles)."""

from __future__ import annotations


class TracetrimError(Exception):
    """Base of every error tracetrim raises; catch it to handle any of them.

    Subclasses keep a builtin mixin where it helps: `ValueError` for bad input (``SnapshotError``,
    ``InputError``), `LookupError` for something missing (``ArchiveNotFoundError``), `RuntimeError`
    for a failing model or service (``DecisionModelError``).
    """
