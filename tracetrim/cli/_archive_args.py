"""The archive URL and scope flags every archiving command shares, and opening them."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from tracetrim._scope import Scope
from tracetrim.archive import Archive, ArchiveError, FileArchive, close_archive, open_archive
from tracetrim.cli._errors import CliError

_T = TypeVar("_T")

ARCHIVE_HELP = (
    "where snapshots go: a folder (or file:DIR), sqlite:PATH, redis://host:6379/0, rediss://..., "
    "postgresql://user@host/db"
)


def add_archive_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--archive URL`` and the scope it is read or written under (``--user/--agent/--session``)."""
    parser.add_argument("--archive", required=required, metavar="URL", help=ARCHIVE_HELP)
    parser.add_argument("--user", required=required, metavar="U", help="scope: user id")
    parser.add_argument("--agent", required=required, metavar="A", help="scope: agent id")
    parser.add_argument("--session", required=required, metavar="S", help="scope: session id")


def check_exists(archive: Archive, url: str) -> None:
    """Reading from a local archive that is not there is a typo, not an empty archive to create."""
    if isinstance(archive, FileArchive):
        if not archive.root.is_dir():
            raise CliError(f"archive folder {url!r} does not exist")
        return
    path = getattr(getattr(archive, "store", None), "path", None)
    if isinstance(path, str) and path != ":memory:" and not Path(path).is_file():
        raise CliError(f"archive database {path!r} does not exist")


def open_scoped_archive(args: argparse.Namespace, *, must_exist: bool) -> tuple[Archive, Scope] | None:
    """The archive and scope the flags name; None when no ``--archive`` was given.

    A scope is never invented: an archive needs all three scope flags. An unknown URL scheme is an
    error, never a folder name.
    """
    if not args.archive:
        return None
    if args.user is None or args.agent is None or args.session is None:
        raise CliError("--archive needs --user, --agent and --session to name the scope")
    try:
        scope = Scope(user_id=args.user, agent_id=args.agent, session_id=args.session)
        archive = open_archive(args.archive)
    except ArchiveError as exc:
        raise CliError(f"--archive: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if must_exist:
        check_exists(archive, args.archive)
    return archive, scope


def archive_failures() -> tuple[type[BaseException], ...]:
    """The errors an archive call may raise that are the user's setup, not a bug: shown as one line."""
    failures: list[type[BaseException]] = [ArchiveError, OSError]
    try:
        import redis.exceptions

        failures.append(redis.exceptions.RedisError)
    except ImportError:
        pass
    return tuple(failures)


async def with_archive(
    args: argparse.Namespace, use: Callable[[Archive, Scope], Awaitable[_T]], *, must_exist: bool = True
) -> _T:
    """Open the flags' archive, ``use`` it, and close it on the same event loop; failures are one line."""
    opened = open_scoped_archive(args, must_exist=must_exist)
    if opened is None:
        raise CliError("--archive is required")
    archive, scope = opened
    try:
        return await closed_after(archive, use(archive, scope))
    except archive_failures() as exc:
        raise CliError(str(exc) or type(exc).__name__) from None


async def closed_after(archive: Archive | None, work: Awaitable[_T]) -> _T:
    """Await ``work``, then close ``archive`` (if any) whatever happened."""
    try:
        return await work
    finally:
        if archive is not None:
            try:
                await close_archive(archive)
            except archive_failures():
                pass  # closing a connection that already failed: the work reported that failure
