"""Whether planning gives the same outcome as a recorded one: every action, probability and message out.

Run: python benchmarks/plan_identity.py                    # check the fixtures and ../shared
     python benchmarks/plan_identity.py --write             # record both anew (only from code known good)
     python benchmarks/plan_identity.py --shared DIR        # another shared folder of the same layout

Each history is planned with the default learned judge twice: at the default settings with its own
tools eligible, and with every limit raised and ``minimum_reduction`` 0 (so every pair is judged and the
proposal is always made). A plan's record holds its status, reason and detail, every pair's action,
reason, sizes and both probabilities (rounded to 12 digits), the stats (less the elapsed time) and the
SHA-256 of the messages out. The fixtures (``tests/data`` and synthetic histories of 300 and 1,200
messages, the longer one past the self-check's span) are recorded whole in
``tests/data/plan_identity.json``, which ``tests/test_plan_identity.py`` checks; the runs of
``../shared/data`` (every mini-swe-agent, tau-bench and SWE-agent run) by a digest of each record, in
``benchmarks/plan_identity_shared.json``. Without ``../shared`` that part is skipped. It exits non-zero
when any plan differs.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

import tracetrim as tt
from tracetrim.learn import from_file

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = REPO / "tests" / "data"
FIXTURE_RECORD = FIXTURES / "plan_identity.json"
SHARED_RECORD = HERE / "plan_identity_shared.json"
SHARED = REPO.parent / "shared"
SYNTHETIC_SIZES = (300, 1200)
DIGITS = 12


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def record(outcome: tt.Outcome) -> dict[str, Any]:
    """What must not change about one plan's outcome."""
    out: dict[str, Any] = {
        "status": outcome.status.name,
        "reason": str(outcome.reason),
        "detail": outcome.detail,
    }
    plan = outcome.plan
    if plan is None:
        return out
    out["decisions"] = [
        [d.key, d.call_id, d.tool, str(d.action), d.reason, _rounded(d.keep_call), _rounded(d.keep_result)]
        + [d.chars_before, d.chars_after]
        for d in plan.decisions
    ]
    stats = attrs.asdict(plan.stats)
    stats.pop("elapsed_ms", None)
    out["stats"] = {k: round(v, DIGITS) if isinstance(v, float) else v for k, v in stats.items()}
    out["messages"] = _digest(plan.messages)
    return out


def _compactors(tools: frozenset[str]) -> dict[str, tt.Compactor]:
    execution = tt.ExecutionOptions(budget_s=3600)
    everything = tt.CompactorConfig(
        eligible_tools=set(tools), max_transcript_chars=2_000_000_000, minimum_reduction=0.0
    )
    return {
        "default": tt.Compactor(config=tt.CompactorConfig(eligible_tools=set(tools)), execution=execution),
        "every pair": tt.Compactor(config=everything, execution=execution),
    }


def plan_records(messages: list[dict[str, Any]], tools: frozenset[str]) -> dict[str, Any]:
    """The record of each setting's plan of ``messages``."""
    return {
        name: record(asyncio.run(compactor.plan(tt.CompactionRequest(messages))))
        for name, compactor in _compactors(tools).items()
    }


def fixture_histories() -> Iterator[tuple[str, list[dict[str, Any]], frozenset[str]]]:
    """Name, messages and eligible tools of each fixture history, in a fixed order."""
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix not in {".json", ".jsonl", ".traj"} or path == FIXTURE_RECORD:
            continue
        try:
            found = from_file(path, name=path.relative_to(FIXTURES).as_posix())
        except ValueError:  # not a history (a README)
            continue
        for trajectory in found:
            yield trajectory.name, trajectory.messages, trajectory.tools()
    sys.path.insert(0, str(HERE))
    from bench_plan import TOOLS, synthetic_history

    for size in SYNTHETIC_SIZES:
        yield f"synthetic:{size}", synthetic_history(size), frozenset(TOOLS)


def fixture_records() -> dict[str, Any]:
    """The records of every fixture history, by name."""
    return {name: plan_records(messages, tools) for name, messages, tools in fixture_histories()}


def shared_digests(shared: Path) -> dict[str, str]:
    """Per run of ``shared/data`` (``dataset/name``), the digest of its records."""
    from tracetrim.learn._sources import shared_datasets

    out: dict[str, str] = {}
    for dataset, runs in shared_datasets(shared).items():
        for run in runs:
            out[f"{dataset}/{run.name}"] = _digest(plan_records(run.messages, run.tools()))
    return out


def _compare(what: str, found: dict[str, Any], expected: dict[str, Any]) -> int:
    differ = sorted(k for k in expected.keys() | found.keys() if found.get(k) != expected.get(k))
    print(f"{what}: {len(found)} histories planned, {len(expected)} recorded, {len(differ)} differ")
    for name in differ[:20]:
        print(f"  differs: {name}")
    return len(differ)


def main() -> None:
    """Check (or with ``--write`` record) the fixtures' plans and the shared runs' digests."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the current plans")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder (default ../shared)")
    parser.add_argument("--no-fixtures", action="store_true", help="only the shared runs")
    args = parser.parse_args()
    differ = 0
    if not args.no_fixtures:
        found = fixture_records()
        if args.write:
            FIXTURE_RECORD.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print(f"recorded {len(found)} fixture histories in {FIXTURE_RECORD}")
        else:
            expected = json.loads(FIXTURE_RECORD.read_text(encoding="utf-8"))
            differ += _compare("fixtures", found, expected)
    if not (args.shared / "data").is_dir():
        print(f"no {args.shared / 'data'}: the shared runs are not checked")
    else:
        digests = shared_digests(args.shared)
        if args.write:
            SHARED_RECORD.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print(f"recorded {len(digests)} shared runs in {SHARED_RECORD}")
        else:
            expected = json.loads(SHARED_RECORD.read_text(encoding="utf-8"))
            differ += _compare("shared runs", digests, expected)
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
