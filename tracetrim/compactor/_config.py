"""`CompactorConfig`, `ExecutionOptions` and `Mode`: validated settings of the planner."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from tracetrim._tokens import TokenCounter

if TYPE_CHECKING:
    from tracetrim.compactor._outcome import Record


class Mode(enum.Enum):
    """OFF does nothing; SHADOW judges and reports only; ENFORCE archives, then adopts."""

    OFF = "off"
    SHADOW = "shadow"
    ENFORCE = "enforce"


def int_in(low: int, high: int | None = None) -> Callable[[Any, attrs.Attribute[int], int], None]:
    """An attrs validator: an integer (not a bool) from ``low`` up to ``high``, errors naming the field."""

    def check(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
        where = f"{type(instance).__name__}.{attribute.name}"
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where} must be an integer, got {value!r}")
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ValueError(f"{where} must be {bound}, got {value}")

    return check


def _probability(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name == "discard_threshold":
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"CompactorConfig.{attribute.name} must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"CompactorConfig.{attribute.name} must be within [0, 1], got {value}")


def _fraction(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"CompactorConfig.{attribute.name} must be a finite number, got {value!r}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"CompactorConfig.{attribute.name} must be within [0, 1), got {value}")


def name_set(value: Any) -> frozenset[str]:
    """An attrs converter: a collection of non-empty strings as a frozenset (a lone string refused)."""
    if isinstance(value, str):
        raise TypeError("expected a collection of names, got a single string")
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"names must be non-empty strings, got {name!r}")
    return names


def check_counter(instance: Any, attribute: attrs.Attribute[TokenCounter | None], value: Any) -> None:
    """An attrs validator: ``token_counter`` is a callable or None."""
    if value is not None and not callable(value):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be a callable taking a string, or None"
        )


@attrs.frozen(kw_only=True)
class CompactorConfig:
    """What may be compacted and how; every field is validated with an error naming it.

    ``result_preview_chars`` defaults to 500: a head and tail of each result (about 125 tokens) is
    enough for a model to tell a log from a source file from an error, and 100 calls' previews still
    fit well inside the default state budget. Set it to 0 and result bodies never leave the host.

    ``excerpt_chars`` (default 700) is what a shortened result may keep beyond its
    ``truncate_head_chars`` head and ``truncate_tail_chars`` tail: the lines holding identifiers no
    other message mentions, and error lines (`tracetrim.compactor._excerpt`). 0 keeps the head and tail
    only, as the first round did.
    """

    eligible_tools: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    pinned_message_ids: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    keep_threshold: float = attrs.field(default=0.5, validator=_probability)
    discard_threshold: float | None = attrs.field(default=None, validator=_probability)
    preserve_recent_messages: int = attrs.field(default=6, validator=int_in(0))
    max_state_tokens: int = attrs.field(default=25_000, validator=int_in(100))
    max_request_tokens: int = attrs.field(default=30_000, validator=int_in(200))
    max_questions: int = attrs.field(default=128, validator=int_in(2))
    truncate_head_chars: int = attrs.field(default=300, validator=int_in(0))
    truncate_tail_chars: int = attrs.field(default=0, validator=int_in(0))
    excerpt_chars: int = attrs.field(default=700, validator=int_in(0))
    result_preview_chars: int = attrs.field(default=500, validator=int_in(0))
    minimum_reduction: float = attrs.field(default=0.10, validator=_fraction)
    max_concurrency: int = attrs.field(default=4, validator=int_in(1, 32))
    max_transcript_chars: int = attrs.field(default=5_000_000, validator=int_in(1))
    token_counter: TokenCounter | None = attrs.field(default=None, validator=check_counter, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.discard_threshold is not None and self.discard_threshold > self.keep_threshold:
            raise ValueError(
                f"CompactorConfig.discard_threshold ({self.discard_threshold}) must not exceed "
                f"keep_threshold ({self.keep_threshold})"
            )
        if self.max_request_tokens <= self.max_state_tokens:
            raise ValueError(
                f"CompactorConfig.max_request_tokens ({self.max_request_tokens}) must exceed "
                f"max_state_tokens ({self.max_state_tokens}): every request carries the whole state"
            )

    @property
    def discard(self) -> float:
        """The discard threshold in force (the keep threshold when only one is set)."""
        return self.keep_threshold if self.discard_threshold is None else self.discard_threshold


def _budget(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"ExecutionOptions.budget_s must be a positive number of seconds, got {value!r}")


def _observer(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError("ExecutionOptions.observer must be a callable taking a Record, or None")


@attrs.frozen(kw_only=True)
class ExecutionOptions:
    """How a plan runs: the mode (SHADOW by default: nothing changes until you opt in), the deadline
    for all decision requests together, a version label for records, and an observer of records."""

    mode: Mode = attrs.field(default=Mode.SHADOW, validator=attrs.validators.instance_of(Mode))
    budget_s: float = attrs.field(default=30.0, validator=_budget)
    version: str = attrs.field(default="v1", validator=attrs.validators.instance_of(str))
    purpose: str = attrs.field(default="compaction", validator=attrs.validators.instance_of(str))
    observer: Callable[[Record], object] | None = attrs.field(default=None, validator=_observer, eq=False)
