"""Archives of whole histories (file, memory, SQLite, Redis, PostgreSQL, by URL) and restore helpers."""

from tracetrim._public import publish
from tracetrim.archive._calls import CallBlocks, restore_calls
from tracetrim.archive._errors import (
    ArchiveCorruptedError,
    ArchiveError,
    ArchiveLimitError,
    ArchiveNotFoundError,
    CallNotFoundError,
    InvalidReferenceError,
    ScopeMismatchError,
    UnsafePathError,
)
from tracetrim.archive._file import FileArchive
from tracetrim.archive._kv import KeyValueArchive
from tracetrim.archive._memory_store import MemoryStore
from tracetrim.archive._postgres_store import PostgresStore
from tracetrim.archive._protocol import (
    DEFAULT_MAX_BYTES,
    SNAPSHOT_VERSION,
    Archive,
    ArchiveEntry,
    EncodedSnapshot,
    EncodedSnapshotArchive,
    check_ref,
    snapshot_document,
    snapshot_ref,
)
from tracetrim.archive._recall import RecallTool
from tracetrim.archive._redis_store import RedisStore
from tracetrim.archive._rehydrate import rehydrate
from tracetrim.archive._retention import prune
from tracetrim.archive._sent import SentDocument, restore_sent
from tracetrim.archive._sqlite_store import SQLiteStore
from tracetrim.archive._store import KeyValueStore, StoredItem
from tracetrim.archive._url import ARCHIVE_SCHEMES, ArchiveUrlError, close_archive, open_archive

__all__ = [
    "ARCHIVE_SCHEMES",
    "DEFAULT_MAX_BYTES",
    "SNAPSHOT_VERSION",
    "Archive",
    "ArchiveCorruptedError",
    "ArchiveEntry",
    "ArchiveError",
    "ArchiveLimitError",
    "ArchiveNotFoundError",
    "ArchiveUrlError",
    "CallBlocks",
    "CallNotFoundError",
    "EncodedSnapshot",
    "EncodedSnapshotArchive",
    "FileArchive",
    "InvalidReferenceError",
    "KeyValueArchive",
    "KeyValueStore",
    "MemoryStore",
    "PostgresStore",
    "RecallTool",
    "RedisStore",
    "SQLiteStore",
    "ScopeMismatchError",
    "SentDocument",
    "StoredItem",
    "UnsafePathError",
    "check_ref",
    "close_archive",
    "open_archive",
    "prune",
    "rehydrate",
    "restore_calls",
    "restore_sent",
    "snapshot_document",
    "snapshot_ref",
]

publish(__name__, globals())
