"""The `offload` command: size-based compaction (compact / compress / auto) of one history file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from tracetrim._json import pretty_json
from tracetrim._scope import Scope
from tracetrim.archive import Archive
from tracetrim.cli._archive_args import add_archive_arguments, closed_after, open_scoped_archive
from tracetrim.cli._arg_types import non_negative_float, non_negative_int
from tracetrim.cli._compact import in_format, result_document
from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import add_format_arguments, as_owned, to_neutral
from tracetrim.cli._input import read_histories
from tracetrim.cli._records import add_records_argument, records_observer
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._offload import OffloadConfig, OffloadMode, OffloadStrategy
from tracetrim.compactor._outcome import Outcome, Status
from tracetrim.compactor._request import CompactionRequest
from tracetrim.decision import ChatSummarizer, Summarizer
from tracetrim.decision._env import load_environment

# flag, the OffloadConfig field it sets, its help; the field's default gives the type
_SIZE_OPTIONS = (
    ("--trigger-tokens", "trigger_tokens", "do nothing at or below this many tokens"),
    ("--max-tool-message-tokens", "max_tool_message_tokens", "offload tool results above this"),
    ("--keep-recent", "keep_recent_count", "compact leaves the last N messages alone"),
    ("--compress-keep-recent", "compress_keep_recent_count", "compress leaves the last N messages alone"),
    ("--preview-chars", "preview_chars", "head and tail characters an offloaded result keeps"),
    (
        "--excerpt-chars",
        "excerpt_chars",
        "characters of the lines that matter an offloaded result keeps between head and tail (0: none)",
    ),
    ("--group-tokens", "group_token_threshold", "largest message group summarised at once"),
    (
        "--ratio",
        "compact_ratio_threshold",
        "without --target-tokens: auto compresses when tokens after compact / before exceed R",
    ),
)


def _summarizer(args: argparse.Namespace) -> Summarizer | None:
    if args.mode == OffloadMode.COMPACT.value:
        return None
    env = load_environment()
    if args.summary_base_url:
        env["SUMMARY_MODEL_BASE_URL"] = args.summary_base_url
    if args.summary_model:
        env["SUMMARY_MODEL_NAME"] = args.summary_model
    if args.summary_api_key_env:
        key = env.get(args.summary_api_key_env)
        if not key:
            raise CliError(
                f"--summary-api-key-env: environment variable {args.summary_api_key_env} is not set"
            )
        env["SUMMARY_MODEL_API_KEY"] = key
    try:
        return ChatSummarizer.from_env(env)
    except ValueError as exc:
        raise CliError(
            f"mode {args.mode} needs a summary model: {exc} (or pass --summary-base-url/--summary-model)"
        ) from None


def _strategy(args: argparse.Namespace) -> tuple[OffloadStrategy, Archive | None, Scope | None]:
    opened = open_scoped_archive(args, must_exist=False)
    archive, scope = opened if opened is not None else (None, None)
    try:
        sizes = {field: getattr(args, field) for _, field, _ in _SIZE_OPTIONS}
        config = OffloadConfig(mode=args.mode, target_tokens=args.target_tokens, **sizes)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    mode = Mode.ENFORCE if archive is not None else Mode.SHADOW
    execution = ExecutionOptions(mode=mode, budget_s=args.budget, observer=records_observer(args))
    strategy = OffloadStrategy(_summarizer(args), config=config, execution=execution, archive=archive)
    return strategy, archive, scope


async def _plan(strategy: OffloadStrategy, archive: Archive | None, request: CompactionRequest) -> Outcome:
    return await closed_after(archive, strategy.plan(request))


def _offload(args: argparse.Namespace) -> int:
    if args.every:
        raise CliError("offload takes one history: pick one of a list of trajectories with --item N")
    (history,) = read_histories(args.file, args.format, item=args.item)
    messages = to_neutral(history)
    strategy, archive, scope = _strategy(args)
    request = CompactionRequest(
        as_owned(messages),
        goal=args.goal or history.goal,
        scope=scope,
        protected_message_ids=tuple(args.protect_message or history.protected_message_ids),
        protected_call_ids=tuple(args.protect_call or history.protected_call_ids),
    )
    outcome = asyncio.run(_plan(strategy, archive, request))
    report = in_format(result_document(outcome, messages), history)
    text = pretty_json(report)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)
    if outcome.status is Status.ERROR:
        print(f"tracetrim: offload failed ({outcome.reason}): {outcome.detail}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `offload` to the `tracetrim` command."""
    defaults = OffloadConfig()
    parser = subparsers.add_parser(
        "offload",
        help="shrink a history by size rules: offload large tool results, summarise old messages",
        description=(
            "Offload tool results above a token limit (compact), summarise older message groups with a "
            "chat model (compress), or both as needed (auto). Reads and writes any supported format. "
            "Without --archive it only proposes (SHADOW); with --archive and a scope it archives the "
            "originals, then adopts. Prints JSON."
        ),
    )
    parser.add_argument(
        "file",
        metavar="FILE",
        help="a history in any supported format (a message list, a request object, a trajectory), or -",
    )
    add_format_arguments(parser)
    parser.add_argument("--mode", choices=[m.value for m in OffloadMode], default=defaults.mode.value)
    for flag, field, text in _SIZE_OPTIONS:
        default = getattr(defaults, field)
        parser.add_argument(
            flag,
            dest=field,
            type=non_negative_float if isinstance(default, float) else non_negative_int,
            default=default,
            metavar="R" if isinstance(default, float) else "N",
            help=f"{text} (default %(default)s)",
        )
    parser.add_argument(
        "--target-tokens",
        type=non_negative_int,
        metavar="N",
        help="once over --trigger-tokens, work down to N tokens and stop, oldest first "
        "(default: apply every rule in full)",
    )
    parser.add_argument("--goal", default="", help="the agent's goal, given to the summary model")
    parser.add_argument("--protect-message", action="append", metavar="ID", help="a message id to keep")
    parser.add_argument("--protect-call", action="append", metavar="ID", help="a call id to keep")
    parser.add_argument(
        "--budget",
        type=non_negative_float,
        default=120.0,
        metavar="S",
        help="seconds for all summaries and archive writes (default %(default)s)",
    )
    parser.add_argument("--output", metavar="PATH", help="write the JSON here instead of stdout")
    add_records_argument(parser)
    add_archive_arguments(parser, required=False)
    summary = parser.add_argument_group(
        "summary model (compress, auto)",
        "Defaults from SUMMARY_MODEL_BASE_URL, SUMMARY_MODEL_NAME and SUMMARY_MODEL_API_KEY (or ./.env).",
    )
    summary.add_argument("--summary-base-url", metavar="URL", help="OpenAI-compatible server base URL")
    summary.add_argument("--summary-model", metavar="NAME", help="model name the server knows")
    summary.add_argument(
        "--summary-api-key-env",
        metavar="NAME",
        help="environment variable holding the API key (keys never go on the command line)",
    )
    parser.set_defaults(handler=_offload)
