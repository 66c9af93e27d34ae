"""Save/restore speed of every archive for 100 KB, 1 MB and 10 MB snapshots, against a raw write+fsync.

Run: ``python benchmarks/bench_archive.py [--repeat N] [--dir DIR] [--no-redis]``. Each save stores a
new history (a different reference), so nothing is skipped as already archived. The reference is
writing the same snapshot bytes to a new file in the same folder and fsyncing it, timed just
before each save. Every timed step starts after `gc.collect()` and `os.sync()`, so that none
pays for another's garbage or dirty pages, after one untimed round. Each size runs
``--repeat`` times 10 (100 KB), 5 (1 MB) or 2 (10 MB): one small fsync varies by half its time.

A save is two parts, timed separately too: encoding (validation, canonical JSON, SHA-256: the
same work for every archive, since it defines the reference) and storing those bytes ("store").
The file archive hashes beside the write for snapshots of 1 MB and more, so its save can take
less than encode + store.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import string
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracetrim._scope import Scope
from tracetrim.archive import (
    Archive,
    FileArchive,
    KeyValueArchive,
    MemoryStore,
    RedisStore,
    SQLiteStore,
)
from tracetrim.archive._document import encode_snapshot

LIMIT = 50_000_000

SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
RUNS_FACTOR = {"100 KB": 10, "1 MB": 5, "10 MB": 2}
SCOPE = Scope(user_id="bench-user", agent_id="bench-agent", session_id="bench-session")


def history(target_bytes: int, variant: int) -> list[dict[str, Any]]:
    """A tool-heavy history of about ``target_bytes`` canonical bytes; ``variant`` makes it unique."""
    rng = random.Random(variant)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(400)]
    messages: list[dict[str, Any]] = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": f"variant {variant}"}]}
    ]
    size, i = 0, 0
    while size < target_bytes:
        body = " ".join(rng.choices(words, k=1500))  # ~9 KB of text per result
        messages.append(
            {
                "id": f"m{2 * i + 1}",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_call",
                        "id": f"c{i}",
                        "name": "read_file",
                        "input": f'{{"path": "f{i}.py"}}',
                        "state": "finished",
                    }
                ],
            }
        )
        messages.append(
            {
                "id": f"m{2 * i + 2}",
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "id": f"c{i}",
                        "name": "read_file",
                        "output": body,
                        "state": "success",
                    }
                ],
            }
        )
        size += len(body) + 200
        i += 1
    return messages


def settle() -> None:
    """Start the next timed step from a clean state: no dirty pages of an earlier step left to
    flush (one fsync on ext4 may have to write them) and no garbage of an earlier restore."""
    gc.collect()
    os.sync()


def raw_write(folder: Path, data: bytes) -> float:
    """Seconds to write ``data`` to a new file in ``folder`` and fsync it (the reference)."""
    path = folder / f"raw-{uuid.uuid4().hex}"
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    path.unlink()
    return elapsed


async def timed(archive: Any, folder: Path, histories: list[list[dict[str, Any]]]) -> dict[str, float]:
    """Median seconds of a full save, of storing pre-encoded bytes, of a restore and of a raw write."""
    saves, stores, restores, raws = [], [], [], []
    # One untimed round first: the worker threads' malloc arenas grow on their first large
    # snapshots, which a long-running agent pays once, not per save.
    await archive.delete(SCOPE, await archive.save(SCOPE, histories[0] + [histories[0][0]]))
    for messages in histories:
        snap = encode_snapshot(SCOPE, messages, LIMIT)
        settle()
        raws.append(raw_write(folder, snap.data))
        settle()
        start = time.perf_counter()
        ref = await archive.save(SCOPE, messages)
        saves.append(time.perf_counter() - start)
        settle()
        start = time.perf_counter()
        restored = await archive.restore(SCOPE, ref)
        restores.append(time.perf_counter() - start)
        assert len(restored) == len(messages)
        await archive.delete(SCOPE, ref)
        settle()
        start = time.perf_counter()
        await archive._put(SCOPE, snap)
        stores.append(time.perf_counter() - start)
        await archive.delete(SCOPE, ref)
    return {
        "save": statistics.median(saves),
        "store": statistics.median(stores),
        "restore": statistics.median(restores),
        "raw": statistics.median(raws),
    }


def encode_time(histories: list[list[dict[str, Any]]]) -> float:
    """Median seconds to validate, canonically encode and hash a history."""
    times = []
    for messages in histories:
        gc.collect()
        start = time.perf_counter()
        encode_snapshot(SCOPE, messages, LIMIT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def crowded_scope(folder: Path, held: int, repeat: int) -> tuple[float, float]:
    """Median 100 KB file-archive save into an empty scope and into one holding ``held`` snapshots."""
    medians = []
    for name, count in (("empty", 0), ("crowded", held)):
        archive = FileArchive(folder / f"scope-{name}", max_bytes=LIMIT)
        for i in range(count):
            await archive.save(SCOPE, history(200, 1_000_000 + i))
        times = []
        for messages in [history(100_000, 2_000_000 + v) for v in range(repeat)]:
            settle()
            start = time.perf_counter()
            await archive.save(SCOPE, messages)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return medians[0], medians[1]


async def redis_archive() -> tuple[Archive, Callable[[], Any]] | None:
    """A Redis-backed archive in a throw-away namespace, or None when no Redis answers."""
    try:
        import redis.asyncio
    except ImportError:
        return None
    client = redis.asyncio.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1.0)
    try:
        await client.ping()
    except (redis.exceptions.ConnectionError, OSError):
        await client.aclose()
        return None
    namespace = f"tracetrim-bench:{uuid.uuid4().hex}:"
    return KeyValueArchive(RedisStore(client), max_bytes=LIMIT, namespace=namespace), client.aclose


async def main() -> None:
    """Time save and restore for each archive and size; print the median of ``--repeat`` runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=15, help="runs per size and archive (median shown)")
    parser.add_argument("--dir", type=Path, default=None, help="folder on the disk to measure")
    parser.add_argument("--no-redis", action="store_true", help="skip Redis even if it answers")
    parser.add_argument(
        "--scope-size", type=int, default=2000, help="snapshots already in the scope for the last line"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=options.dir) as tmp:
        folder = Path(tmp)
        archives: dict[str, Archive] = {
            "file": FileArchive(folder / "files", max_bytes=LIMIT),
            "memory": KeyValueArchive(MemoryStore(), max_bytes=LIMIT),
            "sqlite": KeyValueArchive(SQLiteStore(folder / "archive.sqlite3"), max_bytes=LIMIT),
        }
        closers: list[Callable[[], Any]] = []
        if not options.no_redis:
            found = await redis_archive()
            if found is None:
                print("(Redis on 127.0.0.1:6379 did not answer: skipped)")
            else:
                archives["redis"] = found[0]
                closers.append(found[1])
        print(f"disk: {folder}   repeat: {options.repeat}   Python {sys.version.split()[0]}")
        print()
        print(
            "| size | archive | save ms | of which encode ms | store ms | restore ms |"
            " raw write+fsync ms | store / raw | save / raw |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for label, target in SIZES.items():
            runs = options.repeat * RUNS_FACTOR[label]
            variants = [history(target, v) for v in range(runs)]
            megabytes = statistics.mean(len(encode_snapshot(SCOPE, h, LIMIT).data) for h in variants) / 1e6
            encode = encode_time(variants)
            for name, archive in archives.items():
                t = await timed(archive, folder, variants)
                print(
                    f"| {label} ({megabytes:.2f} MB) | {name} | {t['save'] * 1e3:.2f} |"
                    f" {encode * 1e3:.2f} | {t['store'] * 1e3:.2f} | {t['restore'] * 1e3:.2f} |"
                    f" {t['raw'] * 1e3:.2f} |"
                    f" {t['store'] / t['raw']:.2f}x | {t['save'] / t['raw']:.2f}x |"
                )
        for close in closers:
            await close()
        empty, crowded = await crowded_scope(folder, options.scope_size, options.repeat * 2)
        print()
        print(
            f"file save of 100 KB: {empty * 1e3:.2f} ms into an empty scope,"
            f" {crowded * 1e3:.2f} ms into one already holding {options.scope_size:,} snapshots"
        )


if __name__ == "__main__":
    asyncio.run(main())
