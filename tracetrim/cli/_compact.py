"""`tracetrim compact`: plan one or many histories and write the proposal (or result) as JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tracetrim._convert import to_json_object
from tracetrim._scope import Scope
from tracetrim.archive import Archive
from tracetrim.cli._archive_args import add_archive_arguments, open_archive
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import DEFAULT_TOOLS, FORMATS, from_neutral, to_neutral
from tracetrim.cli._input import HistoryFile, read_history
from tracetrim.cli._model_options import add_model_arguments, model_from_args
from tracetrim.cli._settings import add_config_arguments, build_config
from tracetrim.compactor import CompactionRequest, Compactor, ExecutionOptions, Mode, Outcome
from tracetrim.decision import DecisionModel
from tracetrim.formats import MESSAGES_KEY


def register(commands: Any) -> None:
    """Add the ``compact`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "compact", help="compact histories (neutral snapshot JSON) and print the proposal as JSON"
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="history JSON files, or - for stdin")
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="neutral",
        help=(
            "messages in and out: neutral snapshot (default), OpenAI chat-completions or Responses items; "
            "mini-swe-agent (.traj.json) and swe-agent (.traj) trajectories are read only: their output is "
            "the neutral snapshot; for mini-swe-agent --eligible-tools defaults to its one tool, bash"
        ),
    )
    parser.add_argument("--goal", default=None, help="what the agent is trying to do")
    parser.add_argument("--next-action", default=None, help="what the agent does next")
    parser.add_argument(
        "--mode",
        choices=("shadow", "enforce"),
        default="shadow",
        help="shadow: propose only (default); enforce: archive the original, then adopt",
    )
    add_archive_arguments(parser, required=False)
    parser.add_argument(
        "--budget", type=float, default=30.0, metavar="S", help="deadline for decisions, seconds"
    )
    parser.add_argument("--output-dir", metavar="DIR", help="write one JSON result per input file here")
    add_config_arguments(parser)
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def _archive(args: argparse.Namespace) -> tuple[Archive | None, Scope | None]:
    if args.mode != "enforce":
        return None, None
    opened = open_archive(args, must_exist=False)
    if opened is None:
        raise CliError("--mode enforce needs --archive DIR: the original is saved before it is replaced")
    return opened


def result_document(outcome: Outcome) -> dict[str, Any]:
    """The JSON written for one history: status, reason, detail and the plan's fields."""
    document: dict[str, Any] = {
        "status": outcome.status.value,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "changed": outcome.adopted,
    }
    if outcome.plan is not None:
        document.update(to_json_object(outcome.plan))
    return document


async def _compact_one(
    args: argparse.Namespace, history: HistoryFile, model: DecisionModel
) -> dict[str, Any]:
    archive, scope = _archive(args)
    eligible = history.eligible_tools or DEFAULT_TOOLS.get(args.format, ())
    config = build_config(args, history.options, eligible)
    if not config.eligible_tools:
        raise CliError(f"{history.source}: no eligible tools; pass --eligible-tools or 'eligible_tool_names'")
    execution = ExecutionOptions(mode=Mode(args.mode), budget_s=args.budget)
    compactor = Compactor(model, config=config, execution=execution, archive=archive)
    request = CompactionRequest(
        to_neutral(history.messages, args.format, history.source),
        args.goal if args.goal is not None else history.goal,
        args.next_action if args.next_action is not None else history.next_action,
        scope=scope,
        protected_message_ids=history.protected_message_ids,
        protected_call_ids=history.protected_call_ids,
    )
    document = result_document(await compactor.plan(request))
    if "messages" in document:
        document["messages"] = from_neutral(document["messages"], args.format)
    return document


def _progress(done: int, total: int) -> None:
    filled = 30 * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    """Compact each file; one file prints its JSON, many need --output-dir and show progress."""
    if len(args.files) > 1 and not args.output_dir:
        raise CliError("several files need --output-dir DIR (one JSON result per file)")
    if args.files.count("-") > 1:
        raise CliError("stdin (-) can be read only once")
    model = model_from_args(args)
    failures = 0
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for done, source in enumerate(args.files, start=1):
        history = read_history(source, MESSAGES_KEY.get(args.format, "messages"))
        document = asyncio.run(_compact_one(args, history, model))
        failures += document["status"] == "ERROR"
        text = json.dumps(document, ensure_ascii=False, indent=2)
        if out_dir is None:
            print(text)
        else:
            name = "stdin" if source == "-" else Path(source).stem
            (out_dir / f"{name}.json").write_text(text + "\n", encoding="utf-8")
            _progress(done, len(args.files))
    return 1 if failures else 0
