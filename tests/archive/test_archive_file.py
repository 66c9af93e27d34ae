"""FileArchive specifics: permissions, symlinks, special files, leftover temp files, large snapshots."""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests._archive_support import make_history
from tracetrim._json import canonical_bytes
from tracetrim._scope import Scope
from tracetrim.archive import (
    ArchiveCorruptedError,
    ArchiveNotFoundError,
    FileArchive,
    UnsafePathError,
    prune,
    snapshot_document,
    snapshot_ref,
)
from tracetrim.archive._file import HASH_BESIDE_WRITE_BYTES
from tracetrim.archive._protocol import scope_key

SCOPE = Scope(user_id="u1", agent_id="a1", session_id="s1")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def test_folders_and_files_are_owner_only(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    ref = await archive.save(SCOPE, make_history(2))
    folder = tmp_path / "root" / scope_key(SCOPE)
    assert _mode(tmp_path / "root") == 0o700
    assert _mode(folder) == 0o700
    assert _mode(folder / f"{ref}.json") == 0o600
    # no scope id reaches the file system: the folder is a hash
    assert "u1" not in folder.name and len(folder.name) == 64


async def test_symlinked_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    archive = FileArchive(tmp_path / "link")
    with pytest.raises(UnsafePathError, match="symlink"):
        await archive.save(SCOPE, make_history(1))
    assert list(real.iterdir()) == []


async def test_symlinked_scope_folder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ref = await FileArchive(elsewhere).save(SCOPE, make_history(1))
    root.mkdir()
    (root / scope_key(SCOPE)).symlink_to(elsewhere / scope_key(SCOPE))
    archive = FileArchive(root)
    with pytest.raises(UnsafePathError):
        await archive.restore(SCOPE, ref)
    with pytest.raises(UnsafePathError):
        await archive.save(SCOPE, make_history(2))
    with pytest.raises(UnsafePathError):
        await archive.list(SCOPE)


async def test_symlinked_snapshot_is_not_followed(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    history = make_history(1)
    ref = await archive.save(SCOPE, history)
    folder = tmp_path / "root" / scope_key(SCOPE)
    target = folder / f"{ref}.json"
    (tmp_path / "copy.json").write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(tmp_path / "copy.json")
    with pytest.raises(ArchiveCorruptedError, match="symlink"):
        await archive.restore(SCOPE, ref)
    assert await archive.list(SCOPE) == []
    # saving again replaces the symlink with a real file instead of writing through it
    assert await archive.save(SCOPE, history) == ref
    assert not target.is_symlink()
    assert await archive.restore(SCOPE, ref) == history


async def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    await archive.save(SCOPE, make_history(1))
    fifo = tmp_path / "root" / scope_key(SCOPE) / f"{'ab' * 32}.json"
    os.mkfifo(fifo)
    with pytest.raises(ArchiveCorruptedError, match="regular"):
        await archive.restore(SCOPE, "ab" * 32)


async def test_missing_root_means_nothing_stored(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "absent")
    assert await archive.list(SCOPE) == []
    assert await archive.delete(SCOPE, "0" * 64) is False
    with pytest.raises(ArchiveNotFoundError):
        await archive.restore(SCOPE, "0" * 64)
    assert not (tmp_path / "absent").exists()


async def test_truncated_snapshot_with_the_right_name_is_repaired_by_the_next_save(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    history = make_history(3)
    ref = await archive.save(SCOPE, history)
    target = tmp_path / "root" / scope_key(SCOPE) / f"{ref}.json"
    target.write_bytes(target.read_bytes()[:100])
    with pytest.raises(ArchiveCorruptedError):
        await archive.restore(SCOPE, ref)
    assert await archive.save(SCOPE, history) == ref
    assert await archive.restore(SCOPE, ref) == history


async def test_leftover_temp_files_are_swept_but_live_ones_are_kept(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    await archive.save(SCOPE, make_history(1))
    folder = tmp_path / "root" / scope_key(SCOPE)
    inflight = folder / ".tmp"
    assert _mode(inflight) == 0o700 and list(inflight.iterdir()) == []
    dead = inflight / ".tmp-dead"
    dead.write_bytes(b"half a snapshot")
    live = inflight / ".tmp-live"
    live.write_bytes(b"being written")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a writer in another process holds it
        await archive.save(SCOPE, make_history(2))
        assert not dead.exists()
        assert live.exists()
        dead.write_bytes(b"another leftover")
        assert await prune(archive, SCOPE, keep_last=10) == []
        assert not dead.exists()
        assert live.exists()
    finally:
        os.close(fd)
    legacy = folder / ".tmp-legacy"  # where earlier builds wrote their temp files
    legacy.write_bytes(b"left by an old writer")
    assert await archive.sweep(SCOPE) == 2
    assert list(inflight.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == [".tmp"]


async def test_a_symlinked_temp_folder_is_refused(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    await archive.save(SCOPE, make_history(1))
    inflight = tmp_path / "root" / scope_key(SCOPE) / ".tmp"
    inflight.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inflight.symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="symlink"):
        await archive.save(SCOPE, make_history(2))
    assert list(elsewhere.iterdir()) == []


def test_max_bytes_must_be_positive(tmp_path: Path) -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_bytes"):
            FileArchive(tmp_path, max_bytes=bad)  # type: ignore[arg-type]


async def test_large_snapshots_hash_beside_the_write_and_are_stored_once(tmp_path: Path) -> None:
    """Past HASH_BESIDE_WRITE_BYTES the reference is computed while the bytes are written."""
    archive = FileArchive(tmp_path / "root")
    history = make_history(30, seed=11, result_chars=60_000)
    data = canonical_bytes(snapshot_document(SCOPE, history))
    assert len(data) >= HASH_BESIDE_WRITE_BYTES
    ref = await archive.save(SCOPE, history)
    assert ref == snapshot_ref(SCOPE, history)
    target = tmp_path / "root" / scope_key(SCOPE) / f"{ref}.json"
    assert target.read_bytes() == data
    before = target.stat()
    copies = [make_history(30, seed=11, result_chars=60_000) for _ in range(8)]
    again = await asyncio.gather(*(archive.save(SCOPE, copy) for copy in copies))
    assert set(again) == {ref}
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in target.parent.iterdir()) == [".tmp", target.name]
    assert list((target.parent / ".tmp").iterdir()) == []
    assert await archive.restore(SCOPE, ref) == history


_FORK_SCRIPT = """
import asyncio, os, signal, sys, traceback
from tests._archive_support import make_history
from tracetrim._scope import Scope
from tracetrim.archive import FileArchive

scope = Scope(user_id="u1", agent_id="a1", session_id="s1")  # SCOPE
archive = FileArchive(sys.argv[1])
asyncio.run(archive.save(scope, make_history(30, seed=12, result_chars=60_000)))
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # a hung save ends the child by SIGALRM
    try:
        asyncio.run(archive.save(scope, make_history(30, seed=13, result_chars=60_000)))
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def test_a_forked_child_can_save_large_snapshots(tmp_path: Path) -> None:
    """The hashing threads of the parent do not exist in a forked child; its saves must not wait on them.

    Run in a process of its own, as a host that forks its workers would: forked from this test run, the
    child would also inherit locks that the run's other threads (servers of other tests) hold."""
    root = tmp_path / "root"
    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT, str(root)],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # 242 is -14 (SIGALRM) as an exit status: the child's save hung
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert len(asyncio.run(FileArchive(root).list(SCOPE))) == 2
