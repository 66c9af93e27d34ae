"""Fuzz the planner with generated nasty histories and check every invariant (issue 15's attack, repeatable).

Run: python benchmarks/fuzz.py [--examples 10000] [--seed 0] [--formats]

Each history (repeated message and call ids, results before calls, calls without results, non-text
outputs, lone surrogates, call inputs nested thousands deep, metadata nested past the limit, huge
strings) is planned and compacted by a real `Compactor` in ENFORCE or SHADOW mode over an in-memory
archive, with a scripted model answering 0, 0.5 or 1. Checked every time: nothing raises out of
plan/compact, no INTERNAL_ERROR, the input is not mutated, text and thinking are untouched, no pair
is broken (only whole pairs go), compact returns the adopted proposal or the original, the archived
original restores exactly and `rehydrate` gives it back. The generator and the checks are the ones
``tests/test_attack_properties.py`` runs at a CI-sized count. Prints a JSON summary; exits 1 on the
first broken invariant (after hypothesis has shrunk it to a small example).

With ``--formats`` it fuzzes the edge instead: every format's real or written files, broken in a few
places, through ``tracetrim compact`` (``tests/_format_mutations.py``, which
``tests/formats/test_formats_mutated.py`` runs at a CI-sized count): no traceback, no result that cannot
be written, and an ENFORCE history written back reads again.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests._attack_fuzz

from hypothesis import HealthCheck, given, seed, settings

from tests._attack_fuzz import nasty_histories, run, settings_for_plan
from tests._format_mutations import Seed, broken_files, check, compact_options


def main() -> int:
    """Run the fuzzer and print its summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", action="store_true", help="fuzz the format readers and writers")
    args = parser.parse_args()
    if args.formats:
        return _formats(args.examples, args.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    failures: list[str] = []

    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(messages=nasty_histories(), knobs=settings_for_plan())
    def fuzz(messages: list[dict[str, Any]], knobs: dict[str, Any]) -> None:
        problem, outcome = run(messages, knobs)
        outcomes["histories"] += 1
        if outcome is not None:
            reasons[f"{outcome.status.value}/{outcome.reason}"] += 1
            outcomes["adopted"] += bool(outcome.adopted)
            plan = outcome.plan
            for decision in plan.decisions if plan is not None else ():
                if decision.reason in ("input_too_deep", "input_not_json_object", "duplicate_id"):
                    outcomes[f"pairs_{decision.reason}"] += 1
        if problem is not None:
            failures.append(problem)
            raise AssertionError(problem)

    started = time.perf_counter()
    try:
        fuzz()
        ok = True
    except Exception:  # an AssertionError, or a group of them when hypothesis found several bugs
        ok = False
    summary = {
        "examples_asked": args.examples,
        "histories_fuzzed": outcomes.pop("histories", 0),
        "invariants_broken": len(set(failures)),
        "failures": sorted(set(failures))[:10],
        "elapsed_s": round(time.perf_counter() - started, 1),
        "counts": dict(sorted(outcomes.items())),
        "outcomes": dict(reasons.most_common()),
    }
    print(json.dumps(summary, indent=2, ensure_ascii=True))
    return 0 if ok else 1


def _formats(examples: int, seed_value: int) -> int:
    """Broken files of every format through ``tracetrim compact``; a JSON summary, 1 on a failure."""
    files: collections.Counter[str] = collections.Counter()
    failures: list[str] = []

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(broken=broken_files(), options=compact_options())
    def fuzz(broken: tuple[Seed, str], options: tuple[str, ...]) -> None:
        files[broken[0].format] += 1
        with tempfile.TemporaryDirectory() as tmp:
            try:
                problem = check(Path(tmp), *broken, options)
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            failures.append(f"{broken[0].name}: {problem}")
            raise AssertionError(problem)

    started = time.perf_counter()
    try:
        fuzz()
        ok = True
    except Exception:  # the failure, or a group of them
        ok = False
    summary = {
        "examples_asked": examples,
        "files_fuzzed": sum(files.values()),
        "broken": len(set(failures)),
        "failures": sorted(set(failures))[:10],
        "elapsed_s": round(time.perf_counter() - started, 1),
        "by_format": dict(sorted(files.items())),
    }
    print(json.dumps(summary, indent=2, ensure_ascii=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
