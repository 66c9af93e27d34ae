"""`ServiceSettings`: what one service instance uses (model, archive, limits), and `make_archive`."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import attrs

from tracetrim.archive import DEFAULT_MAX_BYTES, Archive, FileArchive, KeyValueArchive, RedisStore
from tracetrim.compactor import Record
from tracetrim.decision import DecisionModel

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""8 MiB: a history at the planner's default ``max_transcript_chars`` (5,000,000) plus JSON escapes."""


def _positive_int(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"ServiceSettings.{attribute.name} must be a positive integer, got {value!r}")


def _positive_seconds(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            f"ServiceSettings.{attribute.name} must be a positive number of seconds, got {value!r}"
        )


def _callable_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"ServiceSettings.{attribute.name} must be callable or None")


@attrs.frozen(kw_only=True)
class ServiceSettings:
    """Settings of one service app; every field is optional.

    - ``model``: the decision model shared by all requests; None builds one with
      `tracetrim.decision.from_env` when the app is created (the app then closes it on shutdown).
    - ``archive``: where ENFORCE saves originals and restores read from; None means the service
      answers ENFORCE and restore requests with 409 ``archive_not_configured``.
    - ``max_body_bytes``: larger request bodies get 413 before more than this is read.
    - ``budget_s``: the decision deadline of a plan, and the most a request's ``options.budget_s`` may ask.
    - ``version`` and ``observer``: passed to `tracetrim.ExecutionOptions` for every plan's `Record`.
    - ``close_on_shutdown``: the app owns ``model`` and ``archive`` and closes them (``aclose()`` on
      the model and on the archive's store, where they have one) when the server stops, on the
      server's own event loop; `tracetrim serve` sets it.
    """

    model: DecisionModel | None = attrs.field(default=None, validator=_callable_or_none)
    archive: Archive | None = None
    max_body_bytes: int = attrs.field(default=DEFAULT_MAX_BODY_BYTES, validator=_positive_int)
    budget_s: float = attrs.field(default=30.0, validator=_positive_seconds)
    version: str = attrs.field(default="v1", validator=attrs.validators.instance_of(str))
    observer: Callable[[Record], object] | None = attrs.field(
        default=None, validator=_callable_or_none, eq=False
    )
    close_on_shutdown: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def make_archive(
    directory: str | os.PathLike[str] | None = None,
    redis_url: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Archive | None:
    """The archive a deployment names: a `FileArchive` folder, a Redis URL, or neither (None).

    Raises ``ValueError`` when both are given. The Redis client connects lazily, on first use.
    """
    if directory is not None and redis_url is not None:
        raise ValueError("choose one archive: a folder or a Redis URL, not both")
    if directory is not None:
        return FileArchive(directory, max_bytes=max_bytes)
    if redis_url is not None:
        return KeyValueArchive(RedisStore(redis_url), max_bytes=max_bytes)
    return None
