"""SHADOW mode: judge real histories without changing them, and keep every record as a JSON line.

Run: ``python examples/shadow_audit.py [RECORDS.jsonl] [HISTORY.json ...]`` (core install only; no network,
no keys). Without histories it audits the example histories bundled with tracetrim. Each history is
planned by the embedded default model in SHADOW mode: ``compact`` returns None (the host keeps its own
compaction) and the observer writes one record per plan. Summarise the file later with
``tracetrim audit RECORDS.jsonl`` or any JSON-lines tool.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import tracetrim as tt


def histories(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The histories to audit: the given files, else the bundled examples."""
    if paths:
        return [(p, json.loads(Path(p).read_text(encoding="utf-8"))) for p in paths]
    bundled = resources.files("tracetrim") / "_examples"
    return [
        (entry.name, json.loads(entry.read_text(encoding="utf-8")))
        for entry in sorted(bundled.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]


async def main(out: Path, paths: list[str]) -> None:
    """Plan each history in SHADOW mode and append its record to ``out``."""
    append = tt.JsonLinesObserver(out)
    last: list[tt.Record] = []

    def write(record: tt.Record) -> None:
        append(record)
        last[:] = [record]

    reasons: Counter[str] = Counter()
    for name, data in histories(paths):
        info = data if isinstance(data, dict) else {"messages": data}
        compactor = tt.Compactor(
            config=tt.CompactorConfig(eligible_tools=info.get("eligible_tool_names", [])),
            execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW, version="audit-1", observer=write),
        )
        request = tt.CompactionRequest(
            info["messages"],
            info.get("goal", ""),
            info.get("next_action", ""),
            scope=tt.Scope("audit", "shadow", name),
        )
        adopted = await compactor.compact(request)  # SHADOW: always None, the host's history stands
        record = last[0]
        reasons[record.reason] += 1
        print(
            f"{name}: {record.status}/{record.reason}, would save {record.reduction:.0%}, "
            f"actions {record.actions}, adopted={adopted is not None}"
        )
    print(f"{sum(reasons.values())} records appended to {out}; reasons: {dict(reasons)}")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("shadow_records.jsonl")
    asyncio.run(main(target, sys.argv[2:]))
