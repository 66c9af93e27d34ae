"""Reading a request body as JSON with a hard size limit, without ever buffering more than the limit."""

from __future__ import annotations

import asyncio
import io
import json
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from tracetrim._validators import FieldValueError
from tracetrim.service._errors import ApiError

_T = TypeVar("_T")

_OFF_LOOP_BYTES = 1 << 20
"""Bodies above this are parsed in a worker thread so the event loop keeps serving other requests."""


def _reject_constant(name: str) -> Any:
    raise FieldValueError(f"{name} is not valid JSON")


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
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400,
            "invalid_json",
            f"request body is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
        ) from None
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ApiError(400, "invalid_json", "request body is nested too deeply") from None


async def structure_async(body: bytes, structure: Callable[[Any], _T]) -> _T:
    """``structure(parse_json(body))``, in a worker thread for large bodies: validating the history of
    a multi-megabyte request would hold the event loop as long as parsing it does."""
    if len(body) > _OFF_LOOP_BYTES:
        return await asyncio.to_thread(lambda: structure(parse_json(body)))
    return structure(parse_json(body))


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
