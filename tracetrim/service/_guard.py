"""`RequestGuard`: the ASGI checks every request passes first (Host, Origin, bearer token, JSON only)."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from tracetrim._json import compact_json

_log = logging.getLogger("tracetrim.service")

OPEN_PATHS = frozenset({"/healthz", "/health"})
"""Paths a load balancer probes without a token (they still pass the Host check)."""

JEV_PREFIXES = ("/v1/systemone", "/v1/models")
"""Paths answered in the Jev error shape (``{"detail": {"error_type", "message"}}``)."""

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_host(value: str) -> tuple[str, int | None] | None:
    """The name and port of a ``Host`` header value (or an Origin's authority), or None when it is not
    strict RFC 3986 host syntax.

    Accepted: a DNS name (dot-separated labels of letters, digits, ``-`` and ``_``, none empty, at
    most one trailing dot), an IPv4 address, or an IPv6 address in brackets (``[::1]``, and nothing
    else inside them: no zone, no IPvFuture), each optionally followed by ``:port`` (1 to 65535).
    The name comes back lower case, without its trailing dot, IPv6 without brackets in its compressed
    form. Refused, among others: ``[::1].evil.example``, ``[::1]evil.example:80``, ``localhost..``,
    a bare ``::1``, user information (``user@host``), percent escapes and empty ports.
    """
    value = value.strip()
    if not value.isascii():  # before lower(): no other script may fold into an allowed ASCII name
        return None
    value = value.lower()
    port: int | None = None
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            return None
        literal, rest = value[1:close], value[close + 1 :]
        if rest:
            # after the literal only a port may follow: "[::1].evil.example" names another host
            if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
                return None
            port = int(rest[1:])
        if "%" in literal:  # a zone id (RFC 6874) only means something on the client's own machine
            return None
        try:
            name = ipaddress.IPv6Address(literal).compressed
        except ValueError:  # not an IPv6 address (an IPv4 one, a zone id, IPvFuture, a name)
            return None
    else:
        name, sep, digits = value.partition(":")
        if sep:
            if not _PORT.fullmatch(digits):
                return None  # an empty or non-numeric port, or a second colon (a bare IPv6 address)
            port = int(digits)
        if name.endswith("."):
            name = name[:-1]  # one trailing dot names the same host; "localhost.." is refused below
        labels = name.split(".")
        if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
            return None
    if port is not None and not 0 < port <= 65535:
        return None
    return name, port


def host_name(value: str) -> str:
    """The name part of a ``Host`` header (see `parse_host`), or "" when the value is not a valid host."""
    parsed = parse_host(value)
    return parsed[0] if parsed is not None else ""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(name: str, allowed: Iterable[str]) -> bool:
    """``name`` matches an entry of ``allowed``: exactly, ``*.suffix`` for subdomains, or ``*``."""
    for pattern in allowed:
        if pattern == "*" or pattern == name:
            return True
        if pattern.startswith("*.") and name.endswith(pattern[1:]) and len(name) > len(pattern) - 1:
            return True
    return False


class RequestGuard:
    """Refuses, before any handler runs, what a web page or a stranger could send.

    In order: a ``Host`` not in ``allowed_hosts`` is 421 (a DNS-rebinding page names its own host);
    an ``Origin`` whose host is not allowed is 403 (a cross-site browser request); without the bearer
    ``token`` (when one is set) it is 401, except on `OPEN_PATHS`; a body that is not
    ``application/json`` is 415 (the content types a browser sends without a CORS preflight are
    exactly the ones refused). Errors are JSON, in the Jev shape on `JEV_PREFIXES`.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str], token: str | None) -> None:
        self.app = app
        self.allowed_hosts = tuple(allowed_hosts)
        self._token = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, message, headers = refusal
        path = str(scope.get("path", ""))
        _log.info("refused %s %s: %s", scope.get("method"), path, code)
        await _send_error(send, path, status, code, message, headers)

    def _refusal(self, scope: Scope) -> tuple[int, str, str, list[tuple[bytes, bytes]]] | None:
        host = _header(scope, b"host")
        name = host_name(host) if host is not None else ""
        if not name or not host_allowed(name, self.allowed_hosts):
            shown = repr(host) if host is not None else "no Host header"
            return (
                421,
                "host_not_allowed",
                f"this server does not answer for {shown}; allowed: {', '.join(self.allowed_hosts)}",
                [],
            )
        origin = _header(scope, b"origin")
        if origin is not None:
            # the authority, parsed as strictly as Host: "http://[::1].evil.example" is not loopback
            origin_host = _origin_host(origin)
            if not origin_host or not host_allowed(origin_host, self.allowed_hosts):
                return 403, "origin_not_allowed", f"requests from origin {origin!r} are not allowed", []
        if self._token is not None and scope.get("path") not in OPEN_PATHS:
            given = _header(scope, b"authorization")
            if given is None:
                return (
                    401,
                    "missing_token",
                    "this server needs Authorization: Bearer <token>",
                    [(b"www-authenticate", b'Bearer realm="tracetrim"')],
                )
            scheme, _, credential = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credential.strip().encode("latin-1"), self._token
            ):
                return (
                    401,
                    "invalid_token",
                    "the bearer token is not valid for this server",
                    [(b"www-authenticate", b'Bearer realm="tracetrim", error="invalid_token"')],
                )
        if scope.get("method") in _BODY_METHODS:
            content_type = _header(scope, b"content-type")
            media = (content_type or "").split(";", 1)[0].strip().lower()
            if media != "application/json":
                shown = repr(content_type) if content_type is not None else "none"
                return (
                    415,
                    "unsupported_media_type",
                    f"request bodies must be Content-Type: application/json, got {shown}",
                    [],
                )
        return None


def _origin_host(origin: str) -> str:
    """The host name of an ``Origin`` header (``scheme://host[:port]``), or "" for ``null`` or junk."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return ""
    if not parts.scheme or parts.path not in ("", "/") or parts.query or parts.fragment:
        return ""
    return host_name(parts.netloc)


def error_body(path: str, code: str, message: str) -> dict[str, object]:
    """The JSON error document for ``path``: Jev's shape on `JEV_PREFIXES`, the service's elsewhere."""
    if path.startswith(JEV_PREFIXES):
        kind = "authentication_error" if code in ("missing_token", "invalid_token") else code
        return {"detail": {"error_type": kind, "message": message}}
    return {"error": {"code": code, "message": message}}


async def _send_error(
    send: Send, path: str, status: int, code: str, message: str, headers: list[tuple[bytes, bytes]]
) -> None:
    body = compact_json(error_body(path, code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
