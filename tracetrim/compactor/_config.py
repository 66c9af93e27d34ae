"""`CompactorConfig`, `ExecutionOptions` and `Mode`: validated settings of the planner."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from tracetrim._token_budget import TokenBudget, check_budget
from tracetrim._tokens import TokenCounter
from tracetrim._validators import (
    FieldValueError,
    callable_or_none,
    fraction,
    int_in,
    is_number,
    name_set,
    positive_number,
    probability,
)

if TYPE_CHECKING:
    from tracetrim._record import Record


class Mode(enum.Enum):
    """OFF does nothing; SHADOW judges and reports only; ENFORCE archives, then adopts."""

    OFF = "off"
    SHADOW = "shadow"
    ENFORCE = "enforce"


check_counter = callable_or_none("a string")
"""An attrs validator: ``token_counter`` is a callable taking a string, or None."""


def as_prices(value: object) -> Any:
    """An attrs converter: a list or tuple of prices as a tuple (anything else is left to the validator)."""
    return tuple(value) if isinstance(value, (list, tuple)) else value


def check_prices(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: ``cache_prices`` is two finite numbers of 0 or more, read then write."""
    if not isinstance(value, tuple) or len(value) != 2 or not all(is_number(v) and v >= 0 for v in value):
        raise FieldValueError(
            f"must be (read, write): two finite numbers >= 0, got {value!r}",
            owner=type(instance).__name__,
            field=attribute.name,
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
    only, as the first round did. With ``tombstones`` a dropped pair leaves a one-line text block where
    its call stood (tool, a gist of the input, the call id and how to recall it), so the agent can see
    what went and recall it. It is on by default: replayed over whole runs (`tracetrim.replay`), without
    tombstones the pairs a budget drops are lost silently (31 of tau-bench's later uses at a 4k window),
    with them every loss is recallable by call id, and on text-protocol agents, where a dropped command
    already leaves a stub, they change nothing. With
    ``deduplicate`` (the default) an old result whose every line a later result kept whole shows again
    (the same file region read twice, the same lookup with the same answer) becomes a short note
    pointing to that later call, restorable like any shortened result (`tracetrim.compactor._repeats`).

    A token budget replaces the thresholds when ``trigger_tokens`` and ``target_tokens`` are both set:
    below the trigger a plan is SKIPPED (``BELOW_TRIGGER``) without asking the model; above it the
    cheapest actions in expected loss per token saved are taken until the history is at or under the
    target (`tracetrim.compactor._budget`), and pairs whose two probabilities are at or below
    ``drop_confident`` go as well. ``max_cache_rewrite_tokens`` caps how much of a prompt cache a plan
    may invalidate: no pair is changed before the point from which the rest of the history holds
    that many tokens. Tokens are counted with ``token_counter`` (default: `estimate_tokens`).

    A target the protections do not allow (the recent messages alone hold more) is common on small
    windows: with ``adopt_partial`` (the default) the budget then adopts what it reached when that saves
    at least ``minimum_reduction`` (``stats.target_met`` false, the detail says so), and only below it
    ends ``TARGET_NOT_REACHED``; without it a target not met adopts nothing, as before.

    With ``cache_prices`` (``(read, write)``: a cache read's and a cache write's price as ratios of the
    plain input price, e.g. ``(0.1, 1.25)`` for Anthropic, ``(0.5, 1.0)`` for OpenAI) a proposal is
    adopted only when its saving, read back at each of the calls still to come, outweighs the cache it
    rewrites: ``(k + 1) * read * saved > (write - read) * rewrite`` (`tracetrim.compactor._budget.
    pays_back`; ``saved`` and ``rewrite`` are the plan's ``tokens_before - tokens_after`` and
    ``cache_rewrite_tokens``), else the plan ends ``CACHE_NOT_PAID_BACK``. ``k`` is ``expected_calls``,
    or by default the model calls the history holds so far (a run seen halfway is as long again).
    """

    eligible_tools: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    pinned_message_ids: frozenset[str] = attrs.field(factory=frozenset, converter=name_set)
    keep_threshold: float = attrs.field(default=0.5, validator=probability)
    discard_threshold: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(probability)
    )
    preserve_recent_messages: int = attrs.field(default=6, validator=int_in(0))
    max_state_tokens: int = attrs.field(default=25_000, validator=int_in(100))
    max_request_tokens: int = attrs.field(default=30_000, validator=int_in(200))
    max_questions: int = attrs.field(default=128, validator=int_in(2))
    truncate_head_chars: int = attrs.field(default=300, validator=int_in(0))
    truncate_tail_chars: int = attrs.field(default=0, validator=int_in(0))
    excerpt_chars: int = attrs.field(default=700, validator=int_in(0))
    tombstones: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    deduplicate: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    result_preview_chars: int = attrs.field(default=500, validator=int_in(0))
    minimum_reduction: float = attrs.field(default=0.10, validator=fraction)
    max_concurrency: int = attrs.field(default=4, validator=int_in(1, 32))
    max_transcript_chars: int = attrs.field(default=5_000_000, validator=int_in(1))
    trigger_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(1)))
    target_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(0)))
    drop_confident: float | None = attrs.field(default=None, validator=attrs.validators.optional(probability))
    max_cache_rewrite_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(int_in(0))
    )
    adopt_partial: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    cache_prices: tuple[float, float] | None = attrs.field(
        default=None,
        converter=as_prices,
        validator=attrs.validators.optional(check_prices),
    )
    expected_calls: int | None = attrs.field(default=None, validator=attrs.validators.optional(int_in(0)))
    token_counter: TokenCounter | None = attrs.field(default=None, validator=check_counter, eq=False)

    def __attrs_post_init__(self) -> None:
        if (self.trigger_tokens is None) != (self.target_tokens is None):
            raise FieldValueError(
                "and trigger_tokens go together: set both for a token budget, or neither for the thresholds",
                owner="CompactorConfig",
                field="target_tokens",
            )
        check_budget(self.trigger_tokens, self.target_tokens, owner="CompactorConfig")
        if self.discard_threshold is not None and self.discard_threshold > self.keep_threshold:
            raise FieldValueError(
                f"({self.discard_threshold}) must not exceed keep_threshold ({self.keep_threshold})",
                owner="CompactorConfig",
                field="discard_threshold",
            )
        if self.max_request_tokens <= self.max_state_tokens:
            raise FieldValueError(
                f"({self.max_request_tokens}) must exceed max_state_tokens ({self.max_state_tokens}): "
                "every request carries the whole state",
                owner="CompactorConfig",
                field="max_request_tokens",
            )

    @property
    def budgeted(self) -> bool:
        """True when a token budget (trigger and target) decides instead of the thresholds."""
        return self.trigger_tokens is not None

    @property
    def budget(self) -> TokenBudget | None:
        """The token budget in force (None: the thresholds decide)."""
        if self.trigger_tokens is None:
            return None
        return TokenBudget(self.trigger_tokens, self.target_tokens)

    @property
    def discard(self) -> float:
        """The discard threshold in force (the keep threshold when only one is set)."""
        return self.keep_threshold if self.discard_threshold is None else self.discard_threshold


@attrs.frozen(kw_only=True)
class ExecutionOptions:
    """How a plan runs: the mode (SHADOW by default: nothing changes until you opt in), the deadline
    for all decision requests together, a version label for records, and an observer of records."""

    mode: Mode = attrs.field(default=Mode.SHADOW, validator=attrs.validators.instance_of(Mode))
    budget_s: float = attrs.field(default=30.0, validator=positive_number("seconds"))
    version: str = attrs.field(default="v1", validator=attrs.validators.instance_of(str))
    purpose: str = attrs.field(default="compaction", validator=attrs.validators.instance_of(str))
    observer: Callable[[Record], object] | None = attrs.field(
        default=None, validator=callable_or_none("a Record"), eq=False
    )
