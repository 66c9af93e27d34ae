"""Time against hostile text: each shape an attacker can put in a tool result, a server reply or a file, at
two sizes, and how the time grew (4x the input should take about 4x the time, never 16x).

Run: python benchmarks/bench_hostile.py [--size 300000]

Plans put the hostile text in one result of a 60-message `bench_plan.synthetic_history` and plan it with
the default judge. The readers take the text itself: a shortened-result note after megabytes quoting its
prefix, URLs to redact in a server's echo, a chat server's JSON reply of unclosed braces, a Gemini CLI
log of many rewinds, a turn of calls answered in reverse (Ollama), assistant turns in a row written
as LangChain messages and as a Gemini CLI session. Times are the best of three.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_plan import plan_once, synthetic_history

from tracetrim._logging import redact_urls
from tracetrim._marker import MARKER_PREFIX, TOMBSTONE_PREFIX, parse_shortened_note, shortened_note
from tracetrim.decision import DecisionModelError
from tracetrim.decision._chat_logprobs import json_probability
from tracetrim.formats import HISTORY_FORMATS
from tracetrim.formats._gemini_cli import fold_log

_QUOTED_NOTE = MARKER_PREFIX + "x call y was shortened from 1 to 2 characters"

RESULTS: dict[str, Callable[[int], str]] = {
    "one long line": lambda n: "a" * n,
    "words on one line": lambda n: " ".join(f"w{i}" for i in range(n // 8)),
    "one line repeated": lambda n: "same line again\n" * (n // 16),
    "distinct lines": lambda n: "".join(f"line {i} tok{i}\n" for i in range(n // 16)),
    "quoted note prefixes": lambda n: _QUOTED_NOTE * (n // 70),
    "quoted tombstones": lambda n: (TOMBSTONE_PREFIX + "x call y (") * (n // 30),
    "error words": lambda n: "Traceback error failed exception " * (n // 32),
    "brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "line ends": lambda n: "\n" * n,
    "non-ASCII": lambda n: "é漢🙂" * (n // 3),
    "long identifiers": lambda n: " ".join("camelCase_" + "x" * 1000 for _ in range(n // 1000)),
}
"""What one tool result holds: text of about ``n`` characters."""


def _plan_with(text: str) -> float:
    history = synthetic_history(60)
    for message in history:
        for block in message["content"]:
            if block["type"] == "tool_result" and block["id"] == "c10":
                block["output"] = text
    return plan_once(history)[0]


def _note(n: int) -> Any:
    return parse_shortened_note(_QUOTED_NOTE * (n // 70) + shortened_note("fetch", "c1", n, 900, ""))


def _braces(n: int) -> Any:
    try:
        return json_probability("{" * n)
    except DecisionModelError:
        return None


def _rewinds(n: int) -> Any:
    meta = {"sessionId": "s", "projectHash": "p", "startTime": "t", "lastUpdated": "t"}
    lines: list[Any] = [meta]
    lines += [{"id": f"r{k}", "type": "user", "content": "x", "timestamp": "t"} for k in range(n // 100)]
    for k in range(n // 100):
        lines += [{"id": f"x{k}", "type": "user", "content": "y", "timestamp": "t"}, {"$rewindTo": f"x{k}"}]
    return fold_log(lines)


def _ollama_reversed(n: int) -> Any:
    calls = [{"function": {"name": "f", "arguments": {}}, "id": f"c{k}"} for k in range(n // 50)]
    tools = [{"role": "tool", "tool_call_id": f"c{k}", "content": "ok"} for k in reversed(range(n // 50))]
    turn = {"role": "assistant", "content": "", "tool_calls": calls}
    return HISTORY_FORMATS["ollama"].read([{"role": "user", "content": "hi"}, turn, *tools], {})


def _assistant_turns(fmt: str) -> Callable[[int], Any]:
    def write(n: int) -> Any:
        turns = [
            {"id": f"m{k}", "role": "assistant", "content": [{"type": "text", "text": "a"}]}
            for k in range(n // 50)
        ]
        return HISTORY_FORMATS[fmt].write(
            [{"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}, *turns]
        )

    return write


READERS: dict[str, Callable[[int], Any]] = {
    "note after quoted prefixes": _note,
    "URLs after a.a.a...": lambda n: redact_urls("a." * (n // 2) + "https://u:key@h"),
    "JSON reply of braces": _braces,
    "Gemini CLI log of rewinds (n/100 records)": _rewinds,
    "Ollama calls answered in reverse (n/50)": _ollama_reversed,
    "LangChain write, assistant turns (n/50)": _assistant_turns("langchain"),
    "Gemini CLI write, assistant turns (n/50)": _assistant_turns("gemini-cli"),
}


def _best(work: Callable[[], Any]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Print each shape's time at ``--size`` and at four times it, and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300_000, help="characters of hostile text (and 4x)")
    size = parser.parse_args().size
    print(f"{'shape':46s} {'at n':>9s} {'at 4n':>9s} {'ratio':>6s}   (n = {size:,} characters)")
    rows: list[tuple[str, Callable[[int], Any]]] = [
        (f"plan: {name}", lambda n, make=make: _plan_with(make(n))) for name, make in RESULTS.items()
    ]
    rows += [(f"read: {name}", read) for name, read in READERS.items()]
    for name, work in rows:
        small = _best(lambda work=work: work(size))
        large = _best(lambda work=work: work(4 * size))
        print(f"{name:46s} {small:8.3f}s {large:8.3f}s {large / max(small, 1e-9):6.1f}")


if __name__ == "__main__":
    main()
