"""`ServiceSettings`: what one service instance uses (model, archive, limits, security); `make_archive`."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs

from tracetrim._logging import redact_url
from tracetrim._validators import FieldTypeError, FieldValueError, callable_or_none, int_in, positive_number
from tracetrim.archive import DEFAULT_MAX_BYTES, Archive, FileArchive, open_archive
from tracetrim.decision import DecisionModel
from tracetrim.decision._remote import ModelOrJudge, check_model

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""8 MiB: a history at the planner's default ``max_transcript_chars`` (5,000,000) plus JSON escapes."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The ``Host`` names a service accepts by default: only a client on this machine names these."""

DEFAULT_MAX_MESSAGES = 50_000
"""Entries of a body's ``messages`` read at most. Under the planner's default ``max_transcript_chars``
(5,000,000) a history this long would average 100 characters a message, less than any real agent's;
a body of 50,000 one-line messages costs about 1.3 s to convert and validate on one core."""

DEFAULT_MAX_BLOCKS = 250_000
"""Blocks (content blocks, tool calls) read at most across a body's messages: five per message."""

TOKEN_ENV = "TRACETRIM_API_TOKEN"
"""The environment variable `tracetrim serve` reads its bearer token from."""


_positive_int = int_in(1)
_positive_seconds = positive_number("seconds")
_callable_or_none = callable_or_none()


def _model_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        check_model(value)


def _host_names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise FieldTypeError("ServiceSettings.allowed_hosts must be a sequence of host names, not one string")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name.strip() or any(c in name for c in "/ \t"):
            raise FieldValueError(
                f"ServiceSettings.allowed_hosts: {name!r} is not a host name "
                "(write 'example.com', '*.example.com', an IP address, or '*' for any)"
            )
    return tuple(name.strip().lower().rstrip(".") for name in names)


def _token(instance: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str) or len(value) < 16 or any(c.isspace() for c in value):
        raise FieldValueError(
            "ServiceSettings.token must be at least 16 characters without spaces "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


@attrs.frozen(kw_only=True)
class ServiceSettings:
    """Settings of one service app; every field is optional.

    - ``model``: the decision model shared by all requests; None builds one with
      `tracetrim.decision.from_env` when the app is created (the app then closes it on shutdown).
    - ``systemone_model``: the model ``POST /v1/systemone`` serves; None serves ``model`` when it
      answers questions about a state (a `DecisionModel`). With neither (the learned judge reads whole
      histories, which a System One request does not carry) the endpoint answers 501
      ``no_decision_model``, naming ``DECISION_MODEL_BACKEND``.
    - ``archive``: where ENFORCE saves originals and restores read from; None means the service
      answers ENFORCE and restore requests with 409 ``archive_not_configured``.
    - ``max_body_bytes``: larger request bodies get 413 before more than this is read.
    - ``max_messages`` and ``max_blocks``: a compaction body whose ``messages`` hold more entries, or
      more blocks in all, gets 413 ``transcript_too_large`` once parsed, before anything is converted
      or validated (those cost per message and per block; parsing costs per byte).
    - ``budget_s``: the deadline of a compaction request, and the most its ``options.budget_s`` may
      ask. It runs from the moment the body has been read: the wait for a planning thread, reading and
      validating the history and the plan all come out of it (a request whose history took it all
      answers ``TIMEOUT`` without planning; one still waiting for a thread when the server's budget is
      spent gets 503 ``server_busy``).
    - ``version`` and ``observer``: passed to `tracetrim.ExecutionOptions` for every plan's `Record`
      (the observer is called from the planning thread of that plan).
    - ``allowed_hosts``: the ``Host`` header names served (421 otherwise), and the origins a browser
      may send from (403 otherwise); ``'*.example.com'`` matches subdomains, ``'*'`` anything.
    - ``token``: when set, every endpoint but ``/healthz`` needs ``Authorization: Bearer <token>`` (401).
    - ``planning_threads``: compaction requests are parsed, converted, validated and planned in at
      most this many worker threads, so the event loop keeps answering (``/healthz`` included) while a
      large history is read or planned, and the memory that work takes is bounded; more wait their turn.
    - ``read_timeout_s``: a request body not fully received within this many seconds gets 408.
    - ``close_on_shutdown``: the app owns ``model`` and ``archive`` and closes them (``aclose()`` on
      the model and on the archive's store, where they have one) when the server stops, on the
      server's own event loop; `tracetrim serve` sets it.
    """

    model: ModelOrJudge | None = attrs.field(default=None, validator=_model_or_none)
    systemone_model: DecisionModel | None = attrs.field(default=None, validator=_callable_or_none)
    archive: Archive | None = None
    max_body_bytes: int = attrs.field(default=DEFAULT_MAX_BODY_BYTES, validator=_positive_int)
    max_messages: int = attrs.field(default=DEFAULT_MAX_MESSAGES, validator=_positive_int)
    max_blocks: int = attrs.field(default=DEFAULT_MAX_BLOCKS, validator=_positive_int)
    budget_s: float = attrs.field(default=30.0, validator=_positive_seconds)
    version: str = attrs.field(default="v1", validator=attrs.validators.instance_of(str))
    observer: Callable[[Any], object] | None = attrs.field(
        default=None, validator=_callable_or_none, eq=False
    )
    allowed_hosts: tuple[str, ...] = attrs.field(default=LOOPBACK_HOSTS, converter=_host_names)
    token: str | None = attrs.field(default=None, validator=_token, repr=False)
    planning_threads: int = attrs.field(default=4, validator=_positive_int)
    read_timeout_s: float = attrs.field(default=30.0, validator=_positive_seconds)
    close_on_shutdown: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def make_archive(
    directory: str | os.PathLike[str] | None = None,
    redis_url: str | None = None,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Archive | None:
    """The archive a deployment names: a folder, a Redis URL, any `tracetrim.archive.open_archive`
    URL (``file:``, ``sqlite:``, ``redis://``, ``postgresql://``), or none of them (None).

    Raises ``ValueError`` when more than one is given, and `tracetrim.archive.ArchiveUrlError` (a
    ``ValueError``) for a URL naming no known store. Stores connect lazily, on first use.
    """
    given = [value for value in (directory, redis_url, url) if value is not None]
    if len(given) > 1:
        raise FieldValueError("choose one archive: a folder, a Redis URL or an archive URL, not several")
    if directory is not None:
        return FileArchive(directory, max_bytes=max_bytes)
    if redis_url is not None:
        if not redis_url.startswith(("redis://", "rediss://")):
            raise FieldValueError(
                f"a Redis URL starts with redis:// or rediss://, got {redact_url(redis_url)!r}"
            )
        return open_archive(redis_url, max_bytes=max_bytes)
    if url is not None:
        return open_archive(url, max_bytes=max_bytes)
    return None
