"""The `restore` and `archive list|delete|prune` commands over any archive URL."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import timedelta
from typing import Any

from tracetrim._json import pretty_json
from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError
from tracetrim.archive import (
    Archive,
    ArchiveError,
    ArchiveNotFoundError,
    CallNotFoundError,
    SentDocument,
    check_ref,
    prune,
    restore_calls,
    restore_sent,
)
from tracetrim.archive._calls import calls_history
from tracetrim.cli._archive_args import add_archive_arguments, with_archive
from tracetrim.cli._arg_types import non_negative_float, non_negative_int
from tracetrim.cli._errors import CliError
from tracetrim.cli._stdout import write_bytes
from tracetrim.formats import HISTORY_FORMATS, JsonLines, dump_jsonl

SENT = "sent"
"""``restore --format sent``: the document exactly as it was sent."""


def _print_json(value: Any, what: str = "the result") -> None:
    """``value`` as JSON on stdout (a session written as JSON Lines, as its agent keeps it, one value a
    line), all or nothing: encoded whole first, so a value JSON cannot carry (a NaN from an archive
    that does not verify what it returns) is one error line, never half a document or the invalid
    ``NaN`` json would write."""
    try:
        text = dump_jsonl(value) if isinstance(value, JsonLines) else pretty_json(value)
    except (TypeError, ValueError) as exc:
        raise CliError(f"{what} cannot be printed as JSON: {exc}") from None
    sys.stdout.write(text)


def _ref(value: str) -> str:
    try:
        return check_ref(value)
    except ArchiveError as exc:
        raise CliError(str(exc)) from None


def _restore(args: argparse.Namespace) -> int:
    ref = _ref(args.ref)
    if args.call_ids and args.format == SENT:
        raise CliError(
            "--format sent gives back the whole document as it was sent; with --call-id, name a format"
        )

    async def restore(archive: Archive, scope: Scope) -> Any:
        if args.call_ids and args.format == "neutral":
            calls = await restore_calls(archive, scope, ref, args.call_ids)
            return [blocks.as_dict() for blocks in calls]
        if args.call_ids:  # those calls and results alone, as messages in the format asked for
            try:
                part = calls_history(await archive.restore(scope, ref), args.call_ids)
            except CallNotFoundError as exc:
                raise CliError(f"snapshot {ref}: {exc}") from None
            try:
                return HISTORY_FORMATS[args.format].write_messages(part)
            except SnapshotError as exc:
                raise CliError(
                    f"the calls of snapshot {ref} cannot be written as {args.format}: {exc}"
                ) from None
        if args.format != "neutral":
            try:
                sent = await restore_sent(archive, scope, ref)
            except ArchiveNotFoundError:
                if args.format == SENT:
                    raise
            else:
                if args.format in (SENT, sent.format):
                    return sent
        if args.format == SENT:
            raise CliError(f"snapshot {ref} holds no sent document; pass --format NAME")
        messages = await archive.restore(scope, ref)
        try:
            return HISTORY_FORMATS[args.format].write_messages(messages)
        except SnapshotError as exc:
            raise CliError(f"snapshot {ref} cannot be written as {args.format}: {exc}") from None

    restored = asyncio.run(with_archive(args, restore))
    if isinstance(restored, SentDocument):  # byte for byte, as it was sent
        write_bytes(restored.data)
        return 0
    _print_json(restored, f"snapshot {ref}")
    return 0


def _list(args: argparse.Namespace) -> int:
    async def listing(archive: Archive, scope: Scope) -> Any:
        return [{"ref": e.ref, "size": e.size, "created_at": e.created_at} for e in await archive.list(scope)]

    _print_json(asyncio.run(with_archive(args, listing)))
    return 0


def _delete(args: argparse.Namespace) -> int:
    ref = _ref(args.ref)

    async def delete(archive: Archive, scope: Scope) -> bool:
        return await archive.delete(scope, ref)

    if not asyncio.run(with_archive(args, delete)):
        raise CliError(f"no snapshot {ref} in this scope", exit_code=1)
    _print_json({"deleted": [ref]})
    return 0


def _prune(args: argparse.Namespace) -> int:
    if args.keep_last is None and args.older_than_days is None:
        raise CliError("archive prune needs --keep-last N, --older-than-days D or both")
    older_than = None if args.older_than_days is None else timedelta(days=args.older_than_days)

    async def pruning(archive: Archive, scope: Scope) -> list[str]:
        return await prune(archive, scope, keep_last=args.keep_last, older_than=older_than)

    _print_json({"deleted": asyncio.run(with_archive(args, pruning))})
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `restore` and `archive {list,delete,prune}` to the `tracetrim` command."""
    restore = subparsers.add_parser(
        "restore",
        help="print an archived history, or the original blocks of chosen calls, as JSON",
        description="Print an archived history as JSON; with --call-id, only those calls' original blocks.",
    )
    add_archive_arguments(restore, required=True)
    restore.add_argument("ref", metavar="REF", help="the 64-hex archive reference")
    restore.add_argument(
        "--call-id",
        dest="call_ids",
        action="append",
        metavar="ID",
        help="print only this call's original call and result blocks (repeatable)",
    )
    restore.add_argument(
        "--format",
        choices=[SENT, *HISTORY_FORMATS],
        default="neutral",
        help=(
            "write the history in this format (default: neutral); 'sent', or the format it was sent in, "
            "writes the document exactly as it was sent (the file's bytes, every field) when the archive "
            "kept it"
        ),
    )
    restore.set_defaults(handler=_restore)

    archive = subparsers.add_parser("archive", help="list, delete or prune archived snapshots of a scope")
    actions = archive.add_subparsers(dest="archive_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list snapshots, oldest first, as JSON")
    add_archive_arguments(listing, required=True)
    listing.set_defaults(handler=_list)
    delete = actions.add_parser("delete", help="delete one snapshot")
    add_archive_arguments(delete, required=True)
    delete.add_argument("ref", metavar="REF", help="the 64-hex archive reference")
    delete.set_defaults(handler=_delete)
    pruning = actions.add_parser(
        "prune", help="delete old snapshots (with both flags, only those both rules let go)"
    )
    add_archive_arguments(pruning, required=True)
    pruning.add_argument("--keep-last", type=non_negative_int, metavar="N", help="keep the N newest")
    pruning.add_argument(
        "--older-than-days", type=non_negative_float, metavar="D", help="delete snapshots older than D days"
    )
    pruning.set_defaults(handler=_prune)
