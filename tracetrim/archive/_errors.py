"""The archive error hierarchy; every message names the reference and a short scope hash, never scope ids."""

from __future__ import annotations

from tracetrim._errors import TracetrimError


class ArchiveError(TracetrimError):
    """Base of every archive failure; messages name the reference, never scope secrets."""


class InvalidReferenceError(ArchiveError, ValueError):
    """A reference that is not 64 lower-case hex characters (``../x``, upper case, wrong length, NUL)."""


class ArchiveLimitError(ArchiveError):
    """A snapshot larger than the archive's ``max_bytes``; nothing was written or read."""


class ArchiveNotFoundError(ArchiveError, LookupError):
    """No snapshot with that reference in that scope."""


class CallNotFoundError(ArchiveNotFoundError):
    """The snapshot exists but holds no tool call or result with that id."""


class ArchiveCorruptedError(ArchiveError):
    """Stored bytes that fail verification: wrong digest, not JSON, wrong version, not a regular file."""


class ScopeMismatchError(ArchiveError):
    """A snapshot whose recorded scope is not the scope it was requested for."""


class UnsafePathError(ArchiveError):
    """An archive folder that is a symlink (or otherwise unsafe to use)."""
