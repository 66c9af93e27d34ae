"""`OffloadConfig` and `OffloadMode`: the validated size rules of the offload strategy."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from tracetrim._marker import RECALL_TOOL_NAME
from tracetrim._token_budget import TokenBudget, check_budget
from tracetrim._tokens import TokenCounter
from tracetrim._validators import FieldValueError, int_in, name_set, probability
from tracetrim.compactor._config import check_counter


class OffloadMode(enum.Enum):
    """``compact`` offloads large tool results, ``compress`` summarises old message groups,
    ``auto`` compacts and compresses only when compaction alone saved too little."""

    COMPACT = "compact"
    COMPRESS = "compress"
    AUTO = "auto"


def _mode(value: Any) -> OffloadMode:
    if isinstance(value, OffloadMode):
        return value
    try:
        return OffloadMode(value)
    except ValueError:
        names = ", ".join(m.value for m in OffloadMode)
        raise FieldValueError(f"OffloadConfig.mode must be one of {names}, got {value!r}") from None


DEFAULT_TRIGGER_TOKENS = 20_000


@attrs.frozen(kw_only=True)
class OffloadConfig:
    """Size rules for `OffloadStrategy`; every field is validated with an error naming it.

    Tokens are counted as the planner's budget counts them (`tracetrim.compactor._budget`: the text a
    model reads, system messages excluded) with ``token_counter`` or the built-in estimator. The budget
    has the planner's names: nothing happens while the history is at or below ``trigger_tokens``
    (20,000); above it a pass works down to
    ``target_tokens`` when set, and stops there, so the next turns do not fire again until the history
    has grown past the trigger. Without a target every rule applies in full, as before.

    - ``compact``: each tool result above ``max_tool_message_tokens`` outside the last
      ``keep_recent_count`` messages (and outside the first, system, protected and pinned messages)
      is shortened, oldest first (with a target: only until the history is at or under it), as the
      planner shortens: a head of ``preview_chars`` (two thirds) and a tail (one third), up to
      ``excerpt_chars`` of the lines between that name what no other message mentions and error
      lines (`tracetrim.compactor._excerpt`; 0: head and tail only), and the planner's marker naming
      the call id, the lines kept and the archive reference. Where an excerpt would keep more than 40%
      of its result (the planner's rule), the plain head and tail is used instead. The default preview,
      1,000 characters (about 250 tokens, an eighth of the result limit), shows what the result was
      without keeping its bulk. Results of ``exempt_tools`` stay whole: by default the recall tool's,
      so a recalled result is not offloaded again at once.
    - ``compress``: messages outside the last ``compress_keep_recent_count`` (and outside the first,
      system, protected and pinned ones) are split into groups of at most ``group_token_threshold``
      tokens, never separating a call from its result; each group becomes one summary message (which
      names the group's call ids and archive reference: the trail a dropped pair leaves in the
      planner). With a target only the oldest groups go, until the tokens they hold cover the excess.
    - ``auto``: compact; compress as well when the history is still over ``target_tokens`` or, without
      a target, when tokens after / before exceeds ``compact_ratio_threshold``.
    """

    mode: OffloadMode = attrs.field(default=OffloadMode.AUTO, converter=_mode)
    trigger_tokens: int = attrs.field(default=DEFAULT_TRIGGER_TOKENS, validator=int_in(0))
    target_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(0)))
    max_tool_message_tokens: int = attrs.field(default=2_000, validator=int_in(0))
    keep_recent_count: int = attrs.field(default=1, validator=int_in(0))
    preview_chars: int = attrs.field(default=1_000, validator=int_in(0))
    excerpt_chars: int = attrs.field(default=700, validator=int_in(0))
    compress_keep_recent_count: int = attrs.field(default=2, validator=int_in(0))
    group_token_threshold: int = attrs.field(default=4_000, validator=int_in(1))
    compact_ratio_threshold: float = attrs.field(default=0.75, validator=probability)
    pinned_message_ids: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    exempt_tools: frozenset[str] = attrs.field(
        factory=lambda: frozenset({RECALL_TOOL_NAME}), converter=name_set
    )
    max_concurrency: int = attrs.field(default=4, validator=[int_in(1), attrs.validators.le(32)])
    max_transcript_chars: int = attrs.field(default=5_000_000, validator=int_in(1))
    token_counter: TokenCounter | None = attrs.field(default=None, validator=check_counter, eq=False)

    def __attrs_post_init__(self) -> None:
        check_budget(
            self.trigger_tokens,
            self.target_tokens,
            owner="OffloadConfig",
            why="offloading only to the trigger would fire again next turn",
        )

    @property
    def budget(self) -> TokenBudget:
        """The trigger and target as one `TokenBudget`."""
        return TokenBudget(self.trigger_tokens, self.target_tokens)

    @property
    def preview_head_chars(self) -> int:
        """Characters of a result's head kept in its preview (the beginning says most about a result)."""
        return self.preview_chars - self.preview_tail_chars

    @property
    def preview_tail_chars(self) -> int:
        """Characters of a result's tail kept in its preview (where errors and totals usually are)."""
        return self.preview_chars // 3
