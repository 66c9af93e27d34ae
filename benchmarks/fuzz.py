"""Fuzz the planner with generated nasty histories and check every invariant (issue 15's attack, repeatable).

Run: python benchmarks/fuzz.py [--examples 10000] [--seed 0]

Each history (repeated message and call ids, results before calls, calls without results, non-text
outputs, lone surrogates, call inputs nested thousands deep, metadata nested past the limit, huge
strings) is planned and compacted by a real `Compactor` in ENFORCE or SHADOW mode over an in-memory
archive, with a scripted model answering 0, 0.5 or 1. Checked every time: nothing raises out of
plan/compact, no INTERNAL_ERROR, the input is not mutated, text and thinking are untouched, no pair
is broken (only whole pairs go), compact returns the adopted proposal or the original, the archived
original restores exactly and `rehydrate` gives it back. The generator and the checks are the ones
``tests/test_attack_properties.py`` runs at a CI-sized count. Prints a JSON summary; exits 1 on the
first broken invariant (after hypothesis has shrunk it to a small example).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests._attack_fuzz

from hypothesis import HealthCheck, given, seed, settings

from tests._attack_fuzz import nasty_histories, run, settings_for_plan


def main() -> int:
    """Run the fuzzer and print its summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
