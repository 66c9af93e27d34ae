"""`tracetrim demo`: judge the bundled example histories with the default (learned) judge in SHADOW mode."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from tracetrim._examples import NAMES, load_example
from tracetrim._scope import Scope
from tracetrim.cli._table import decision_table, paragraph, quality_table
from tracetrim.compactor import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode, Outcome
from tracetrim.decision import LearnedDecisionModel
from tracetrim.learn._quality import example_rows


def register(commands: Any) -> None:
    """Add the ``demo`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "demo", help="compact the bundled example histories and show the decisions and savings"
    )
    parser.add_argument("--example", choices=NAMES, action="append", help="only this example (repeatable)")
    parser.set_defaults(handler=run)


async def plan_example(name: str) -> tuple[dict[str, Any], Outcome]:
    """Plan one bundled example in SHADOW mode with the default judge (the shipped weights, which
    were trained on the real runs and on these two labelled histories among them)."""
    example = load_example(name)
    config = CompactorConfig(eligible_tools=example["eligible_tool_names"], **example["options"])
    compactor = Compactor(LearnedDecisionModel(), config=config, execution=ExecutionOptions(mode=Mode.SHADOW))
    request = CompactionRequest(
        example["messages"],
        example["goal"],
        example["next_action"],
        protected_message_ids=example["protected_message_ids"],
        protected_call_ids=example["protected_call_ids"],
        # A scope, so the SHADOW proposal reads as ENFORCE's would (markers say the original is archived).
        scope=Scope("demo", "shadow", name),
    )
    return example, await compactor.plan(request)


def run(args: argparse.Namespace) -> int:
    """Print, per example, each pair's verdict and the characters saved, then the quality table."""
    names = args.example or NAMES
    for name in names:
        example, outcome = asyncio.run(plan_example(name))
        print(f"\n== {name}: {outcome.status.value} {outcome.reason} ==")
        print(paragraph(f"goal: {example['goal']}", indent="  "))
        if outcome.plan is None:
            print(outcome.detail)
            continue
        print(decision_table(outcome.plan))
    print("\n== quality against the examples' labels, next to common baselines ==")
    print(quality_table(asyncio.run(example_rows(names))))
    print(
        "\nThe default judge's weights saw these two histories in training, so its rows above are\n"
        "in-sample; docs/measured.md shows each one judged by a model that never saw it."
    )
    print("\nSHADOW mode: nothing was changed or archived. ENFORCE and restoring: docs/library.md.")
    return 0
