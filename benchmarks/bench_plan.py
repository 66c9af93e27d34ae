"""Planning overhead without model latency: time and peak memory for 100 to 100,000 messages.

Run: python benchmarks/bench_plan.py [--sizes 100,1000,10000,100000] [--repeat 3]
     python benchmarks/bench_plan.py --instructions [--sizes 1000,10000]

``--instructions`` counts the instructions one plan executes, with ``valgrind --tool=callgrind``: the
same count for the same code and input whatever else the machine is doing, so a change can be judged
on a noisy machine. Each size runs twice in a fresh process under callgrind, once planning and once
doing everything but the plan (start-up, building the history and the compactor, one small warm-up
plan that loads the judge); the difference is the plan's.

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
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
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


_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def instructions(size: int, plan: bool, model_kind: str = "learned") -> int:
    """Instructions a fresh process executes under callgrind to build a history of ``size`` messages
    and, when ``plan``, plan it once."""
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={Path(folder) / 'out'}",
                sys.executable,
                __file__,
                "--child",
                f"{size}:{'plan' if plan else 'base'}:{model_kind}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1))


def _child(spec: str) -> None:
    size, what, model_kind = spec.split(":")
    messages = synthetic_history(int(size))
    compactor = _compactor(model_kind)
    # A first small plan in both runs: loading the judge's weights and imports are not the plan's.
    asyncio.run(compactor.plan(tt.CompactionRequest(synthetic_history(200, seed=1))))
    if what == "plan":
        outcome = asyncio.run(compactor.plan(tt.CompactionRequest(messages)))
        assert outcome.plan is not None, outcome


def print_instructions(sizes: list[int], model_kind: str) -> None:
    """One row per size: instructions of one plan, and per message."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    print(f"{'messages':>9} {'plan instructions':>18} {'per message':>12}")
    for size in sizes:
        plan = instructions(size, True, model_kind) - instructions(size, False, model_kind)
        print(f"{size:>9,} {plan:>18,} {plan / size:>12,.0f}")


def main() -> None:
    """Print one row per size: history characters, median plan time, time per message, peak memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default=None, help="default 100,1000,10000,100000 (1000,10000 with --instructions)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--model",
        choices=("learned", "scripted"),
        default="learned",
        help="learned: the default in-process judge (default); scripted: a zero-latency remote-style "
        "model, which adds the observation and batching stages",
    )
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    if args.instructions:
        print_instructions([int(n) for n in (args.sizes or "1000,10000").split(",")], args.model)
        return
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
    for size in (int(s) for s in (args.sizes or "100,1000,10000,100000").split(",")):
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
