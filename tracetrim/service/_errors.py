"""`ApiError`: a client-facing HTTP error with a stable code, one message and the field at fault."""

from __future__ import annotations

from typing import Any

from tracetrim._errors import TracetrimError

MAX_MESSAGE_CHARS = 2000
"""Longest error message answered: a message quoting a megabyte key would otherwise echo it back."""


def shown(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` safe to put in any JSON answer: lone surrogates (which UTF-8 cannot carry, so the
    answer itself would fail to render) as visible ``\\udXXX`` escapes, and cut to ``limit`` characters."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit:,} more characters)"
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class ApiError(TracetrimError):
    """An error answered as ``{"error": {"code", "message", "field"?}}`` with HTTP ``status``.

    Raised by request parsing and handlers for anything the client can correct (4xx) and for the
    few server-side conditions worth naming (archive unavailable or corrupted); never carries a
    traceback.
    """

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None) -> None:
        # A message may quote the client's own input (an unknown key, a bad value): made safe here,
        # every way of answering an error renders.
        message = shown(message)
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = shown(field, 500) if field is not None else None

    def body(self) -> dict[str, Any]:
        """The JSON error document."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


def invalid(field: str, message: str, code: str = "invalid_field") -> ApiError:
    """A 422 for one request field, the message prefixed by the field's path."""
    return ApiError(422, code, f"{field}: {message}" if field else message, field=field or None)
