"""Reduction and time of the offload strategy on the SWE-agent trajectories, next to the planner's.

Run: ``.venv/bin/python benchmarks/bench_offload.py`` (add ``--json`` for machine-readable output).
Each ``history`` is converted by `tracetrim.formats.from_swe_agent_history`. The planner uses the
default judge (the embedded learned model) with every tool eligible, in SHADOW mode, so both sides
measure their proposal without archive I/O. ``compress`` needs a chat model; the benchmark uses
`_LeadSummarizer`, a local stand-in that keeps the first line of each message, so its figures show the
mechanics and the cost of the strategy, not summary quality.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetrim import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode
from tracetrim._json import canonical_json
from tracetrim.compactor._offload import OffloadConfig, OffloadStrategy
from tracetrim.decision import Summary
from tracetrim.formats._swe_agent import load_swe_agent_traj

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe-agent"


class _LeadSummarizer:
    """A local stand-in summarizer: the first line of each message, so compress runs offline."""

    async def __call__(self, messages: Sequence[dict[str, Any]], *, goal: str = "") -> Summary:
        lines = []
        for message in messages:
            for block in message["content"]:
                text = block.get("text") or block.get("input") or block.get("output") or ""
                if isinstance(text, str) and text.strip():
                    lines.append(text.strip().splitlines()[0][:160])
                    break
        return Summary(text="\n".join(lines) or "(nothing to keep)")


async def _measure(strategy: Any, request: CompactionRequest, repeats: int) -> tuple[float, float, str]:
    times = []
    outcome = None
    for _ in range(repeats):
        started = time.perf_counter()
        outcome = await strategy.plan(request)
        times.append((time.perf_counter() - started) * 1000)
    assert outcome is not None
    reduction = outcome.plan.stats.reduction if outcome.plan and outcome.status.value == "DECIDED" else 0.0
    return reduction, statistics.median(times), outcome.reason


async def run(repeats: int, trigger_tokens: int, max_tool_tokens: int) -> list[dict[str, Any]]:
    """One row per trajectory: characters, and reduction and median time per strategy."""
    shadow = ExecutionOptions(mode=Mode.SHADOW)
    rows = []
    for path in sorted(DATA.glob("*.traj")):
        messages = load_swe_agent_traj(path)
        tools = {b["name"] for m in messages for b in m["content"] if b["type"] == "tool_call"}
        request = CompactionRequest(messages)
        size: dict[str, Any] = dict(trigger_tokens=trigger_tokens, max_tool_message_tokens=max_tool_tokens)
        strategies = {
            "planner": Compactor(config=CompactorConfig(eligible_tools=tools), execution=shadow),
            "compact": OffloadStrategy(config=OffloadConfig(mode="compact", **size), execution=shadow),
            "auto": OffloadStrategy(
                _LeadSummarizer(), config=OffloadConfig(mode="auto", **size), execution=shadow
            ),
        }
        row: dict[str, Any] = {
            "trajectory": path.stem[:48],
            "messages": len(messages),
            "chars": len(canonical_json(messages)),
        }
        for name, strategy in strategies.items():
            reduction, ms, reason = await _measure(strategy, request, repeats)
            row[name] = {"reduction": round(reduction, 4), "ms": round(ms, 2), "reason": reason}
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trigger-tokens", type=int, default=20_000)
    parser.add_argument("--max-tool-message-tokens", type=int, default=2_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"no SWE-agent data at {DATA}", file=sys.stderr)
        return 1
    rows = asyncio.run(run(args.repeats, args.trigger_tokens, args.max_tool_message_tokens))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"trigger_tokens={args.trigger_tokens:,} max_tool_message_tokens={args.max_tool_message_tokens:,}")
    print(f"{'trajectory':48} {'msgs':>4} {'chars':>8} | {'planner':>15} | {'compact':>15} | {'auto':>15}")
    for row in rows:
        cells = " | ".join(
            f"{row[k]['reduction']:6.1%} {row[k]['ms']:6.1f}ms" for k in ("planner", "compact", "auto")
        )
        print(f"{row['trajectory']:48} {row['messages']:>4} {row['chars']:>8,} | {cells}")
    for key in ("planner", "compact", "auto"):
        print(
            f"{key:8} mean reduction {statistics.mean(r[key]['reduction'] for r in rows):6.1%}, "
            f"median time {statistics.median(r[key]['ms'] for r in rows):6.1f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
