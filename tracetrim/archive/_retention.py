"""Retention: prune a scope's snapshots by count and/or age, and clear crashed writers' temp files."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Protocol, runtime_checkable

from tracetrim._scope import Scope
from tracetrim._validators import FieldValueError
from tracetrim.archive._protocol import Archive


@runtime_checkable
class SupportsSweep(Protocol):
    """An archive that can leave temporary files behind after a crash, and clean them."""

    async def sweep(self, scope: Scope) -> int:
        """Remove leftovers of crashed writes in ``scope``; return how many were removed."""
        ...


async def prune(
    archive: Archive,
    scope: Scope,
    *,
    keep_last: int | None = None,
    older_than: timedelta | float | None = None,
    now: float | None = None,
) -> list[str]:
    """Delete old snapshots of ``scope``; return the deleted references, oldest first.

    ``keep_last=N`` keeps the N newest; ``older_than`` (a timedelta or seconds) deletes snapshots
    created longer ago than that. With both, a snapshot goes only when both rules let it go, so
    the N newest always survive and so does anything younger than ``older_than``. At least one
    rule is required. Archives with a ``sweep`` method (`FileArchive`) are swept first.
    """
    if keep_last is None and older_than is None:
        raise FieldValueError("prune needs keep_last, older_than or both")
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0
    ):
        raise FieldValueError(f"keep_last must be a non-negative integer, got {keep_last!r}")
    max_age = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
    if max_age is not None and max_age < 0:
        raise FieldValueError(f"older_than must not be negative, got {older_than!r}")
    if isinstance(archive, SupportsSweep):
        await archive.sweep(scope)
    entries = await archive.list(scope)
    doomed = list(entries)
    if keep_last is not None:
        doomed = doomed[: max(len(entries) - keep_last, 0)]
    if max_age is not None:
        cutoff = (time.time() if now is None else now) - max_age
        doomed = [entry for entry in doomed if entry.created_at < cutoff]
    deleted = []
    for entry in doomed:
        if await archive.delete(scope, entry.ref):
            deleted.append(entry.ref)
    return deleted
