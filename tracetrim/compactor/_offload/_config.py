"""`OffloadConfig` and `OffloadMode`: the validated size rules of the offload strategy."""

from __future__ import annotations

import enum
import math
from typing import Any

import attrs

from tracetrim._marker import RECALL_TOOL_NAME
from tracetrim._tokens import TokenCounter
from tracetrim.compactor._config import check_counter, int_in, name_set


class OffloadMode(enum.Enum):
    """``compact`` offloads large tool results, ``compress`` summarises old message groups,
    ``auto`` compacts and compresses only when compaction alone saved too little."""

    COMPACT = "compact"
    COMPRESS = "compress"
    AUTO = "auto"


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
    max_total_tokens: int = attrs.field(default=20_000, validator=int_in(0))
    max_tool_message_tokens: int = attrs.field(default=2_000, validator=int_in(0))
    keep_recent_count: int = attrs.field(default=1, validator=int_in(0))
    preview_chars: int = attrs.field(default=1_000, validator=int_in(0))
    compress_keep_recent_count: int = attrs.field(default=2, validator=int_in(0))
    group_token_threshold: int = attrs.field(default=4_000, validator=int_in(1))
    compact_ratio_threshold: float = attrs.field(default=0.75, validator=_ratio)
    pinned_message_ids: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    exempt_tools: frozenset[str] = attrs.field(
        factory=lambda: frozenset({RECALL_TOOL_NAME}), converter=name_set
    )
    max_concurrency: int = attrs.field(default=4, validator=[int_in(1), attrs.validators.le(32)])
    max_transcript_chars: int = attrs.field(default=5_000_000, validator=int_in(1))
    token_counter: TokenCounter | None = attrs.field(default=None, validator=check_counter, eq=False)

    @property
    def preview_head_chars(self) -> int:
        """Characters of a result's head kept in its preview (the beginning says most about a result)."""
        return self.preview_chars - self.preview_tail_chars

    @property
    def preview_tail_chars(self) -> int:
        """Characters of a result's tail kept in its preview (where errors and totals usually are)."""
        return self.preview_chars // 3
