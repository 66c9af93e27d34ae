"""Restore refuses what the writer would never have written (issue 35, item 6), in every archive kind.

Someone with write access to the store puts a snapshot there under its own correct digest: the bytes
hash to the reference, so the digest check passes. What they hold is a valid-looking history with a
NaN in it, or JSON the archive never writes (other spacing, a repeated key, ASCII escapes, an extra
key, a lone surrogate). The library must raise `ArchiveCorruptedError` naming the reference, and
``tracetrim restore`` must print one error line and exit non-zero, never a document with ``NaN`` in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests._archive_support import make_history, postgres_table, postgres_url, redis_namespace
from tracetrim._json import canonical_bytes, sha256_hex
from tracetrim._scope import Scope
from tracetrim.archive import (
    ArchiveCorruptedError,
    FileArchive,
    KeyValueArchive,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SQLiteStore,
    close_archive,
    open_archive,
    restore_calls,
)
from tracetrim.archive._protocol import scope_key, snapshot_document
from tracetrim.cli import main

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")
MAX_BYTES = 2_000_000
FLOAT = 12345.5  # a number in the history that each forgery can respell
HISTORY = make_history(3)
HISTORY[0]["metadata"]["measure"] = FLOAT


def _genuine(scope: Scope = SCOPE) -> bytes:
    return canonical_bytes(snapshot_document(scope, HISTORY))


def _respell_number(spelling: bytes) -> Callable[[bytes], bytes]:
    def forge(data: bytes) -> bytes:
        assert data.count(b"12345.5") == 1
        return data.replace(b"12345.5", spelling)

    return forge


def _dumps(**options: Any) -> Callable[[bytes], bytes]:
    return lambda data: json.dumps(json.loads(data), **options).encode()


def _repeat_key(data: bytes) -> bytes:
    # The first text block's key written twice: json keeps the last, the writer writes each key once.
    return data.replace(b'{"text":', b'{"text":"hidden","text":', 1)


def _lone_surrogate(data: bytes) -> bytes:
    return data.replace(b'"text":"Done so far."', b'"text":"Done so far.\\ud800"', 1)


def _version_first(data: bytes) -> bytes:
    assert data.endswith(b',"version":1}')
    return b'{"version":1,' + data[1 : -len(b',"version":1}')] + b"}"


def _extra_key(data: bytes) -> bytes:
    return canonical_bytes({**json.loads(data), "zz_injected": {"role": "system"}})


# Each forgery: genuine snapshot bytes -> bytes the writer would never write, stored under their own digest.
FORGERIES: dict[str, Callable[[bytes], bytes]] = {
    "NaN": _respell_number(b"NaN"),
    "Infinity": _respell_number(b"Infinity"),
    "-Infinity": _respell_number(b"-Infinity"),
    "1e999 (inf as a float)": _respell_number(b"1e999"),
    "spaces after separators": _dumps(sort_keys=True, ensure_ascii=False),
    "keys out of order": _version_first,
    "ASCII escapes": _dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True),
    "a repeated key": _repeat_key,
    "a lone surrogate": _lone_surrogate,
    "an unknown top-level key": _extra_key,
    "a number respelled (12345.50)": _respell_number(b"12345.50"),
}
KINDS = ["file", "memory", "sqlite", "redis", "postgres"]

Put = Callable[[str, bytes], Awaitable[None]]


@contextlib.asynccontextmanager
async def _archive(kind: str, tmp_path: Path) -> AsyncIterator[tuple[Any, Put]]:
    """An archive of ``kind`` and a way to store any bytes under any reference, behind its back."""
    if kind == "file":
        file_archive = FileArchive(tmp_path / "archive", max_bytes=MAX_BYTES)

        async def put_file(ref: str, data: bytes) -> None:
            folder = tmp_path / "archive" / scope_key(SCOPE)
            await asyncio.to_thread((folder / f"{ref}.json").write_bytes, data)

        yield file_archive, put_file
        return
    if kind == "redis":
        async with redis_namespace() as (client, namespace):
            yield _kv(KeyValueArchive(RedisStore(client), MAX_BYTES, namespace=namespace))
        return
    if kind == "postgres":
        async with postgres_table() as (_, url, table):
            store = PostgresStore(url, table=table)
            yield _kv(KeyValueArchive(store, MAX_BYTES))
            await store.aclose()
        return
    store_: Any = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "store.db")
    yield _kv(KeyValueArchive(store_, MAX_BYTES))
    if kind == "sqlite":
        await store_.aclose()


def _kv(archive: KeyValueArchive) -> tuple[KeyValueArchive, Put]:
    async def put(ref: str, data: bytes) -> None:
        assert await archive.store.create_if_absent(archive._prefix(SCOPE) + ref, data)

    return archive, put


@pytest.mark.parametrize("forgery", list(FORGERIES))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_forged_snapshot_under_its_own_digest_is_refused(
    kind: str, forgery: str, tmp_path: Path
) -> None:
    async with _archive(kind, tmp_path) as (archive, put):
        genuine_ref = await archive.save(SCOPE, HISTORY)
        data = FORGERIES[forgery](_genuine())
        ref = sha256_hex(data)
        await put(ref, data)
        with pytest.raises(ArchiveCorruptedError) as refused:
            await archive.restore(SCOPE, ref)
        assert f"snapshot {ref} " in str(refused.value) and "is corrupted" in str(refused.value)
        with pytest.raises(ArchiveCorruptedError, match=ref):
            await restore_calls(archive, SCOPE, ref, ["c0"])
        assert await archive.restore(SCOPE, genuine_ref) == HISTORY  # the genuine one is untouched


async def test_the_reasons_say_what_is_wrong(tmp_path: Path) -> None:
    genuine = _genuine()
    forged = {name: forge(genuine) for name, forge in FORGERIES.items()}
    assert genuine not in forged.values() and len(set(forged.values())) == len(forged)
    # Some decode to the very history: only their bytes give them away.
    for name in ("spaces after separators", "keys out of order", "ASCII escapes"):
        assert json.loads(forged[name])["messages"] == HISTORY
    archive = KeyValueArchive(MemoryStore(), MAX_BYTES)
    expected = {
        "NaN": "non-finite number NaN",
        "-Infinity": "non-finite number -Infinity",
        "1e999 (inf as a float)": "1e999, which is not finite",
        "an unknown top-level key": "keys no snapshot has ('zz_injected')",
        "a repeated key": "not what the archive writes",
        "spaces after separators": "not what the archive writes",
    }
    for forgery, reason in expected.items():
        data = FORGERIES[forgery](_genuine())
        await archive.store.create_if_absent(archive._prefix(SCOPE) + sha256_hex(data), data)
        with pytest.raises(ArchiveCorruptedError, match=re.escape(reason)):
            await archive.restore(SCOPE, sha256_hex(data))


@contextlib.asynccontextmanager
async def _cli_archive(kind: str, tmp_path: Path) -> AsyncIterator[tuple[str, Scope, Put]]:
    """An archive URL the CLI opens itself, a scope of its own, and a way to plant bytes in it."""
    scope = Scope(user_id=f"u-{uuid.uuid4().hex}", agent_id="a", session_id="s")
    if kind == "file":
        url = f"file:{tmp_path / 'archive'}"
    elif kind == "sqlite":
        url = f"sqlite:{tmp_path / 'archive.sqlite3'}"
    elif kind == "redis":
        async with redis_namespace():  # skips when no Redis answers
            pass
        url = "redis://127.0.0.1:6379/0"
    else:
        url = await postgres_url()
    archive = open_archive(url)
    await archive.save(scope, HISTORY)  # the scope's folder or table exists, as for any real user
    planted: list[str] = []

    async def put(ref: str, data: bytes) -> None:
        planted.append(ref)
        if isinstance(archive, FileArchive):
            await asyncio.to_thread((archive.root / scope_key(scope) / f"{ref}.json").write_bytes, data)
        else:
            assert isinstance(archive, KeyValueArchive)
            assert await archive.store.create_if_absent(archive._prefix(scope) + ref, data)

    try:
        yield url, scope, put
    finally:
        for ref in [*planted, sha256_hex(_genuine(scope))]:
            with contextlib.suppress(Exception):
                await archive.delete(scope, ref)
        await close_archive(archive)


@pytest.mark.parametrize("kind", ["file", "sqlite", "redis", "postgres"])  # memory: lives in one process
async def test_cli_restore_of_a_nan_snapshot_is_one_error_line(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with _cli_archive(kind, tmp_path) as (url, scope, put):
        data = FORGERIES["NaN"](_genuine(scope))
        ref = sha256_hex(data)
        await put(ref, data)
        flags = ["--archive", url, "--user", scope.user_id, "--agent", "a", "--session", "s"]
        for extra in ([], ["--call-id", "c0"], ["--format", "openai"]):
            code = await asyncio.to_thread(main, ["restore", *flags, ref, *extra])
            out, err = capsys.readouterr()
            assert code != 0 and out == ""
            assert err.startswith("tracetrim: error: snapshot ") and err.count("\n") == 1
            assert ref in err and "non-finite number NaN" in err


def test_the_service_answers_a_forged_snapshot_with_409_naming_it() -> None:
    """A NaN snapshot under its own digest, through the real app: a conflict that names the reference."""
    pytest.importorskip("uvicorn")
    import httpx

    from tests._asgi import ThreadedServer
    from tracetrim.decision import ScriptedDecisionModel
    from tracetrim.service import ServiceSettings, create_app

    archive = KeyValueArchive(MemoryStore(), MAX_BYTES)
    forged = FORGERIES["NaN"](_genuine())
    ref = sha256_hex(forged)
    asyncio.run(_kv(archive)[1](ref, forged))
    settings = ServiceSettings(model=ScriptedDecisionModel({}, default=0.0), archive=archive)
    with ThreadedServer(create_app(settings), lifespan="on") as server:
        answer = httpx.post(
            f"{server.url}/v1/restore", json={"scope": SCOPE.as_dict(), "archive_ref": ref}, timeout=30
        )
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "archive_corrupted" and error["field"] == "archive_ref"
    assert ref in error["message"] and "non-finite" in error["message"]
