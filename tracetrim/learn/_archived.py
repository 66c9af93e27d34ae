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


NOT_ELIGIBLE = "tool_not_eligible"
"""The reason a record's pair gives for a tool the host did not opt in (`tracetrim.compactor._pairs`)."""


def scope_runs(records: Iterable[Record]) -> tuple[dict[Scope, list[str]], int, list[str]]:
    """Each scope's distinct archive references in the order the plans ended, how many records name
    none, and one line per record whose scope is not a valid `Scope`. Records of the same moment keep
    their order (version 1 records carry no time)."""
    refs: dict[Scope, list[str]] = {}
    unarchived = 0
    problems: list[str] = []
    for record in sorted(records, key=lambda r: r.at):
        if not record.archive_ref or not record.scope:
            unarchived += 1
            continue
        try:
            scope = Scope(**record.scope)
        except (TypeError, ValueError) as exc:
            problems.append(
                f"record of {record.at or 'unknown time'}: scope {record.scope!r} is not valid ({exc})"
            )
            continue
        seen = refs.setdefault(scope, [])
        if record.archive_ref not in seen:
            seen.append(record.archive_ref)
    return refs, unarchived, problems


async def archived_runs(
    records: Iterable[Record], archive: Archive, *, eligible_tools: frozenset[str] | None = None
) -> ArchivedRuns:
    """One `Trajectory` per scope the records name, rebuilt from ``archive`` (see the module).

    ``eligible_tools`` defaults, per scope, to the tools its records' per-pair detail shows the host
    opted in (`RecordDetail.pairs`), or to every tool the run calls when they carry none.

    A snapshot that is missing or corrupt leaves its scope out; one that does not follow from the
    snapshot before it (the host rewrote its history in between) starts the run again from there,
    its shortened results restored. Either is said in ``problems``; nothing is raised for a bad scope.
    """
    records = list(records)
    refs, unarchived, problems = scope_runs(records)
    left_out = _not_eligible(records)
    trajectories: list[Trajectory] = []
    for scope, chain in refs.items():
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
            tools = eligible_tools
            if tools is None and scope in left_out:
                called = {str(b["name"]) for m in run for b in m["content"] if b.get("type") == "tool_call"}
                tools = frozenset(called - left_out[scope])
            trajectories.append(Trajectory(label, DATASET, label, as_seen(run), tools))
    return ArchivedRuns(trajectories, problems, unarchived)


def _not_eligible(records: Iterable[Record]) -> dict[Scope, set[str]]:
    """Per scope whose records carry per-pair detail, the tools the host left out (every other tool
    its runs call was opted in): what the host saw as candidates is what the judge learns from."""
    out: dict[Scope, set[str]] = {}
    for record in records:
        if record.pairs is None or not record.scope:
            continue
        try:
            scope = Scope(**record.scope)
        except (TypeError, ValueError):
            continue  # `scope_runs` says so
        out.setdefault(scope, set()).update(p.tool for p in record.pairs if p.reason == NOT_ELIGIBLE)
    return out


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
