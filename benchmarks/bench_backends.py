"""Plan wall time per HTTP backend and ``max_concurrency`` against local stand-ins with 50 ms latency.

Run: ``.venv/bin/python benchmarks/bench_backends.py``. With ``max_concurrency`` 4 and more, the wall
time should come close to the longest single batch rather than the sum of all batches.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from _decision_servers import ChatStandIn, DecisionsStandIn, StandIn  # noqa: E402
from conftest import SCENARIO_NAMES, load_scenario  # noqa: E402

import tracetrim as tt  # noqa: E402
from tracetrim.decision._chat_logprobs import ChatLogprobsModel  # noqa: E402
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel  # noqa: E402
from tracetrim.decision._protocol import DecisionModel  # noqa: E402

LATENCY_S = 0.05
CONCURRENCY = (1, 4, 16)
MAX_QUESTIONS = 6  # small batches, so each plan has several to run side by side


def _model(backend: str, server: StandIn, concurrency: int) -> DecisionModel:
    if backend == "openai":
        return OpenAIDecisionsModel(api_key="bench", base_url=server.url)
    return ChatLogprobsModel(server.url, "bench", max_concurrency=concurrency)


async def _plan(backend: str, scenario: dict[str, Any], concurrency: int) -> dict[str, Any]:
    server: StandIn = (
        DecisionsStandIn(key="bench", latency_s=LATENCY_S)
        if backend == "openai"
        else ChatStandIn(latency_s=LATENCY_S)
    )
    with server:
        config = tt.CompactorConfig(
            eligible_tools=scenario["eligible_tool_names"],
            minimum_reduction=0.0,
            max_questions=MAX_QUESTIONS,
            max_concurrency=concurrency,
        )
        compactor = tt.Compactor(
            _model(backend, server, concurrency),
            config=config,
            execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW, budget_s=60.0),
        )
        request = tt.CompactionRequest(
            scenario["messages"],
            goal=scenario["goal"],
            next_action=scenario["next_action"],
            protected_message_ids=scenario["protected_message_ids"],
            protected_call_ids=scenario["protected_call_ids"],
        )
        started = time.perf_counter()
        outcome = await compactor.plan(request)
        wall = time.perf_counter() - started
    assert outcome.plan is not None, (outcome.status, outcome.reason, outcome.detail)
    http = len(server.requests)
    # The best any schedule can do: waves of `concurrency` requests (one wave is the longest batch).
    floor = LATENCY_S * -(-http // concurrency)
    return {
        "batches": outcome.plan.stats.requests,
        "http": http,
        "wall_ms": wall * 1000,
        "floor_ms": floor * 1000,
        "serial_ms": LATENCY_S * http * 1000,
    }


async def main() -> None:
    """Print one row per backend, scenario and concurrency."""
    print(
        f"{'backend':8} {'scenario':22} {'conc':>4} {'batches':>7} {'http':>5} {'wall ms':>8} "
        f"{'floor ms':>8} {'serial ms':>9}"
    )
    for backend in ("openai", "chat"):
        for name in SCENARIO_NAMES:
            scenario = load_scenario(name)
            for concurrency in CONCURRENCY:
                row = await _plan(backend, scenario, concurrency)
                print(
                    f"{backend:8} {name:22} {concurrency:>4} {row['batches']:>7} {row['http']:>5} "
                    f"{row['wall_ms']:>8.0f} {row['floor_ms']:>8.0f} {row['serial_ms']:>9.0f}"
                )


if __name__ == "__main__":
    asyncio.run(main())
