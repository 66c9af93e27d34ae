"""The archive folder and scope flags every archiving command shares, and opening them."""

from __future__ import annotations

import argparse
from pathlib import Path

from tracetrim._scope import Scope
from tracetrim.archive import FileArchive
from tracetrim.cli._errors import CliError


def add_archive_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--archive DIR`` and the scope it is read or written under (``--user/--agent/--session``)."""
    parser.add_argument("--archive", required=required, metavar="DIR", help="the file archive folder")
    parser.add_argument("--user", required=required, metavar="U", help="scope: user id")
    parser.add_argument("--agent", required=required, metavar="A", help="scope: agent id")
    parser.add_argument("--session", required=required, metavar="S", help="scope: session id")


def open_archive(args: argparse.Namespace, *, must_exist: bool) -> tuple[FileArchive, Scope] | None:
    """The archive and scope the flags name; None when no ``--archive`` was given.

    A scope is never invented: an archive needs all three scope flags.
    """
    if not args.archive:
        return None
    if args.user is None or args.agent is None or args.session is None:
        raise CliError("--archive needs --user, --agent and --session to name the scope")
    root = Path(args.archive)
    if must_exist and not root.is_dir():
        raise CliError(f"archive folder {args.archive!r} does not exist")
    try:
        scope = Scope(user_id=args.user, agent_id=args.agent, session_id=args.session)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return FileArchive(root), scope
