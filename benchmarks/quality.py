"""Quality benchmark: tracetrim against masking baselines on labelled scenarios and real trajectories.

Run from the repository root:

    .venv/bin/python benchmarks/quality.py            # everything: all 200 tau-bench trajectories, ~5 s
    .venv/bin/python benchmarks/quality.py --tau-limit 40 --per-history

Histories:
- ../shared/scenarios/*.json: labelled; checks critical/protected/must_contain/irrelevant.
- ../shared/data/tau-bench/gpt-4o-airline.json: each trajectory is cut just before the agent's last write
  action (a tool named in ``info.task.actions`` that only changes state) and the prefix is compacted.
  Evidence: every value of ``info.task.actions`` (ids, flight numbers, dates, amounts >= 100) that the
  agent first saw in a tool result of the prefix must still be in the compacted prefix.
- ../shared/data/swe-agent/*.traj: each ``history`` is converted by `tracetrim.formats.from_swe_agent_history`
  (text actions become calls named by the command's first word, the next observation their result) and
  compacted whole; every tool but ``submit`` is eligible. Quoted: observations with a line (10+
  characters) that reappears in a later assistant text or tool-call argument; counted kept when the
  observation is still verbatim.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetrim._quality import (  # noqa: E402
    Case,
    Check,
    Count,
    QualityRow,
    Strategy,
    evaluate,
    format_table,
    standard_strategies,
    strings_of,
    total,
)
from tracetrim._snapshot import Message  # noqa: E402
from tracetrim.decision import BinaryQuestion, LexicalDecisionModel  # noqa: E402
from tracetrim.formats import from_openai_chat  # noqa: E402
from tracetrim.formats._swe_agent import load_swe_agent_traj  # noqa: E402

SHARED = REPO.parent / "shared"

# Read-only tools of the tau-bench airline domain: the host would opt these in, never the writes.
TAU_READ_TOOLS = frozenset(
    {
        "get_user_details",
        "get_reservation_details",
        "search_direct_flight",
        "search_onestop_flight",
        "list_all_airports",
        "calculate",
        "think",
    }
)
SWE_NOT_ELIGIBLE = frozenset({"submit"})


# --- conversion -------------------------------------------------------------------------------------
# tau-bench trajectories are OpenAI chat-completions messages: `tracetrim.formats.from_openai_chat`;
# SWE-agent histories go through `tracetrim.formats.from_swe_agent_history`, the one converter for them.


def _evidence_values(actions: Sequence[Mapping[str, Any]]) -> set[str]:
    values: set[str] = set()
    for action in actions:
        for value in strings_of_any(action.get("kwargs", {})):
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float):
                if abs(value) >= 100:
                    values.add(str(int(value)) if float(value).is_integer() else str(value))
            elif isinstance(value, str) and len(value) >= 4 and any(c.isdigit() for c in value):
                values.add(value)
    return values


def strings_of_any(value: Any) -> list[Any]:
    """Every leaf (string or number) of a JSON value."""
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in strings_of_any(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in strings_of_any(item)]
    return [value]


def _message_strings(message: Message) -> str:
    return "\n".join(strings_of(message.get("content", [])))


def tau_cases(path: Path, limit: int | None) -> list[tuple[Case, set[str]]]:
    """Prefixes of tau-bench trajectories (cut before the last write) and their evidence values."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if limit:
        # Every k-th trajectory, so all 50 tasks stay represented when trials are subsampled.
        data = data[:: max(1, len(data) // limit)][:limit]
    cases: list[tuple[Case, set[str]]] = []
    for item in data:
        actions = item["info"]["task"]["actions"]
        writes = {a["name"] for a in actions} - TAU_READ_TOOLS
        traj = item["traj"]
        cut = len(traj)
        for i, message in enumerate(traj):
            if any(c["function"]["name"] in writes for c in message.get("tool_calls") or ()):
                cut = i
        messages = from_openai_chat(traj[:cut])
        first_seen: dict[str, str] = {}
        wanted = _evidence_values(actions)
        for message in messages:
            text = _message_strings(message)
            is_result = any(b["type"] == "tool_result" for b in message["content"])
            for value in wanted - first_seen.keys():
                if value in text:
                    first_seen[value] = "result" if is_result else "other"
        evidence = {v for v, where in first_seen.items() if where == "result"}
        name = f"tau-{item['task_id']}-{item['trial']}"
        case = Case(name=name, messages=messages, eligible_tools=TAU_READ_TOOLS, minimum_reduction=0.0)
        carriers = {
            p.call_id for p in case.candidates()[1] if any(v in (p.result_text or "") for v in evidence)
        }
        cases.append((_with_oracle_ids(case, carriers), evidence))
    return cases


def _fields(case: Case) -> dict[str, Any]:
    return attrs.asdict(case, recurse=False)


def evidence_check(evidence: set[str]) -> Check:
    """A check counting how many of ``evidence``'s strings the compacted history still contains."""

    def check(case: Case, compacted: Sequence[Message]) -> Mapping[str, Count]:
        text = "\n".join(strings_of(list(compacted)))
        return {"evidence kept": Count(sum(1 for v in evidence if v in text), len(evidence))}

    return check


def _quoted_lines(observation: str, later: str) -> bool:
    return any(len(line.strip()) >= 10 and line.strip() in later for line in observation.splitlines())


def _spoken(message: Message) -> str:
    """What the agent itself wrote in ``message``: its text and its tool calls' arguments."""
    if message["role"] != "assistant":
        return ""
    parts: list[str] = []
    for block in message["content"]:
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "tool_call":
            parts.extend(strings_of(json.loads(block["input"])))
    return "\n".join(parts)


def swe_cases(folder: Path) -> list[tuple[Case, set[str]]]:
    """SWE-agent histories as neutral messages, with the ids of later-quoted observations."""
    cases: list[tuple[Case, set[str]]] = []
    for path in sorted(folder.glob("*.traj")):
        messages = load_swe_agent_traj(path)
        spoken = [_spoken(m) for m in messages]
        quoted: set[str] = set()
        for i, message in enumerate(messages):
            later = "\n".join(spoken[i + 1 :])
            quoted.update(
                block["id"]
                for block in message["content"]
                if block["type"] == "tool_result"
                and _quoted_lines("\n".join(strings_of(block["output"])), later)
            )
        tools = {b["name"] for m in messages for b in m["content"] if b["type"] == "tool_call"}
        case = Case(
            name=path.stem[:48],
            messages=messages,
            next_action=next((s for s in reversed(spoken) if s), ""),
            eligible_tools=frozenset(tools - SWE_NOT_ELIGIBLE),
            minimum_reduction=0.0,
        )
        cases.append((_with_oracle_ids(case, quoted), quoted))
    return cases


def _with_oracle_ids(case: Case, keep: set[str]) -> Case:
    """Attach the upper-bound table: results the check needs stay whole, the rest are shortened."""
    oracle = {p.call_id: ((1.0, 1.0) if p.call_id in keep else (1.0, 0.0)) for p in case.candidates()[1]}
    return Case(**{**_fields(case), "oracle": oracle})


def quoted_check(quoted: set[str]) -> Check:
    """A check counting how many of the ``quoted`` observations are still verbatim after compaction."""

    def check(case: Case, compacted: Sequence[Message]) -> Mapping[str, Count]:
        before = {b["id"]: b for m in case.messages for b in m["content"] if b["type"] == "tool_result"}
        after = {b["id"]: b for m in compacted for b in m["content"] if b["type"] == "tool_result"}
        kept = sum(1 for call_id in quoted if after.get(call_id) == before.get(call_id))
        return {"quoted kept": Count(kept, len(quoted))}

    return check


# --- speed ------------------------------------------------------------------------------------------


def lexical_speed(pairs: int = 100, repeats: int = 20) -> float:
    """Median milliseconds for the lexical model to judge a synthetic state of ``pairs`` calls."""
    history: list[dict[str, Any]] = []
    for i in range(pairs):
        history.append(
            {"message": 2 * i, "role": "user", "text": f"please look at module_{i} and report 42{i}"}
        )
        history.append(
            {
                "message": 2 * i + 1,
                "call": {
                    "key": f"t{i + 1}",
                    "call_id": f"c{i}",
                    "tool": "read_file",
                    "input": json.dumps({"path": f"src/pkg/module_{i % 37}.py"}),
                    "result": {
                        "state": "success",
                        "chars": 4000,
                        "preview": f"def f{i}():\n    return {i}\n" * 20,
                    },
                },
            }
        )
    state = {
        "goal": "fix the failing test in module_3",
        "next_action": "quote the exact error",
        "history": history,
    }
    questions = {f"{kind}_t{i + 1}": BinaryQuestion("?") for i in range(pairs) for kind in ("call", "result")}
    model = LexicalDecisionModel()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        asyncio.run(model(state, questions))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


# --- main -------------------------------------------------------------------------------------------


async def _rows(
    cases: Sequence[tuple[Case, set[str]]],
    strategies: Sequence[tuple[str, Strategy]],
    check: Callable[[set[str]], Check],
) -> list[QualityRow]:
    rows: list[QualityRow] = []
    for case, ids in cases:
        rows.extend(await evaluate(case, strategies, [check(ids)]))
    return rows


def _totals(
    label: str, rows: Sequence[QualityRow], strategies: Sequence[tuple[str, Strategy]]
) -> list[QualityRow]:
    return [total(label, name, [r for r in rows if r.strategy == name]) for name, _ in strategies]


def main() -> int:
    """Print the quality tables for the scenarios and the real trajectories."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder (default ../shared)")
    parser.add_argument(
        "--tau-limit", type=int, default=0, help="subsample tau-bench to N trajectories (0: all)"
    )
    parser.add_argument("--per-history", action="store_true", help="also print every real history's rows")
    args = parser.parse_args()
    strategies = standard_strategies()
    failures: list[str] = []

    scenario_rows: list[QualityRow] = []
    for path in sorted((args.shared / "scenarios").glob("*.json")):
        case = Case.from_scenario(json.loads(path.read_text(encoding="utf-8")))
        scenario_rows.extend(asyncio.run(evaluate(case, strategies)))
    print("## Labelled scenarios\n")
    print(format_table(scenario_rows))
    for row in scenario_rows:
        if row.strategy == "lexical" and row.labels is not None:
            if not row.labels.meets_targets:
                failures.append(f"{row.history}: label targets not met")
            if row.eligible_reduction < 0.55:
                failures.append(f"{row.history}: eligible reduction {row.eligible_reduction:.1%} < 55%")

    started = time.perf_counter()
    tau = tau_cases(args.shared / "data" / "tau-bench" / "gpt-4o-airline.json", args.tau_limit or None)
    tau_rows = asyncio.run(_rows(tau, strategies, evidence_check))
    seconds = time.perf_counter() - started
    print(
        f"\n## tau-bench airline: {len(tau)} trajectories, prefix before the last write ({seconds:.0f} s)\n"
    )
    if args.per_history:
        print(format_table(tau_rows) + "\n")
    tau_totals = _totals(f"tau-bench ({len(tau)})", tau_rows, strategies)
    print(format_table(tau_totals))
    by = {row.strategy: row for row in tau_totals}
    lex, k10 = by["lexical"], by["keep-last-10"]
    if lex.extra["evidence kept"].kept < k10.extra["evidence kept"].kept or lex.reduction < k10.reduction:
        failures.append("tau-bench: lexical keeps less evidence than keep-last-10 or reduces less")

    swe = swe_cases(args.shared / "data" / "swe-agent")
    swe_rows = asyncio.run(_rows(swe, strategies, quoted_check))
    print(f"\n## SWE-agent: {len(swe)} histories, whole history compacted\n")
    if args.per_history:
        print(format_table(swe_rows) + "\n")
    swe_totals = _totals(f"swe-agent ({len(swe)})", swe_rows, strategies)
    print(format_table(swe_totals))
    by = {row.strategy: row for row in swe_totals}
    lex, k10 = by["lexical"], by["keep-last-10"]
    if lex.extra["quoted kept"].kept < k10.extra["quoted kept"].kept or lex.reduction <= k10.reduction:
        failures.append(
            "swe-agent: lexical keeps fewer quoted observations than keep-last-10 or reduces less"
        )

    print(f"\nLexical model speed: {lexical_speed():.1f} ms median for a 100-pair state (target < 50 ms)")
    print("\nTargets: " + ("all met" if not failures else "NOT MET: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
