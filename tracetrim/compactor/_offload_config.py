"""`OffloadConfig` and `OffloadMode`: the validated size rules of the offload strategy."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import attrs

from tracetrim._tokens import TokenCounter

RECALL_TOOL_NAME = "recall_tool_result"


class OffloadMode(enum.Enum):
    """``compact`` offloads large tool results, ``compress`` summarises old message groups,
    ``auto`` compacts and compresses only when compaction alone saved too little."""

    COMPACT = "compact"
    COMPRESS = "compress"
    AUTO = "auto"


def _int_at_least(low: int) -> Callable[[Any, attrs.Attribute[int], int], None]:
    def check(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"OffloadConfig.{attribute.name} must be an integer, got {value!r}")
        if value < low:
            raise ValueError(f"OffloadConfig.{attribute.name} must be at least {low}, got {value}")

    return check


def _ratio(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"OffloadConfig.{attribute.name} must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"OffloadConfig.{attribute.name} must be within [0, 1], got {value}")


def _mode(value: Any) -> OffloadMode:
    if isinstance(value, OffloadMode):
        return value
    try:
        return OffloadMode(value)
    except ValueError:
        names = ", ".join(m.value for m in OffloadMode)
        raise ValueError(f"OffloadConfig.mode must be one of {names}, got {value!r}") from None


def _names(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError("expected a collection of names, got a single string")
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"names must be non-empty strings, got {name!r}")
    return names


def _counter(instance: Any, attribute: attrs.Attribute[TokenCounter | None], value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError("OffloadConfig.token_counter must be a callable taking a string, or None")


@attrs.frozen(kw_only=True)
class OffloadConfig:
    """Size rules for `OffloadStrategy`; every field is validated with an error naming it.

    Tokens are counted over the text a model reads (text, thinking, tool names, inputs and outputs;
    system messages excluded) with ``token_counter`` or the built-in estimator. Nothing happens while
    the history is at or below ``max_total_tokens``.

    - ``compact``: each tool result above ``max_tool_message_tokens`` outside the last
      ``keep_recent_count`` messages (and outside the first, system, protected and pinned messages)
      becomes a preview of ``preview_chars`` (two thirds head, one third tail) plus a marker naming the
      call id and the archive reference. The default preview, 1,000 characters (about 250 tokens, an
      eighth of the result limit), shows what the result was without keeping its bulk. Results of
      ``exempt_tools`` stay whole: by default the recall tool's, so a recalled result is not offloaded
      again at once.
    - ``compress``: messages outside the last ``compress_keep_recent_count`` (and outside the first,
      system, protected and pinned ones) are split into groups of at most ``group_token_threshold``
      tokens, never separating a call from its result; each group becomes one summary message.
    - ``auto``: compact; compress as well when tokens after / before exceeds ``compact_ratio_threshold``.
    """

    mode: OffloadMode = attrs.field(default=OffloadMode.AUTO, converter=_mode)
    max_total_tokens: int = attrs.field(default=20_000, validator=_int_at_least(0))
    max_tool_message_tokens: int = attrs.field(default=2_000, validator=_int_at_least(0))
    keep_recent_count: int = attrs.field(default=1, validator=_int_at_least(0))
    preview_chars: int = attrs.field(default=1_000, validator=_int_at_least(0))
    compress_keep_recent_count: int = attrs.field(default=2, validator=_int_at_least(0))
    group_token_threshold: int = attrs.field(default=4_000, validator=_int_at_least(1))
    compact_ratio_threshold: float = attrs.field(default=0.75, validator=_ratio)
    pinned_message_ids: frozenset[str] = attrs.field(factory=frozenset, converter=_names)
    exempt_tools: frozenset[str] = attrs.field(
        factory=lambda: frozenset({RECALL_TOOL_NAME}), converter=_names
    )
    max_concurrency: int = attrs.field(default=4, validator=[_int_at_least(1), attrs.validators.le(32)])
    max_transcript_chars: int = attrs.field(default=5_000_000, validator=_int_at_least(1))
    token_counter: TokenCounter | None = attrs.field(default=None, validator=_counter, eq=False)

    @property
    def preview_head_chars(self) -> int:
        """Characters of a result's head kept in its preview (the beginning says most about a result)."""
        return self.preview_chars - self.preview_tail_chars

    @property
    def preview_tail_chars(self) -> int:
        """Characters of a result's tail kept in its preview (where errors and totals usually are)."""
        return self.preview_chars // 3
