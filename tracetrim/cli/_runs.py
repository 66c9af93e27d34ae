"""Reading whole runs for `replay` and `fit`: named files and folders, in any format `compact` reads."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from tracetrim._validators import FieldValueError
from tracetrim.cli._errors import CliError
from tracetrim.cli._input import announce
from tracetrim.learn._sources import Trajectory, from_file

SUFFIXES = (".json", ".jsonl", ".traj")
"""What a folder is searched for."""
EVERY_TOOL = "*"
"""``--eligible-tools *``: every tool a run calls."""


def run_files(names: Sequence[str]) -> list[tuple[Path, bool]]:
    """Each named file, and every run file below each named folder (sorted), each with whether it was
    found in a folder rather than named."""
    out: list[tuple[Path, bool]] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
            if not found:
                raise CliError(f"{name}: no *.json, *.jsonl or *.traj files in this folder")
            out.extend((p, True) for p in found)
        elif path.is_file():
            out.append((path, False))
        else:
            raise CliError(f"{name}: no such file or folder")
    return out


def tool_names(tools: str | None) -> frozenset[str] | None:
    """``--eligible-tools A,B`` as names; None when not given or ``*`` (each run's own, see `read_runs`)."""
    if not tools or tools.strip() == EVERY_TOOL:
        return None
    return frozenset(n.strip() for n in tools.split(",") if n.strip())


def read_runs(names: Sequence[str], fmt: str = "auto", tools: str | None = None) -> list[Trajectory]:
    """The runs in the named files and folders (`tracetrim.learn.from_file`: a list of trajectories
    gives each one). Eligible tools: ``tools`` (``*``: every tool a run calls), else each file's own or
    its format's. A file a folder holds that is no history is skipped and said; a named one is an error.
    """
    runs: list[Trajectory] = []
    every = tools is not None and tools.strip() == EVERY_TOOL
    named = tool_names(tools)
    for path, in_folder in run_files(names):
        try:
            found = from_file(path, fmt=fmt, eligible_tools=named)
        except FieldValueError as exc:
            if not in_folder:
                raise CliError(str(exc)) from None
            # A folder may hold other JSON too (a run index, a results table): said, not fatal.
            print(f"tracetrim: skipped {exc}", file=sys.stderr)
            continue
        if every:
            found = [attrs.evolve(run, eligible_tools=None) for run in found]
        runs.extend(found)
    if fmt == "auto":
        announce([(run.name, run.dataset) for run in runs])
    return runs
