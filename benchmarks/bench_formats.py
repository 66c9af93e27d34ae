"""Reading and writing a history in each format: the time the command line and the service spend at the
edge, before and after a plan.

Run: python benchmarks/bench_formats.py [--sizes 1000,10000] [--repeat 3] [--formats openai,claude-code]

A read is `HistoryFormat.read` as `tracetrim compact` and ``POST /v1/compact_context`` call it: the
format's reader, the shape check, and its writer run on what was read (a file is taken in only if it can
be given back). A write is `HistoryFormat.write` of the neutral history a plan hands back (a
`ValidatedHistory`, as the runner's own messages are). Histories are `bench_plan.synthetic_history`
written in each format (an ADK session's events built from its Gemini contents, a Copilot CLI
session's events from its messages); times are the best
CPU time of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_plan import synthetic_history

from tracetrim.formats import HISTORY_FORMATS
from tracetrim.formats._common import ValidatedHistory

FORMATS = (
    "openai",
    "anthropic",
    "responses",
    "gemini",
    "claude-code",
    "codex",
    "gemini-cli",
    "adk",
    "swe-agent",
    "copilot-cli",
)


def _copilot_events(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` as a Copilot CLI session's events (a user message, an assistant message with its
    calls, a completion for each result)."""
    events: list[dict[str, Any]] = []

    def add(kind: str, data: dict[str, Any]) -> None:
        parent = events[-1]["id"] if events else None
        events.append(
            {"type": kind, "data": data, "id": f"e{len(events)}", "timestamp": "t", "parentId": parent}
        )

    for message in history:
        text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
        if message["role"] != "assistant":
            add("user.message", {"content": text})
            continue
        calls = [b for b in message["content"] if b["type"] == "tool_call"]
        requests = [
            {"toolCallId": c["id"], "name": c["name"], "arguments": json.loads(c["input"])} for c in calls
        ]
        add("assistant.message", {"content": text, "toolRequests": requests})
        for block in message["content"]:
            if block["type"] == "tool_result":
                result = {"content": block["output"]}
                add("tool.execution_complete", {"toolCallId": block["id"], "success": True, "result": result})
    return events


def _document(name: str, history: list[dict[str, Any]]) -> Any:
    """``history`` as a file of format ``name`` holds it."""
    if name == "copilot-cli":  # its writer takes only a session read as one
        return _copilot_events(history)
    if name != "adk":
        return HISTORY_FORMATS[name].write_document(history)
    contents = HISTORY_FORMATS["gemini"].write_document(history)["contents"]
    events = [
        {
            "id": f"e{n}",
            "invocationId": "i",
            "author": "user" if c["role"] == "user" else "coder",
            "content": c,
        }
        for n, c in enumerate(contents)
    ]
    return {"id": "s", "appName": "bench", "userId": "u", "state": {}, "events": events}


def _best(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    """Print one row per format and size: messages, the file's characters, read and write seconds."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    print(f"{'format':>12} {'messages':>9} {'characters':>12} {'read s':>8} {'write s':>8}")
    for size in (int(s) for s in args.sizes.split(",")):
        history = synthetic_history(size)
        for name in args.formats.split(","):
            fmt = HISTORY_FORMATS[name]
            document = _document(name, history)
            text = json.dumps(document)
            messages, fields = fmt.split(json.loads(text))
            neutral = fmt.read(messages, fields)
            read = _best(lambda: fmt.read(messages, fields), args.repeat)  # noqa: B023
            write = _best(lambda: fmt.write(ValidatedHistory(neutral)), args.repeat)  # noqa: B023
            print(f"{name:>12} {size:>9,} {len(text):>12,} {read:>8.3f} {write:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
