"""Planning overhead without model latency: time and peak memory for 100 to 100,000 messages.

Run: python benchmarks/bench_plan.py [--sizes 100,1000,10000,100000] [--repeat 3]
     python benchmarks/bench_plan.py --instructions [--sizes 1000,10000]
     python benchmarks/bench_plan.py --stages [--sizes 10000,100000]
     python benchmarks/bench_plan.py --alone [--sizes 10000,100000]

``--stages`` plans each size (smaller ones several times) while another thread samples the planning
thread's stack, and prints each stage's seconds (`STAGES`: the plan's time split by the samples'
shares), and, for the last size against the first, each stage's time per message over the first
size's: 1.0 is linear.

``--alone`` times the stages that can run by themselves (loading, pairing, the judge's history pass,
the judge's whole answer, the token counts, choosing the actions with the repeat search and the
excerpts, the rebuild) each on its own, on the inputs a plan gives it, the best
CPU time of ``--repeat`` runs with the garbage collector off: how each stage scales apart from what
the rest of a plan leaves in memory around it.

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
import gc
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import attrs

import tracetrim as tt
from tracetrim._tokens import estimate_tokens, token_counts
from tracetrim.compactor._actions import choose_actions
from tracetrim.compactor._judging import history_view, probabilities_of, stated_plan
from tracetrim.compactor._pairs import find_pairs, protected_messages
from tracetrim.compactor._rebuild import rebuild
from tracetrim.compactor._transcript import load_transcript
from tracetrim.decision import LearnedDecisionModel, ScriptedDecisionModel
from tracetrim.decision._census import TermCensus
from tracetrim.decision._feature_index import HistoryIndex, Targets
from tracetrim.decision._goal import default_goal

TOOLS = ("read_file", "search_code", "run_tests", "grep_logs")
REF = "0" * 64
"""The archive reference the markers of a plan timed stage by stage name."""


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


STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "load": (("compactor/_transcript.py", "load_transcript"),),
    "pairing": (("compactor/_pairs.py", "find_pairs"), ("compactor/_pairs.py", "protected_messages")),
    "judge history pass": (("decision/_feature_index.py", "__init__"),),
    "rest of judging": (("compactor/_asking.py", "judge"),),
    "repeats": (("compactor/_repeats.py", "repeated_results"),),
    "rebuild+excerpts": (("compactor/_rebuild.py", "rebuild"), ("compactor/_excerpt.py", "salience")),
    "stats": (
        ("_tokens.py", "token_counts"),
        ("compactor/_budget.py", "rebuilt_tokens"),
        ("compactor/_budget.py", "rewrite_tokens"),
        ("compactor/_flow.py", "rebuilt_length"),
        ("compactor/_flow.py", "pair_decisions"),
    ),
}
"""Each stage's functions, by the end of their file's path and their name. A sample is the stage of
the innermost of them on the stack (the judge's history pass runs inside judging, and is its own)."""
SAMPLE_S = 0.0005
"""How often the stage sampler looks at the planning thread's stack."""


def _stage_of(code: Any, known: dict[Any, str | None]) -> str | None:
    if code not in known:
        path = code.co_filename.replace("\\", "/")
        known[code] = next(
            (
                name
                for name, wanted in STAGES.items()
                if any(code.co_name == f and path.endswith("tracetrim/" + end) for end, f in wanted)
            ),
            None,
        )
    return known[code]


def stage_seconds(
    messages: list[dict[str, Any]], model_kind: str = "learned", runs: int = 1
) -> dict[str, float]:
    """Seconds of each stage of `STAGES` (and "other" and "plan", the whole) in ``runs`` plans, by
    sampling the planning thread's stack every `SAMPLE_S` from another thread: no profiler hook runs
    on each call, so every stage is slowed alike (a few per cent) and the shares are the plan's own."""
    compactor = _compactor(model_kind)
    asyncio.run(compactor.plan(tt.CompactionRequest(synthetic_history(200, seed=1))))  # loads the judge
    counts = dict.fromkeys([*STAGES, "other"], 0)
    known: dict[Any, str | None] = {}
    planner = threading.get_ident()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            frame = sys._current_frames().get(planner)
            stage = None
            while frame is not None and stage is None:
                stage = _stage_of(frame.f_code, known)
                frame = frame.f_back
            counts[stage or "other"] += 1

    switch = sys.getswitchinterval()
    sys.setswitchinterval(SAMPLE_S / 2)  # the sampler gets the interpreter when it asks for it
    sampler = threading.Thread(target=sample, daemon=True)
    seconds = 0.0
    try:
        sampler.start()
        for _ in range(runs):
            seconds += timed_plan(messages, model_kind)[0]
    finally:
        done.set()
        sampler.join()
        sys.setswitchinterval(switch)
    total = sum(counts.values()) or 1
    found = {name: seconds * n / total for name, n in counts.items()}
    found["plan"] = seconds
    return found


def print_stages(sizes: list[int], model_kind: str, repeat: int) -> None:
    """One column per size (seconds and share of the plan), and each stage's per-message ratio."""
    measured = {}
    for size in sizes:
        runs = max(1, repeat * 10_000 // size) if size < 100_000 else 1  # samples enough at every size
        seconds = stage_seconds(synthetic_history(size), model_kind, runs)
        measured[size] = {name: value / runs for name, value in seconds.items()}
    first, last = sizes[0], sizes[-1]
    ratio = len(sizes) > 1
    head = f"{'stage':<20}" + "".join(f"{f'{size:,} s':>12}{'share':>7}" for size in sizes)
    print(head + (f"{f'per msg {last // first}x':>14}" if ratio else ""))
    for name in [*STAGES, "other", "plan"]:
        row = f"{name:<20}"
        for size in sizes:
            seconds = measured[size][name]
            row += f"{seconds:>12.3f}{seconds / measured[size]['plan']:>7.1%}"
        if ratio and measured[first][name] > 0:
            per = (measured[last][name] / last) / (measured[first][name] / first)
            row += f"{per:>14.2f}"
        print(row)


def alone_seconds(messages: list[dict[str, Any]], repeat: int) -> dict[str, float]:
    """The best CPU seconds of ``repeat`` runs of each stage that runs by itself, on the
    inputs a plan gives it, with the garbage collector off as a plan has it."""
    config = _compactor().config
    transcript = load_transcript(messages, config.max_transcript_chars)
    copied = transcript.messages

    def pairing() -> Any:
        protected = protected_messages(
            copied, preserve_recent=config.preserve_recent_messages, protected_ids=(), pinned_ids=()
        )
        return find_pairs(
            copied, eligible_tools=config.eligible_tools, protected=protected, protected_call_ids=()
        )

    pairs = pairing()
    view = history_view(
        copied, pairs, goal=default_goal(copied), next_action=stated_plan(copied), census=True
    )
    judge = LearnedDecisionModel()
    judged = {pair.result_message for pair in view.pairs}
    targets = Targets.of(view.messages, view.goal, view.next_action)
    answers = judge.judge(view)  # fills view.census, as the plan's judge does
    tokens = token_counts(copied, estimate_tokens)
    candidates = [pair for pair in pairs if pair.candidate]
    probabilities = probabilities_of(view, answers)

    def actions() -> Any:
        return choose_actions(
            copied,
            pairs,
            candidates,
            probabilities,
            config=config,
            ref=REF,
            tokens=tokens,
            count=estimate_tokens,
            census=answers.census,
        )

    chosen = actions()
    work = {
        "load": lambda: load_transcript(messages, config.max_transcript_chars),
        "pairing": pairing,
        "judge history pass": lambda: HistoryIndex(view.messages, judged, targets, TermCensus()),
        "judge, whole answer": lambda: judge.judge(attrs.evolve(view, census=TermCensus())),
        "token counts": lambda: token_counts(copied, estimate_tokens),
        "actions+repeats+excerpts": actions,
        "rebuild": lambda: rebuild(
            copied,
            pairs,
            chosen.actions,
            archive_ref=REF,
            shortening=chosen.shortening,
            tombstones=config.tombstones,
            pointers=chosen.pointers,
        ),
    }
    best = {}
    for name, stage in work.items():
        times = []
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            started = time.process_time()
            stage()
            times.append(time.process_time() - started)
            gc.enable()
        best[name] = min(times)
    return best


def print_alone(sizes: list[int], repeat: int) -> None:
    """One column per size (best seconds), and each stage's per-message ratio, last size to first."""
    measured = {size: alone_seconds(synthetic_history(size), repeat) for size in sizes}
    first, last = sizes[0], sizes[-1]
    head = f"{'stage, alone':<26}" + "".join(f"{f'{size:,} s':>12}" for size in sizes)
    print(head + (f"{f'per msg {last // first}x':>14}" if len(sizes) > 1 else ""))
    for name in measured[first]:
        row = f"{name:<26}" + "".join(f"{measured[size][name]:>12.3f}" for size in sizes)
        if len(sizes) > 1:
            row += f"{(measured[last][name] / last) / (measured[first][name] / first):>14.2f}"
        print(row)


def main() -> None:
    """Print one row per size: history characters, median plan time, time per message, peak memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default=None, help="default 100,1000,10000,100000 (1000,10000 with --instructions)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    parser.add_argument(
        "--stages", action="store_true", help="per-stage seconds (sampled), and their growth per message"
    )
    parser.add_argument(
        "--alone", action="store_true", help="the stages that run by themselves, each timed alone"
    )
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
    if args.stages:
        print_stages([int(n) for n in (args.sizes or "10000,100000").split(",")], args.model, args.repeat)
        return
    if args.alone:
        print_alone([int(n) for n in (args.sizes or "10000,100000").split(",")], args.repeat)
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
