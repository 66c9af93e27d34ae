"""`open_archive(url)`: one archive from one string, a folder path or a URL naming the store."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tracetrim._logging import redact_url
from tracetrim.archive._errors import ArchiveError
from tracetrim.archive._file import FileArchive
from tracetrim.archive._kv import KeyValueArchive
from tracetrim.archive._memory_store import MemoryStore
from tracetrim.archive._protocol import DEFAULT_MAX_BYTES, Archive

# A scheme is two or more characters: a one-letter "scheme" is a Windows drive (C:\archive).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+):")

ARCHIVE_SCHEMES: dict[str, str] = {
    "file": "file:DIR (or a bare folder path): one file per snapshot, in a folder per scope",
    "sqlite": "sqlite:PATH: one embedded SQLite database file (sqlite:///abs/path also works)",
    "redis": "redis://[user:password@]host[:port][/db]: Redis or Redis Cluster",
    "rediss": "rediss://...: Redis over TLS",
    "postgresql": "postgresql://[user[:password]@]host[:port]/dbname: a PostgreSQL table",
    "postgres": "postgres://...: the same as postgresql://",
    "memory": "memory: in this process only, gone when it exits (tests, demos)",
}
"""Every scheme `open_archive` understands, with the form it takes."""


class ArchiveUrlError(ArchiveError, ValueError):
    """An archive URL that names no store tracetrim knows, or a known scheme written wrongly."""


def _known() -> str:
    return ", ".join(f"{name}:" for name in ARCHIVE_SCHEMES) + " or a folder path"


def _location(url: str, scheme: str, rest: str) -> str:
    """The path after ``file:`` / ``sqlite:``; ``//`` with no host is the URL form of a local path."""
    if rest.startswith("///"):
        rest = rest[2:]
    elif rest.startswith("//"):
        raise ArchiveUrlError(
            f"archive URL {redact_url(url)!r}: {scheme}: names a local path; write {scheme}:PATH or {scheme}:///abs/path"
        )
    if not rest:
        raise ArchiveUrlError(f"archive URL {redact_url(url)!r}: {scheme}: needs a path after the colon")
    return rest


def _network(url: str, scheme: str, rest: str) -> str:
    if not rest.startswith("//") or len(rest) == 2:
        raise ArchiveUrlError(
            f"archive URL {redact_url(url)!r}: write {scheme}://host[:port]/..., with two slashes and a host"
        )
    return url


def open_archive(url: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, **options: Any) -> Archive:
    """The archive ``url`` names: a folder path or ``file:DIR``, ``sqlite:PATH``, ``redis://`` or
    ``rediss://``, ``postgresql://`` (or ``postgres://``), ``memory:``.

    Nothing is connected or created here: a store connects (and creates its table or folder) on first
    use. An unknown scheme, or a known one written wrongly (``redis:/x``), raises `ArchiveUrlError`; it is
    never taken for a folder name; its message shows the URL with any password blanked
    (`tracetrim._logging.redact_url`). ``options`` go to the store (``table=`` for PostgreSQL, ``timeout=``
    for SQLite). Close a store-backed archive with `close_archive` when done.
    """
    if isinstance(url, Path):
        return FileArchive(url, max_bytes=max_bytes)
    if not isinstance(url, str) or not url.strip():
        raise ArchiveUrlError(f"an archive URL must be a non-empty string, got {url!r}")
    match = _SCHEME.match(url)
    if match is None:
        return FileArchive(url, max_bytes=max_bytes)
    scheme, rest = match.group(1).lower(), url[match.end() :]
    if scheme == "file":
        return FileArchive(_location(url, scheme, rest), max_bytes=max_bytes)
    if scheme == "sqlite":
        from tracetrim.archive._sqlite_store import SQLiteStore

        return KeyValueArchive(SQLiteStore(_location(url, scheme, rest), **options), max_bytes)
    if scheme in ("redis", "rediss"):
        from tracetrim.archive._redis_store import RedisStore

        try:
            store = RedisStore(_network(url, scheme, rest))
        except ImportError:
            raise ArchiveUrlError(
                f"{scheme}:// archives need redis: pip install 'tracetrim[redis]'"
            ) from None
        return KeyValueArchive(store, max_bytes)
    if scheme in ("postgresql", "postgres"):
        from tracetrim.archive._postgres_store import PostgresStore

        try:
            import psycopg  # noqa: F401  (here: say what to install now, not at the first save)
        except ImportError:
            raise ArchiveUrlError(
                f"{scheme}:// archives need psycopg: pip install 'tracetrim[postgres]'"
            ) from None
        return KeyValueArchive(PostgresStore(_network(url, scheme, rest), **options), max_bytes)
    if scheme == "memory":
        if rest:
            raise ArchiveUrlError(f"archive URL {redact_url(url)!r}: memory: takes nothing after the colon")
        return KeyValueArchive(MemoryStore(), max_bytes)
    raise ArchiveUrlError(f"archive URL {redact_url(url)!r}: unknown scheme {scheme!r}; use {_known()}")


async def close_archive(archive: Archive) -> None:
    """Release what an archive from `open_archive` holds open (a connection); a no-op for the others."""
    store = getattr(archive, "store", None)
    aclose = getattr(store, "aclose", None)
    if callable(aclose):
        await aclose()
