"""Helpers shared by the archive tests: realistic histories and a by-hand compaction (no tests here)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

from tests.conftest import service_unavailable
from tracetrim._snapshot import Message


def make_history(pairs: int, *, seed: int = 0, result_chars: int = 400, tag: str = "") -> list[Message]:
    """A user turn, then ``pairs`` tool calls (some sharing a message), with text, thinking and metadata."""
    rng = random.Random(seed)
    messages: list[Message] = [
        {
            "id": "m0",
            "role": "user",
            "name": "user",
            "content": [{"type": "text", "text": f"Fix the failing payment retry {tag} ✓ — naïve café"}],
            "metadata": {"source": "cli", "nested": {"k": [1, 2.5, None, True]}},
        },
    ]
    n = 1
    for i in range(pairs):
        call_id = f"c{i}"
        body = "".join(rng.choice('abcdefghij \n{}"\\é漢') for _ in range(result_chars))
        call = {
            "type": "tool_call",
            "id": call_id,
            "name": rng.choice(["read_file", "search_code"]),
            "input": json.dumps({"path": f"src/mod{i}.py"}),
            "state": "finished",
        }
        result = {
            "type": "tool_result",
            "id": call_id,
            "name": call["name"],
            "output": body,
            "state": "success",
            "metadata": {"elapsed_ms": rng.randint(1, 900)},
        }
        if i % 3 == 2:
            # call and result in one assistant message, after some text: blocks move within a message
            messages.append(
                {
                    "id": f"m{n}",
                    "role": "assistant",
                    "name": "agent",
                    "content": [{"type": "text", "text": f"step {i}"}, call, result],
                }
            )
            n += 1
        else:
            messages.append(
                {
                    "id": f"m{n}",
                    "role": "assistant",
                    "name": "agent",
                    "content": [{"type": "thinking", "thinking": f"why {i}"}, call],
                }
            )
            messages.append(
                {
                    "id": f"m{n + 1}",
                    "role": "user",
                    "name": "user",
                    "content": [result],
                    "unknown_field": {"kept": i},
                }
            )
            n += 2
    messages.append(
        {
            "id": f"m{n}",
            "role": "assistant",
            "name": "agent",
            "content": [{"type": "text", "text": "Done so far."}],
        }
    )
    return messages


def compact_by_hand(messages: list[Message], actions: dict[str, str], ref: str) -> list[Message]:
    """Apply drop_result / drop_call to a copy the way the planner's rebuild stage does.

    A stand-in for the planner's rebuild (DESIGN.md section 3, step 7), kept because rehydrate's
    property tests need any mix of actions on any pair, which the real planner (guards, thresholds,
    "only if shorter") will not produce on demand; `test_restore_after_plan` covers real planner
    output. A shortened result keeps id/name/state, gets a short ``output`` and
    ``metadata.tracetrim = {action, archive_ref, original_chars}`` (other metadata kept); a dropped
    pair loses both blocks, and a message goes only when that leaves it empty.
    """
    out: list[Message] = []
    for message in copy.deepcopy(messages):
        content: list[dict[str, Any]] = []
        for block in message["content"]:
            is_tool = block["type"] in ("tool_call", "tool_result")
            action = actions.get(block["id"]) if is_tool else None
            if action == "drop_call":
                continue
            if action == "drop_result" and block["type"] == "tool_result":
                original = block["output"]
                marker = f"[tracetrim: shortened; call {block['id']}, archive {ref}]"
                block["output"] = f"{original[:20]}… {marker}"
                block.setdefault("metadata", {})["tracetrim"] = {
                    "action": "drop_result",
                    "archive_ref": ref,
                    "original_chars": len(original),
                }
            content.append(block)
        if message["content"] and not content:
            continue
        message["content"] = content
        out.append(message)
    return out


@contextlib.asynccontextmanager
async def redis_namespace() -> AsyncIterator[tuple[Any, str]]:
    """A client of the real Redis on 127.0.0.1:6379 and a fresh key prefix, whose keys go afterwards.

    Skips (fails in CI) when no Redis answers.
    """
    import redis.asyncio

    client = redis.asyncio.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1.0)
    try:
        await client.ping()
    except (redis.exceptions.ConnectionError, OSError) as exc:
        await client.aclose()
        service_unavailable(f"no Redis on 127.0.0.1:6379 ({exc})")
    namespace = f"tracetrim-test:{uuid.uuid4().hex}:"
    try:
        yield client, namespace
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


POSTGRES_URLS = ("postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test")
"""Where the real PostgreSQL of the test setup answers (trust auth); TRACETRIM_TEST_POSTGRES_URL overrides."""


async def postgres_url() -> str:
    """The URL of the real PostgreSQL on 127.0.0.1:5432 (database ``test``); skips (fails in CI) when down."""
    import psycopg

    candidates = (
        [os.environ["TRACETRIM_TEST_POSTGRES_URL"]] if "TRACETRIM_TEST_POSTGRES_URL" in os.environ else []
    )
    problems = []
    for url in [*candidates, *POSTGRES_URLS]:
        try:
            conn = await psycopg.AsyncConnection.connect(url, connect_timeout=2)
        except psycopg.Error as exc:
            problems.append(f"{url}: {str(exc).strip().splitlines()[-1]}")
            continue
        await conn.close()
        return url
    service_unavailable(f"no PostgreSQL on 127.0.0.1:5432 ({'; '.join(problems)})")
    raise AssertionError("unreachable")  # service_unavailable skips or fails


@contextlib.asynccontextmanager
async def postgres_table() -> AsyncIterator[tuple[Any, str, str]]:
    """A connection to the real PostgreSQL, its URL and a fresh table name, the table dropped afterwards."""
    import psycopg
    from psycopg import sql

    url = await postgres_url()
    table = f"tracetrim_test_{uuid.uuid4().hex[:16]}"
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        yield conn, url, table
    finally:
        await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        await conn.close()
