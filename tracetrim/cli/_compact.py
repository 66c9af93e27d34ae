"""`tracetrim compact`: plan one or many histories; write each result document, or the whole history file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from tracetrim._contract import answer
from tracetrim._convert import to_json_object
from tracetrim._json import pretty_json
from tracetrim.archive import SentDocument
from tracetrim.cli._archive_args import add_archive_arguments, closed_after, open_scoped_archive
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import add_format_arguments, as_owned, default_tools, from_neutral, to_neutral
from tracetrim.cli._input import HistoryFile, announce_formats, read_histories
from tracetrim.cli._model_options import add_model_arguments, model_from_args
from tracetrim.cli._records import add_records_argument, records_observer
from tracetrim.cli._settings import add_config_arguments, build_config
from tracetrim.cli._stdout import write_bytes
from tracetrim.cli._summary import RunSummary
from tracetrim.cli._whole import default_name, render, whole_file
from tracetrim.compactor import CompactionRequest, Compactor, ExecutionOptions, Mode, Outcome, Reason
from tracetrim.decision._remote import ModelOrJudge
from tracetrim.formats._common import ValidatedHistory


def register(commands: Any) -> None:
    """Add the ``compact`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "compact",
        help="compact histories in any supported format and print the proposal (or result) as JSON",
        description=(
            "Judge every old tool pair of each history and print the result as JSON, its messages in the "
            "history's own format. SHADOW (default) only proposes; ENFORCE archives the original first."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="history JSON files, or - for stdin")
    add_format_arguments(parser)
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
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        help="write one output per history here, named after its input (run.v1.json stays run.v1.json)",
    )
    parser.add_argument(
        "--emit",
        choices=EMITS,
        default="result",
        help="result (default): the result document (status, decisions, stats, messages in the file's "
        "format, its source); history: the whole file in its own shape, every other key kept, holding the "
        "messages to continue with (ENFORCE's adopted history, else the original)",
    )
    add_records_argument(parser)
    add_config_arguments(parser)
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


EMITS = ("result", "history")
"""What ``--emit`` writes per history: the result document, or the history itself as the whole file."""


def result_document(outcome: Outcome, sent: list[Any]) -> dict[str, Any]:
    """The JSON written for one history (``sent``, neutral): the outcome, the contract's ``messages``,
    ``proposal`` and ``changed`` (`tracetrim._contract`), and the plan's decisions and numbers."""
    contract = answer(outcome, sent)
    plan = outcome.plan
    return {
        "status": outcome.status.value,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "changed": contract.changed,
        "messages": contract.messages,
        "proposal": contract.proposal,
        "decisions": to_json_object(plan.decisions) if plan is not None else [],
        "stats": to_json_object(plan.stats) if plan is not None else None,
        "archive_ref": plan.archive_ref if plan is not None else "",
    }


def in_format(document: dict[str, Any], history: HistoryFile) -> dict[str, Any]:
    """The document with its histories in the input's format (``messages`` keeps Anthropic's ``system``).

    Unless ``changed``, ``messages`` is the history as the file has it: nothing to convert back.
    ``source`` names the input (``runs/a.json``, ``tau.json[3]``, ``stdin``)."""
    out: dict[str, Any] = {"format": history.format, "source": history.source}
    for key, value in document.items():
        if key == "messages" and not document.get("changed"):
            out["messages"] = history.messages
            if history.format == "anthropic" and "system" in history.fields:
                out["system"] = history.fields["system"]
        elif key == "messages" and isinstance(value, list):  # adopted: the plan's, validated by its runner
            out.update(from_neutral(ValidatedHistory(value), history.format, history.source))
        elif key == "proposal" and isinstance(value, list):
            written = from_neutral(ValidatedHistory(value), history.format, history.source)
            out[key] = written["messages"] if set(written) == {"messages"} else written
        else:
            out[key] = value
    return out


async def _compact_one(
    args: argparse.Namespace, history: HistoryFile, model: ModelOrJudge
) -> tuple[dict[str, Any], Outcome]:
    messages = to_neutral(history)
    called = _called_tools(messages)
    eligible = history.eligible_tools or default_tools(history.format)
    every_tool = args.eligible_tools == "*"
    if every_tool:
        eligible, args = called, argparse.Namespace(**{**vars(args), "eligible_tools": None})
    config = build_config(args, history.options, eligible)
    if not config.eligible_tools and not every_tool:  # '*' over a history without calls: nothing to do
        listed = ", ".join(sorted(called)) or "none"
        raise CliError(
            f"{history.source}: no eligible tools; pass --eligible-tools A,B (or '*' for every tool it "
            f"calls: {listed}) or 'eligible_tool_names' in the file"
        )
    opened = open_scoped_archive(args, must_exist=False) if args.mode == "enforce" else None
    if args.mode == "enforce" and opened is None:
        raise CliError("--mode enforce needs --archive URL: the original is saved before it is replaced")
    archive, scope = opened if opened is not None else (None, None)
    execution = ExecutionOptions(mode=Mode(args.mode), budget_s=args.budget, observer=records_observer(args))
    compactor = Compactor(model, config=config, execution=execution, archive=archive)
    request = CompactionRequest(
        as_owned(messages),
        args.goal if args.goal is not None else history.goal,
        args.next_action if args.next_action is not None else history.next_action,
        scope=scope,
        protected_message_ids=history.protected_message_ids,
        protected_call_ids=history.protected_call_ids,
        sent=SentDocument(history.format, history.raw) if history.raw is not None else None,
    )
    outcome = await closed_after(archive, compactor.plan(request))
    return result_document(outcome, messages), outcome


def _called_tools(messages: list[Any]) -> tuple[str, ...]:
    """Every tool name the history calls, first call first."""
    names = (
        block.get("name")
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_call"
    )
    return tuple(dict.fromkeys(name for name in names if isinstance(name, str) and name))


def _progress(done: int, total: int) -> None:
    filled = 30 * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _histories(args: argparse.Namespace) -> list[HistoryFile]:
    histories: list[HistoryFile] = []
    for source in args.files:
        found = read_histories(source, args.format, item=args.item, every=args.every, announce=False)
        histories.extend(found)
    if args.format == "auto":
        announce_formats(histories)  # one line for the run: 200 files are not 200 lines of stderr
    return histories


def _output(args: argparse.Namespace, document: dict[str, Any], history: HistoryFile) -> tuple[bytes, str]:
    """What to write for one history and the file name it gets in ``--output-dir``."""
    if args.emit == "history":
        return render(whole_file(document, history), history), default_name(history)
    name = history.file_name
    data = pretty_json(in_format(document, history)).encode("utf-8")
    return data, name if name.endswith(".json") else f"{name}.json"


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with ``-2``, ``-3``... before its suffixes when an earlier input took it
    (a/x.json and b/x.json must not overwrite each other)."""
    stem, dot, suffixes = name.partition(".")
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{stem}-{n}{dot}{suffixes}"
    taken.add(candidate)
    return candidate


def _archive_failures(failed: list[tuple[str, str]], total: int) -> None:
    """One stderr line when ENFORCE could not archive: the original was kept, and why."""
    if not failed:
        return
    source, detail = failed[0]
    if total == 1:
        where = f"{source}: "
        others = ""
    else:
        where = ""
        others = f" for {len(failed)} of {total} histories (first: {source})"
    print(
        f"tracetrim: {where}ENFORCE kept the original, the archive failed{others}: {detail}", file=sys.stderr
    )


def run(args: argparse.Namespace) -> int:
    """Compact each history; one prints its JSON, many need --output-dir, show progress and a summary."""
    if args.files.count("-") > 1:
        raise CliError("stdin (-) can be read only once")
    if len(args.files) > 1 and not args.output_dir:
        raise CliError("several files need --output-dir DIR (one JSON result per history)")
    if args.every and not args.output_dir:
        raise CliError("--all needs --output-dir DIR (one JSON result per trajectory)")
    model = model_from_args(args)
    histories = _histories(args)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is not None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"--output-dir {out_dir}: {exc.strerror or exc}") from None
    summary = RunSummary()
    names: set[str] = set()
    failed: list[tuple[str, str]] = []
    # A bar redrawn with carriage returns is for a terminal; in a log or a pipe it is 200 lines of noise.
    show_progress = sys.stderr.isatty()
    try:
        for done, history in enumerate(histories, start=1):
            document, outcome = asyncio.run(_compact_one(args, history, model))
            summary.add(outcome)
            if outcome.reason == Reason.ARCHIVE_ERROR:
                failed.append((history.source, outcome.detail))
            data, name = _output(args, document, history)
            if out_dir is None:
                write_bytes(data)
                continue
            path = out_dir / _unique(name, names)
            try:
                path.write_bytes(data)
            except OSError as exc:
                raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
            if show_progress:
                _progress(done, len(histories))
    finally:  # a later history's mistake must not hide that earlier ones kept their originals
        _archive_failures(failed, len(histories))
    if len(histories) > 1:
        print(summary.line())
    return 1 if summary.errors else 0
