"""Runs to learn from out of what tracetrim already keeps: plan records and the archive they name.

A host running ENFORCE archives each original history before it adopts a shorter one, and its
records say under which scope and reference. The snapshots of one scope, oldest first, are one run
seen at each compaction; each later snapshot holds the earlier compactions' shortened results and
tombstones, so the run is rebuilt by putting each snapshot's originals back into the next
(`tracetrim.archive.rehydrate`). The last snapshot, made whole, is the run up to its last compaction.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from tracetrim._marker import is_shortened
from tracetrim._record import Record
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim.archive import Archive, ArchiveError
from tracetrim.archive._calls import tool_key
from tracetrim.archive._rehydrate import rehydrate
from tracetrim.compactor._pairs import TOOL_NOT_ELIGIBLE
from tracetrim.learn._sources import Trajectory, as_seen

DATASET = "records"
"""The dataset name of runs rebuilt from records (each scope is its own held-out group)."""


@attrs.frozen
class ArchivedRuns:
    """The runs rebuilt from records, what could not be rebuilt, and the records with nothing archived."""

    trajectories: list[Trajectory]
    problems: list[str]
    """One line per scope left out or cut short: which scope and why."""
    unarchived: int
    """Records without an archive reference or scope (SHADOW plans, plans that kept the original)."""


@attrs.frozen
class RecordedScopes:
    """What records say per scope: its distinct archive references in the order the plans ended, and
    (where records carry per-pair detail) the tools the host did not opt in."""

    refs: dict[Scope, list[str]]
    not_eligible: dict[Scope, set[str]]
    """Read from every record of the scope, archived or not."""
    unarchived: int
    """Records without an archive reference or scope."""
    problems: list[str]
    """One line per record whose scope is not a valid `Scope`."""


def scope_runs(records: Iterable[Record]) -> RecordedScopes:
    """The records read by scope (`RecordedScopes`). Records of the same moment keep their order
    (version 1 records carry no time)."""
    refs: dict[Scope, list[str]] = {}
    not_eligible: dict[Scope, set[str]] = {}
    unarchived = 0
    problems: list[str] = []
    for record in sorted(records, key=lambda r: r.at):
        scope, invalid = _scope_of(record)
        if scope is not None and record.pairs is not None:
            left_out = not_eligible.setdefault(scope, set())
            left_out.update(p.tool for p in record.pairs if p.reason == TOOL_NOT_ELIGIBLE)
        if not record.archive_ref or not record.scope:
            unarchived += 1
        elif scope is None:
            problems.append(
                f"record of {record.at or 'unknown time'}: scope {record.scope!r} is not valid ({invalid})"
            )
        else:
            seen = refs.setdefault(scope, [])
            if record.archive_ref not in seen:
                seen.append(record.archive_ref)
    return RecordedScopes(refs, not_eligible, unarchived, problems)


def _scope_of(record: Record) -> tuple[Scope | None, str]:
    """The record's scope, or None and why it is not a valid `Scope` ("" when it names none)."""
    if not record.scope:
        return None, ""
    try:
        return Scope(**record.scope), ""
    except (TypeError, ValueError) as exc:
        return None, str(exc)


async def archived_runs(
    records: Iterable[Record], archive: Archive, *, eligible_tools: frozenset[str] | None = None
) -> ArchivedRuns:
    """One `Trajectory` per scope the records name, rebuilt from ``archive`` (see the module).

    ``eligible_tools`` defaults, per scope, to the tools its records' per-pair detail shows the host
    opted in (`RecordDetail.pairs`: every tool the run calls but those marked not eligible), or to
    every tool the run calls when they carry none.

    A snapshot that is missing or corrupt leaves its scope out; one that does not follow from the
    snapshot before it (the host rewrote its history in between) starts the run again from there,
    its shortened results restored. Either is said in ``problems``; nothing is raised for a bad scope.
    """
    scopes = scope_runs(records)
    problems = list(scopes.problems)
    trajectories: list[Trajectory] = []
    for scope, chain in scopes.refs.items():
        label = f"{scope.user_id}/{scope.agent_id}/{scope.session_id}"
        run: list[Message] | None = None
        try:
            for ref in chain:
                snapshot = await archive.restore(scope, ref)
                run = snapshot if run is None else _continued(run, snapshot, label, ref, problems)
        except (ArchiveError, ValueError) as exc:
            problems.append(f"{label}: left out ({exc})")
            continue
        if run:
            trajectory = Trajectory(label, DATASET, label, as_seen(run), eligible_tools)
            if eligible_tools is None and scope in scopes.not_eligible:
                tools = trajectory.tools() - scopes.not_eligible[scope]
                trajectory = attrs.evolve(trajectory, eligible_tools=tools)
            trajectories.append(trajectory)
    return ArchivedRuns(trajectories, problems, scopes.unarchived)


def _continued(
    run: list[Message], snapshot: list[Message], label: str, ref: str, problems: list[str]
) -> list[Message]:
    """``snapshot`` with the originals ``run`` holds put back. When it does not derive from ``run``
    (the host rewrote its history in between), only its shortened results are: the pairs dropped
    before the rewrite have no place to go back to."""
    try:
        return rehydrate(snapshot, run)
    except ValueError as exc:
        problems.append(f"{label}: restarted at snapshot {ref[:12]}, pairs dropped before it lost ({exc})")
    known = {
        key[1] for message in run for block in message["content"] if (key := tool_key(block)) is not None
    }
    shortened = {
        str(block["id"])
        for message in snapshot
        for block in message["content"]
        if block.get("type") == "tool_result" and is_shortened(block) and block.get("id") in known
    }
    return rehydrate(snapshot, run, shortened) if shortened else snapshot
