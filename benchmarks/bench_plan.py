"""Planning overhead without model latency: time and peak memory for 100 to 100,000 messages.

Run: python benchmarks/bench_plan.py [--sizes 100,1000,10000,100000] [--repeat 3]

By default the embedded learned judge plans (in-process, the whole history at once); ``--model scripted``
uses a zero-latency scripted model instead. Either way what is measured is tracetrim's own work:
validating and copying the history, pairing, the observation, batching, the policy, the rebuild and
the size accounting. Histories are synthetic but shaped like real agent runs: one message in three is
user text (~200 chars), the rest are assistant turns with a short thought, a tool call and a ~1.5 kB
text result. Peak memory is measured in a separate pass with tracemalloc (it slows the code down).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import tracemalloc
from typing import Any

import tracetrim as tt
from tracetrim.decision import ScriptedDecisionModel

TOOLS = ("read_file", "search_code", "run_tests", "grep_logs")


def synthetic_history(size: int, seed: int = 7) -> list[dict[str, Any]]:
    """``size`` messages; two in three carry a tool call and its ~1.5 kB result."""
    rng = random.Random(seed)
    words = "the parser fails on nested blocks when the retry loop replays a stale token again".split()
    messages: list[dict[str, Any]] = [
        {
            "id": "m0",
            "role": "user",
            "content": [{"type": "text", "text": "Fix the failing parser tests and explain the root cause."}],
        }
    ]
    for n in range(1, size):
        if n % 3 == 0:
            text = " ".join(rng.choice(words) for _ in range(35))
            messages.append({"id": f"m{n}", "role": "user", "content": [{"type": "text", "text": text}]})
            continue
        tool = TOOLS[n % len(TOOLS)]
        lines = "\n".join(f"{k:4d}  " + " ".join(rng.choice(words) for _ in range(8)) for k in range(28))
        messages.append(
            {
                "id": f"m{n}",
                "role": "assistant",
                "name": "agent",
                "content": [
                    {"type": "text", "text": f"Step {n}: checking with {tool}."},
                    {
                        "type": "tool_call",
                        "id": f"c{n}",
                        "name": tool,
                        "state": "finished",
                        "input": json.dumps({"path": f"src/module_{n % 97}.py", "line": n}),
                    },
                    {"type": "tool_result", "id": f"c{n}", "name": tool, "state": "success", "output": lines},
                ],
            }
        )
    return messages


def _compactor(model_kind: str = "learned") -> tt.Compactor:
    if model_kind == "learned":
        # The default judge with default limits: it sees the whole history, nothing to fit or batch.
        learned = tt.CompactorConfig(
            eligible_tools=set(TOOLS), max_transcript_chars=2_000_000_000, minimum_reduction=0.0
        )
        return tt.Compactor(config=learned, execution=tt.ExecutionOptions(budget_s=3600))
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
    return tt.Compactor(model, config=config, execution=tt.ExecutionOptions(budget_s=3600))


def plan_once(messages: list[dict[str, Any]], model_kind: str = "learned") -> tuple[float, tt.Outcome]:
    """Seconds for one plan (timed inside the event loop), and its outcome."""
    seconds, _, outcome = timed_plan(messages, model_kind)
    return seconds, outcome


def timed_plan(
    messages: list[dict[str, Any]], model_kind: str = "learned"
) -> tuple[float, float, tt.Outcome]:
    """Wall seconds and CPU seconds of this process for one plan, and its outcome. On a busy machine
    the CPU time is the steadier figure: it leaves out the time other processes held the cores."""
    compactor = _compactor(model_kind)

    async def timed() -> tuple[float, float, tt.Outcome]:
        started, cpu = time.perf_counter(), time.process_time()
        outcome = await compactor.plan(tt.CompactionRequest(messages))
        return time.perf_counter() - started, time.process_time() - cpu, outcome

    return asyncio.run(timed())


def peak_bytes(messages: list[dict[str, Any]], model_kind: str = "learned") -> int:
    """Peak bytes allocated while planning (the history itself excluded)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    plan_once(messages, model_kind)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main() -> None:
    """Print one row per size: history characters, median plan time, time per message, peak memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--model",
        choices=("learned", "scripted"),
        default="learned",
        help="learned: the default in-process judge (default); scripted: a zero-latency remote-style "
        "model, which adds the observation and batching stages",
    )
    args = parser.parse_args()
    header = (
        "messages",
        "chars",
        "pairs",
        "requests",
        "plan s",
        "cpu s",
        "best cpu",
        "us/msg",
        "peak MiB",
        "peak/JSON",
    )
    widths = (9, 13, 7, 8, 8, 7, 8, 7, 9, 9)
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    for size in (int(s) for s in args.sizes.split(",")):
        messages = synthetic_history(size)
        repeat = args.repeat if size <= 10_000 else 1
        runs = [timed_plan(messages, args.model) for _ in range(repeat)]
        seconds = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        best = min(r[1] for r in runs)  # on a shared virtual machine the steadiest figure
        outcome = runs[0][2]
        assert outcome.plan is not None, outcome
        stats = outcome.plan.stats
        peak = peak_bytes(messages, args.model)
        print(
            f"{size:>9,} {stats.chars_before:>13,} {stats.candidates:>7,} {stats.requests:>8,} "
            f"{seconds:>8.3f} {cpu:>7.3f} {best:>8.3f} {seconds / size * 1e6:>7.1f} {peak / 2**20:>9.1f} "
            f"{peak / stats.chars_before:>9.2f}"
        )


if __name__ == "__main__":
    main()
