"""tracetrim's structlog loggers, routed through the standard `logging` logger named "tracetrim".

A library must not print: records go to `logging.getLogger("tracetrim")` (or a child such as
"tracetrim.decision.http") as JSON lines, silent until the host configures logging (for example
``logging.basicConfig(level=logging.INFO)``). The "tracetrim" logger carries a `logging.NullHandler`,
so even warnings stay off stderr when the host configured nothing. structlog's own global
configuration is never used, so its default (printing to stdout) cannot leak in.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote

import structlog

from tracetrim._validators import FieldValueError

LOGGER_NAME = "tracetrim"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())

_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,  # a disabled level costs no rendering
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.format_exc_info,
    structlog.processors.JSONRenderer(sort_keys=True),
]


def get_logger(name: str = LOGGER_NAME) -> Any:
    """A structlog logger that writes JSON lines to the stdlib logger ``name`` ("tracetrim" or a child)."""
    if name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
        raise FieldValueError(f"tracetrim loggers live under {LOGGER_NAME!r}, got {name!r}")
    return structlog.wrap_logger(
        logging.getLogger(name), processors=_PROCESSORS, wrapper_class=structlog.stdlib.BoundLogger
    )


logger: Any = get_logger()


REDACTED = "***"
"""What a secret is replaced with wherever tracetrim shows text that held one."""

_SHORTEST_SECRET = 8
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_URL_BODY = re.compile(r"[^\s'\"<>`]+")
"""A URL after its "://": everything up to whitespace, a quote or a bracket."""
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")


def redact_url(url: str) -> str:
    """``url`` as it may be shown: user-info, every query value and the fragment blanked.

    ``https://user:KEY@host/v1?api_key=KEY&v=2`` becomes ``https://***@host/v1?api_key=***&v=***``.
    Scheme, host, port, path and query names stay, so the URL still says where it points. Every query
    value goes, not only the ones named like keys, because a name (``k``, ``sig``, ``code``) says
    nothing reliable about what its value is. A secret in the path itself cannot be told apart from
    a path and is left as written. Text that is not a URL comes back unchanged.
    """
    head, hash_mark, fragment = url.partition("#")
    head, question_mark, query = head.partition("?")
    scheme = _SCHEME.match(head)
    if scheme is not None:
        # Any number of slashes: "redis:/user:KEY@host", a typo, must not show the key either.
        lead = scheme.end()
        while head[lead : lead + 1] == "/":
            lead += 1
        authority, slash, path = head[lead:].partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at and userinfo:
            head = f"{head[:lead]}{REDACTED}@{host}{slash}{path}"
    if question_mark:
        query = "&".join(_redact_parameter(part) for part in query.split("&"))
    shown = head + question_mark + query
    if hash_mark:
        shown += "#" + (REDACTED if fragment else "")
    return shown


def _redact_parameter(part: str) -> str:
    name, equals, value = part.partition("=")
    if equals:
        return f"{name}={REDACTED}" if value else part
    return REDACTED if part else part  # a bare token (?KEY) may be the key itself


def _scheme_start(text: str, start: int, end: int) -> int:
    """Where the scheme before a "://" at ``end`` begins: its first ASCII letter in the run of scheme
    characters before it, past ``start`` (``end`` if there is none: no URL). A URL glued to a word
    (``_https://``, ``1http://``) is found too: shown text errs towards blanking."""
    begin = end
    while begin > start and text[begin - 1] in _SCHEME_CHARS:
        begin -= 1
    while begin < end and not (text[begin].isascii() and text[begin].isalpha()):
        begin += 1
    return begin


def redact_urls(text: str) -> str:
    """``text`` with every URL in it (a scheme, "://", then up to whitespace, a quote or a bracket)
    passed through `redact_url`, for messages and log lines.

    Found from each "://" backwards, so the text is read once: a regex from every word start read
    "a.a.a..." once per letter."""
    out: list[str] = []
    done = 0
    at = text.find("://")
    while at != -1:
        begin = _scheme_start(text, done, at)
        body = _URL_BODY.match(text, at + 3)
        if begin == at or body is None:
            at = text.find("://", at + 3)
            continue
        out += [text[done:begin], redact_url(text[begin : body.end()])]
        done = body.end()
        at = text.find("://", done)
    return "".join(out) + text[done:] if out else text


class _RedactSecretUrls(logging.Filter):
    """Blanks the secrets of registered URLs in records of a logger tracetrim does not own.

    httpx logs every request's full URL at INFO (``HTTP Request: POST https://user:KEY@host/...``), so
    a key in a base URL would reach the host's logs through it. Only records that hold a registered
    URL's secret are rewritten; the host's other httpx traffic is logged as httpx wrote it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        # Base URLs (without their query) that carry a secret, so a password too short to be listed
        # among the secrets still has its record rewritten.
        self.bases: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.bases:
            return True
        text = record.getMessage()
        if any(part in text for part in (*self.bases, *self.secrets)):
            shown = redact_urls(text)
            for secret in self.secrets:  # one not inside a URL (a decoded password, say)
                shown = shown.replace(secret, REDACTED)
            record.msg, record.args = shown, None
        return True


_URL_FILTER = _RedactSecretUrls()
_FILTERED_LOGGERS = ("httpx", "httpcore")
for _name in _FILTERED_LOGGERS:
    logging.getLogger(_name).addFilter(_URL_FILTER)


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets of ``url`` as plain strings, to blank wherever they turn up outside a URL: the
    password (or a lone user-info token), query values and the fragment, each also percent-decoded,
    longest first. Values under 8 characters are left out: blanking every ``2`` or ``json`` in a
    message would make it unreadable, and inside a URL `redact_url` blanks them anyway."""
    head, _, fragment = url.partition("#")
    head, _, query = head.partition("?")
    found: set[str] = {fragment}
    scheme = _SCHEME.match(head)
    if scheme is not None:
        userinfo, at, _host = head[scheme.end() :].lstrip("/").partition("/")[0].rpartition("@")
        if at:
            user, colon, password = userinfo.partition(":")
            found.add(password if colon else user)  # a lone user-info is a token; a user name is not
    for part in query.split("&") if query else ():
        name, equals, value = part.partition("=")
        found.add(value if equals else name)
    found |= {unquote(piece) for piece in found}
    return tuple(sorted((s for s in found if len(s) >= _SHORTEST_SECRET), key=len, reverse=True))


def hide_in_logs(url: str) -> None:
    """Have httpx's log lines show ``url``'s secrets blanked (see `redact_url`); idempotent, and a
    no-op for a URL with nothing to blank. Called by every HTTP client tracetrim builds from a URL."""
    if redact_url(url) != url:
        _URL_FILTER.secrets.update(url_secrets(url))
        _URL_FILTER.bases.add(url.partition("#")[0].partition("?")[0])
