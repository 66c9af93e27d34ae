"""Reading a request body as JSON within hard limits: bytes, Unicode, and the history's message counts."""

from __future__ import annotations

import io
import json
import re
import zlib
from collections.abc import AsyncIterator
from typing import Any

from tracetrim._json import strict_loads
from tracetrim.service._errors import ApiError

OFF_LOOP_BYTES = 1 << 20
"""Bodies above this are parsed in a planning thread so the event loop keeps serving other requests."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_SURROGATE_ESCAPE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def too_large(limit: int, size: int | None = None) -> ApiError:
    """The 413 answered for a body over ``limit`` bytes."""
    got = f"{size} bytes" if size is not None else f"more than {limit} bytes"
    return ApiError(
        413, "body_too_large", f"request body is {got}; this server accepts at most {limit} bytes"
    )


async def read_limited(content_length: str | None, chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """The whole body, or a 413 as soon as the declared length or the bytes received pass ``limit``."""
    if content_length is not None:
        try:
            declared = int(content_length)
        except ValueError:
            raise ApiError(400, "invalid_content_length", "Content-Length is not a whole number") from None
        if declared > limit:
            raise too_large(limit, declared)
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``; a 400 naming the line and column of the first problem.

    NaN and Infinity are refused: they are not JSON, and no answer could carry them back.
    """
    if not body.strip():
        raise ApiError(400, "empty_body", "request body is empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "invalid_json", f"request body is not UTF-8 (byte {exc.start})") from None
    try:
        value = strict_loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400,
            "invalid_json",
            f"request body is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
        ) from None
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from None
    _refuse_lone_surrogates(text)
    return value


def _refuse_lone_surrogates(text: str) -> None:
    """A 400 naming the place of the first ``\\uD800``-``\\uDFFF`` escape that is not half of a pair.

    Python's JSON reader keeps such an escape as a lone surrogate, which no UTF-8 text can hold: the
    first attempt to encode it (a canonical JSON, a file name, the answer itself) would fail deep in
    the service. ``text`` is valid JSON (already parsed), so every ``\\u`` is inside a string.
    """
    if "\\u" not in text:
        return
    paired_at = -1
    for match in _SURROGATE_ESCAPE.finditer(text):
        start = match.start()
        if start == paired_at:
            continue  # the low half of the pair just checked
        before = start - 1
        while before >= 0 and text[before] == "\\":
            before -= 1
        backslashes = start - 1 - before
        if backslashes % 2:
            continue  # "\\\\ud800": an escaped backslash, then the letters "ud800"
        after = match.end()
        high = match.group()[3] in "89abAB"
        if high and _LOW_SURROGATE_ESCAPE.match(text, after):
            paired_at = after
            continue
        line = text.count("\n", 0, start) + 1
        column = start - text.rfind("\n", 0, start)
        raise ApiError(
            400,
            "invalid_json",
            f"request body is not valid Unicode JSON (line {line}, column {column}: "
            f"{match.group()} is a lone UTF-16 surrogate, which no UTF-8 text can carry)",
        )


def check_history_size(data: Any, *, max_messages: int, max_blocks: int) -> None:
    """A 413 (``transcript_too_large``) for a body whose ``messages`` hold more entries or blocks than
    the server reads, from counts alone: before anything is converted, validated or copied.

    Converting and validating cost per message and per block far more than parsing does (a body of
    250,000 one-line messages took seconds to convert only to be refused by the planner's size
    limit), so the counts are refused first. Blocks are the list items at a message's first two
    levels: content blocks, tool calls, and a nested message's content (Claude Code, Codex).
    """
    if not isinstance(data, dict):
        return
    messages = data.get("messages")
    if not isinstance(messages, list):
        return  # not a history: structuring names the field
    if len(messages) > max_messages:
        raise ApiError(
            413,
            "transcript_too_large",
            f"messages holds {len(messages):,} entries; this server reads at most {max_messages:,}",
            field="messages",
        )
    blocks = 0
    for message in messages:
        if isinstance(message, dict):
            for value in message.values():
                if isinstance(value, list):
                    blocks += len(value)
                elif isinstance(value, dict):
                    blocks += sum(len(inner) for inner in value.values() if isinstance(inner, list))
        elif isinstance(message, list):
            blocks += len(message)
        if blocks > max_blocks:
            raise ApiError(
                413,
                "transcript_too_large",
                f"messages hold more than {max_blocks:,} blocks (content blocks, tool calls and other "
                f"list items of a message); this server reads at most {max_blocks:,}",
                field="messages",
            )


def _zstd(body: bytes, limit: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python 3.14
        except ImportError:
            raise ApiError(
                415,
                "unsupported_encoding",
                "Content-Encoding zstd needs the zstandard package on this server",
            ) from None
        try:
            return bytes(zstd.ZstdDecompressor().decompress(body, max_length=limit + 1))
        except zstd.ZstdError:
            raise ApiError(400, "invalid_encoding", "the zstd request body is corrupt") from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)) as reader:
            return bytes(reader.read(limit + 1))
    except zstandard.ZstdError:
        raise ApiError(400, "invalid_encoding", "the zstd request body is corrupt") from None


def _gzip(body: bytes, limit: int) -> bytes:
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(body, limit + 1)
    except zlib.error:
        raise ApiError(400, "invalid_encoding", "the gzip request body is corrupt") from None
    if len(out) <= limit and not inflate.eof:
        raise ApiError(400, "invalid_encoding", "the gzip request body is truncated")
    return out


def decode_content(body: bytes, encoding: str | None, limit: int) -> bytes:
    """``body`` decompressed per its ``Content-Encoding`` (identity, gzip, zstd: what Jev SDKs send),
    never inflating past ``limit`` bytes (413); 415 for any other encoding."""
    name = (encoding or "identity").strip().lower()
    if name == "identity":
        return body
    if name not in ("gzip", "zstd"):
        raise ApiError(
            415, "unsupported_encoding", f"Content-Encoding {encoding!r} is not supported; use gzip or zstd"
        )
    out = _gzip(body, limit) if name == "gzip" else _zstd(body, limit)
    if len(out) > limit:
        raise too_large(limit)
    return out
