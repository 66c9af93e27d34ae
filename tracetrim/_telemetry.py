"""OpenTelemetry: one span per plan, made from the plan's record, for hosts that already trace their agents.

No OpenTelemetry semantic convention covers context compaction yet (the GenAI conventions name model
calls, agents and tools), so the span's attributes live under ``tracetrim.*``; its name and attribute
names are part of the public surface and change only with a record version.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tracetrim._errors import TracetrimError
from tracetrim._record import Record, RecordDetail, observer_detail

SPAN_NAME = "tracetrim.compact"
"""The name of every plan's span."""

_NUMBERS = (
    "reduction",
    "elapsed_ms",
    "messages_before",
    "messages_after",
    "tokens_before",
    "tokens_after",
    "chars_before",
    "chars_after",
    "candidates",
    "requests",
    "cache_rewrite_tokens",
)


class TelemetryUnavailableError(TracetrimError, ImportError):
    """`SpanObserver` needs ``opentelemetry-api`` (and an SDK to export anything)."""


def span_attributes(record: Record) -> dict[str, str | int | float]:
    """What a plan's span says: mode, outcome, sizes before and after, and how many pairs each action
    touched (``tracetrim.pairs.drop_call``, ...); the scope's ids, never any message content."""
    out: dict[str, str | int | float] = {
        "tracetrim.mode": record.mode,
        "tracetrim.status": record.status,
        "tracetrim.reason": record.reason,
        "tracetrim.purpose": record.purpose,
        "tracetrim.version": record.version,
    }
    for name in _NUMBERS:
        value = getattr(record, name, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f"tracetrim.{name}"] = value
    out["tracetrim.pairs_touched"] = sum(n for action, n in record.actions.items() if action != "keep")
    for action, count in sorted(record.actions.items()):
        out[f"tracetrim.pairs.{action}"] = count
    if record.archive_ref:
        out["tracetrim.archive_ref"] = record.archive_ref
    for key, value in (record.scope or {}).items():
        out[f"tracetrim.scope.{key}"] = value
    return out


class SpanObserver:
    """An observer that turns every plan's `Record` into an OpenTelemetry span named `SPAN_NAME`.

    Off unless you pass it as ``ExecutionOptions(observer=...)``. The span is a child of whatever span
    is current when the plan ends (the host's agent step), starts when the plan started and ends when
    it ended; an ``ERROR`` outcome sets the span's status to error with the outcome's detail. ``then``
    is another observer that gets the same record afterwards (a `JsonLinesObserver`, say), and its
    ``record_detail`` is what records carry. ``tracer`` defaults to the global provider's tracer.
    """

    def __init__(self, tracer: Any = None, *, then: Callable[[Record], object] | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise TelemetryUnavailableError(
                "SpanObserver needs OpenTelemetry: pip install opentelemetry-api opentelemetry-sdk"
            ) from None
        self._trace = trace
        self._tracer = tracer
        self.then = then
        self.record_detail: RecordDetail = observer_detail(then)

    def __repr__(self) -> str:
        return f"SpanObserver(then={self.then!r})"

    def __call__(self, record: Record) -> None:
        """Emit ``record``'s span, then hand the record on."""
        from tracetrim import __version__

        tracer = self._tracer or self._trace.get_tracer("tracetrim", __version__)
        ended = time.time_ns()
        span = tracer.start_span(
            SPAN_NAME,
            start_time=ended - int(record.elapsed_ms * 1_000_000),
            attributes=span_attributes(record),
        )
        if record.status == "ERROR":
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, record.detail))
        span.end(end_time=ended)
        if self.then is not None:
            self.then(record)
