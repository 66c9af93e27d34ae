"""`FileArchive`: one owner-only folder per scope, atomic fsynced writes, no symlink ever followed."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import os
import re
import secrets
import stat
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from tracetrim._json import sha256_hex
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._validators import FieldValueError
from tracetrim.archive._document import (
    EncodedSnapshot,
    SavesEncoded,
    check_size,
    decode_sent,
    decode_snapshot,
    encode_history,
)
from tracetrim.archive._errors import (
    ArchiveCorruptedError,
    ArchiveError,
    ArchiveNotFoundError,
    UnsafePathError,
)
from tracetrim.archive._protocol import DEFAULT_MAX_BYTES, ArchiveEntry, check_ref, scope_key, scope_label
from tracetrim.archive._sent import SentDocument

_TMP_PREFIX = ".tmp-"
# Temp files live in a folder of their own so that finding leftovers, which every save does, does not
# read the whole scope folder: a long session can hold thousands of snapshots.
_TMP_DIR = ".tmp"
_SNAPSHOT_NAME = re.compile(r"([0-9a-f]{64})\.json")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Below this size a second thread costs more than hashing beside the write saves.
HASH_BESIDE_WRITE_BYTES = 1_000_000
_T = TypeVar("_T")


def _snapshot_name(ref: str) -> str:
    return f"{ref}.json"


def _open_dir(path: str | Path, *, dir_fd: int | None, create: bool) -> int | None:
    """Open a folder without following a symlink at its last component; None when absent."""
    try:
        return os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            shown = os.fspath(path)
            raise UnsafePathError(f"archive folder {shown!r} is a symlink or not a folder") from None
        raise
    try:
        if dir_fd is None:
            os.makedirs(path, mode=0o700, exist_ok=True)
        else:
            os.mkdir(path, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        pass  # a concurrent save created it first
    return _open_dir(path, dir_fd=dir_fd, create=False)


def _open_private(dir_fd: int, name: str, flags: int) -> int:
    """Open ``name`` in the folder, never through a symlink; a file it creates is owner-only."""
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)


def _lock_fresh_temp(dir_fd: int, name: str, fd: int) -> bool:
    """Mark a new temp file as in use; False when a sweeper removed it between create and lock.

    The flock is what tells a sweeper in any process that the writer is alive: the kernel drops
    it when the writer dies, even by SIGKILL, so an unlocked temp file is always a leftover.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    try:
        on_disk = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return on_disk.st_ino == os.fstat(fd).st_ino


def _intact(dir_fd: int, name: str, data: bytes) -> bool:
    """True when ``name`` is a regular file holding exactly ``data``.

    A size check alone would let a copy corrupted in place (same length, other bytes) pass for
    stored, and a plan adopt a proposal whose original can no longer be restored.
    """
    try:
        fd = _open_private(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # a symlink in a snapshot's place: replaced by the real file
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        return handle.read(len(data) + 1) == data


def _commit(dir_fd: int, tmp_fd: int, tmp: str, name: str, data: bytes) -> None:
    """Make a fully written, fsynced temp file visible under its final name, durably."""
    try:
        # link, unlike rename, never replaces: the first copy of a snapshot keeps its creation time
        os.link(tmp, name, src_dir_fd=tmp_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        if not _intact(dir_fd, name, data):
            os.replace(tmp, name, src_dir_fd=tmp_fd, dst_dir_fd=dir_fd)  # atomic: never a half copy
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        os.replace(tmp, name, src_dir_fd=tmp_fd, dst_dir_fd=dir_fd)  # no hard links on this file system
    with contextlib.suppress(FileNotFoundError):  # already renamed into place
        os.unlink(tmp, dir_fd=tmp_fd)
    os.fsync(dir_fd)


def _write(dir_fd: int, tmp_fd: int, data: bytes, ref: str | Future[str]) -> None:
    """Store ``data`` under the name of ``ref`` through a locked, fsynced temp file; once only.

    ``ref`` may still be being hashed in another thread: the bytes go to the page cache
    meanwhile, and whether they are stored already is asked before the fsync, so a repeated
    save never makes the disk write them again.
    """
    if isinstance(ref, str) and _intact(dir_fd, _snapshot_name(ref), data):
        return
    while True:
        tmp = f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        fd = _open_private(tmp_fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            if not _lock_fresh_temp(tmp_fd, tmp, fd):
                continue  # a sweeper took it before we locked it: start over under a new name
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                name = _snapshot_name(ref if isinstance(ref, str) else ref.result())
                if _intact(dir_fd, name, data):
                    os.unlink(tmp, dir_fd=tmp_fd)
                    return
                os.fsync(fd)
                _commit(dir_fd, tmp_fd, tmp, name, data)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=tmp_fd)
                raise
            return
        finally:
            os.close(fd)


@functools.cache
def _hashers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(thread_name_prefix="tracetrim-archive-hash")


# A forked child inherits the pool but not its threads: work sent to it would wait forever.
os.register_at_fork(after_in_child=_hashers.cache_clear)


def _sweep(dir_fd: int) -> int:
    """Remove temp files no live writer holds; return how many were removed."""
    removed = 0
    with os.scandir(dir_fd) as entries:
        names = [entry.name for entry in entries if entry.name.startswith(_TMP_PREFIX)]
    for name in names:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        except OSError:
            fd = -1  # a symlink or special file under our temp prefix is never ours: remove it
        try:
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live writer
            try:
                os.unlink(name, dir_fd=dir_fd)
                removed += 1
            except FileNotFoundError:
                pass
        finally:
            if fd >= 0:
                os.close(fd)
    if removed:
        os.fsync(dir_fd)
    return removed


def _sweep_scope(dir_fd: int) -> int:
    """`_sweep` the scope's temp folder, and the scope folder itself, where earlier builds wrote temps."""
    removed = _sweep(dir_fd)
    tmp_fd = _open_dir(_TMP_DIR, dir_fd=dir_fd, create=False)
    if tmp_fd is not None:
        try:
            removed += _sweep(tmp_fd)
        finally:
            os.close(tmp_fd)
    return removed


def _list(dir_fd: int) -> list[ArchiveEntry]:
    found: list[ArchiveEntry] = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            match = _SNAPSHOT_NAME.fullmatch(entry.name)
            if match is None:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(ArchiveEntry(ref=match.group(1), size=info.st_size, created_at=info.st_mtime))
    found.sort(key=lambda e: (e.created_at, e.ref))
    return found


def _delete(dir_fd: int, name: str) -> bool:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    os.fsync(dir_fd)
    return True


class FileArchive(SavesEncoded):
    """Snapshots as files: ``root/<scope hash>/<ref>.json``, folders 0700, files 0600.

    A save writes a temp file in the scope's ``.tmp`` folder, fsyncs it, links it into place and
    fsyncs the scope folder, so a crash at any moment leaves either no snapshot or a complete one.
    Temp files left by a crashed writer are removed by the next `save` or `sweep` (and so by
    `prune`). Symlinks are refused at the root, the scope folder and its ``.tmp`` folder and never
    followed inside them. POSIX only (flock).
    """

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise FieldValueError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        self.root = Path(root)
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"FileArchive({os.fspath(self.root)!r}, max_bytes={self.max_bytes})"

    def _scope_dir(self, scope: Scope, create: bool) -> int | None:
        root_fd = _open_dir(self.root, dir_fd=None, create=create)
        if root_fd is None:
            return None
        try:
            return _open_dir(scope_key(scope), dir_fd=root_fd, create=create)
        finally:
            os.close(root_fd)

    async def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Store the history durably; return its reference. Saving it again stores nothing new."""
        return await asyncio.to_thread(self._save, scope, messages)

    def _save(self, scope: Scope, messages: Sequence[Message]) -> str:
        data = encode_history(scope, messages, self.max_bytes)
        if len(data) < HASH_BESIDE_WRITE_BYTES:
            ref = sha256_hex(data)
            self._store(scope, data, ref)
            return ref
        # hashlib and os.write both release the GIL: hash in a second thread while writing
        hashing = _hashers().submit(sha256_hex, data)
        self._store(scope, data, hashing)
        return hashing.result()

    async def _put(self, scope: Scope, snap: EncodedSnapshot) -> None:
        """Store already encoded snapshot bytes (split from `save` so benchmarks can time the I/O)."""
        await asyncio.to_thread(self._store, scope, snap.data, snap.ref)

    def _store(self, scope: Scope, data: bytes, ref: str | Future[str]) -> None:
        """Store ``data`` under ``ref`` (a reference, or one being hashed) unless it is stored."""
        try:
            dir_fd = self._scope_dir(scope, True)
            assert dir_fd is not None
            try:
                tmp_fd = _open_dir(_TMP_DIR, dir_fd=dir_fd, create=True)
                assert tmp_fd is not None
                try:
                    _sweep(tmp_fd)
                    _write(dir_fd, tmp_fd, data, ref)
                finally:
                    os.close(tmp_fd)
            finally:
                os.close(dir_fd)
        except ArchiveError:
            raise
        except OSError as exc:
            shown = ref if isinstance(ref, str) else ref.result()
            raise ArchiveError(f"could not save snapshot {shown} in {scope_label(scope)}: {exc}") from exc

    async def restore(self, scope: Scope, ref: str) -> list[Message]:
        """The verified history saved under ``ref`` in ``scope``."""
        check_ref(ref)
        data = await asyncio.to_thread(self._read, scope, ref)
        return decode_snapshot(scope, ref, data, self.max_bytes)

    async def restore_sent(self, scope: Scope, ref: str) -> SentDocument:
        """The document as it was sent, saved with the history under ``ref``, verified, byte for byte
        (`ArchiveNotFoundError` when the snapshot holds none)."""
        check_ref(ref)
        data = await asyncio.to_thread(self._read, scope, ref)
        return decode_sent(scope, ref, data, self.max_bytes)

    def _read(self, scope: Scope, ref: str) -> bytes:
        where = f"snapshot {ref} in {scope_label(scope)}"
        try:
            dir_fd = self._scope_dir(scope, False)
            if dir_fd is None:
                raise ArchiveNotFoundError(f"no {where}")
            try:
                fd = _open_private(dir_fd, _snapshot_name(ref), os.O_RDONLY | os.O_NONBLOCK)
            finally:
                os.close(dir_fd)
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise ArchiveCorruptedError(f"{where} is not a regular file")
                check_size(scope, ref, info.st_size, self.max_bytes)
                data = handle.read(info.st_size + 1)  # +1: a file that grew since is still caught
        except FileNotFoundError:
            raise ArchiveNotFoundError(f"no {where}") from None
        except ArchiveError:
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArchiveCorruptedError(f"{where} is a symlink; refused") from None
            raise ArchiveError(f"could not read {where}: {exc}") from exc
        return data

    def _in_scope(self, scope: Scope, what: str, work: Callable[[int], _T], absent: _T) -> _T:
        """Run ``work`` on the scope folder's descriptor, opened and closed in this one thread.

        Opening in one thread and closing in the awaiting task leaked the descriptor whenever the
        task was cancelled while the open ran (and could close it under a worker still using it).
        """
        try:
            dir_fd = self._scope_dir(scope, False)
            if dir_fd is None:
                return absent
            try:
                return work(dir_fd)
            finally:
                os.close(dir_fd)
        except ArchiveError:
            raise
        except OSError as exc:
            raise ArchiveError(f"could not {what} in {scope_label(scope)}: {exc}") from exc

    async def list(self, scope: Scope) -> list[ArchiveEntry]:
        """The snapshots of ``scope``, oldest first (creation = file modification time)."""
        return await asyncio.to_thread(self._in_scope, scope, "list snapshots", _list, [])

    async def delete(self, scope: Scope, ref: str) -> bool:
        """Remove the snapshot ``ref`` of ``scope``; True when it existed."""
        check_ref(ref)
        name = _snapshot_name(ref)
        return await asyncio.to_thread(
            self._in_scope, scope, f"delete snapshot {ref}", lambda fd: _delete(fd, name), False
        )

    async def sweep(self, scope: Scope) -> int:
        """Remove temp files left by crashed writers in ``scope``; return how many were removed."""
        return await asyncio.to_thread(self._in_scope, scope, "sweep temp files", _sweep_scope, 0)
