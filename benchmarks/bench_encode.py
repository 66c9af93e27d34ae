"""How often one compaction JSON-encodes the history, and how long it takes, on each path.

Run: python benchmarks/bench_encode.py [--sizes 1000,10000] [--repeat 3]

Paths: `Compactor` in SHADOW (no scope) and ENFORCE (archive in memory), `OffloadStrategy` (compact mode)
in ENFORCE, and an adapter's `compact_history` (ENFORCE, with a trigger, so the adapter measures the
history first), given a host's list or (``private``) the adapter's own conversion. "history x" counts
encodes of the history's own messages (whole, in lists or in the snapshot document), in histories;
"other x" everything else encoded (single blocks measured, rebuilt messages, questions), in the same
unit. Times are medians of plans made without counting. Histories are
`bench_plan.synthetic_history`; the judge is a zero-latency scripted model.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_plan import TOOLS, synthetic_history

import tracetrim as tt
from tests._encode_counter import counting_encodes
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter import compact_history

SCOPE = tt.Scope("bench", "agent", "session")
Run = Callable[[list[dict[str, Any]]], Awaitable[object]]


def _compactor(mode: tt.Mode) -> tt.Compactor:
    config = tt.CompactorConfig(
        eligible_tools=set(TOOLS),
        result_preview_chars=0,
        max_transcript_chars=2_000_000_000,
        max_state_tokens=1_000_000_000,
        max_request_tokens=1_000_001_000,
        max_questions=128,
        minimum_reduction=0.0,
    )
    model = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.endswith("0") else 0.1)
    archive = KeyValueArchive(MemoryStore()) if mode is tt.Mode.ENFORCE else None
    execution = tt.ExecutionOptions(mode=mode, budget_s=3600)
    return tt.Compactor(model, config=config, execution=execution, archive=archive)


def _offload() -> tt.OffloadStrategy:
    config = tt.OffloadConfig(mode="compact", max_tool_message_tokens=200, max_transcript_chars=2_000_000_000)
    execution = tt.ExecutionOptions(mode=tt.Mode.ENFORCE, budget_s=3600)
    return tt.OffloadStrategy(config=config, execution=execution, archive=KeyValueArchive(MemoryStore()))


def _paths() -> dict[str, Run]:
    def plan(strategy: tt.Compactor | tt.OffloadStrategy, scope: tt.Scope | None) -> Run:
        return lambda messages: strategy.plan(tt.CompactionRequest(messages, scope=scope))

    adapter = _compactor(tt.Mode.ENFORCE)
    return {
        "compactor SHADOW": plan(_compactor(tt.Mode.SHADOW), None),
        "compactor ENFORCE": plan(_compactor(tt.Mode.ENFORCE), SCOPE),
        "offload ENFORCE": plan(_offload(), SCOPE),
        "adapter ENFORCE": lambda messages: compact_history(adapter, messages, scope=SCOPE, trigger_tokens=1),
        # what an adapter does with its own conversion of the framework's history
        "adapter private": lambda messages: compact_history(
            adapter, messages, scope=SCOPE, trigger_tokens=1, private=True
        ),
    }


async def _timed(run: Run, messages: list[dict[str, Any]], repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        await run(messages)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


async def _measure(sizes: list[int], repeat: int) -> None:
    print(f"{'messages':>9} {'path':<18} {'history x':>9} {'other x':>8} {'ms':>9}")
    for size in sizes:
        messages = synthetic_history(size)
        for name, run in _paths().items():
            await run(messages)  # warm: the judge's caches, imports
            with counting_encodes(messages) as count:
                await run(messages)
            seconds = await _timed(run, messages, repeat)
            print(
                f"{size:>9,} {name:<18} {count.histories:>9.2f} {count.others:>8.2f} {seconds * 1000:>9.1f}"
            )


def main() -> None:
    """Print one row per size and path: histories encoded, other bytes encoded, milliseconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(_measure([int(s) for s in args.sizes.split(",")], args.repeat))


if __name__ == "__main__":
    main()
