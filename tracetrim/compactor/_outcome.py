"""What a plan produces: per-pair decisions, statistics and the outcome (records: tracetrim._record)."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from tracetrim._snapshot import Message


class Status(enum.Enum):
    """How a plan ended."""

    DECIDED = "DECIDED"
    INCONCLUSIVE = "INCONCLUSIVE"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"


class Reason(enum.StrEnum):
    """Why a plan ended as it did: the upper-case code in outcomes, records, CLI and service JSON.

    A `enum.StrEnum`, so each member is its own string: ``Reason.SHADOW_PROPOSAL == "SHADOW_PROPOSAL"``
    and JSON carries the bare code.
    """

    # a proposal was made
    ARCHIVED_PROPOSAL = "ARCHIVED_PROPOSAL"
    SHADOW_PROPOSAL = "SHADOW_PROPOSAL"
    # nothing worth doing
    INSUFFICIENT_REDUCTION = "INSUFFICIENT_REDUCTION"
    NO_CANDIDATES = "NO_CANDIDATES"
    BELOW_THRESHOLD = "BELOW_THRESHOLD"
    BELOW_TRIGGER = "BELOW_TRIGGER"
    TARGET_NOT_REACHED = "TARGET_NOT_REACHED"
    CACHE_NOT_PAID_BACK = "CACHE_NOT_PAID_BACK"
    DISABLED = "DISABLED"
    TRANSCRIPT_TOO_LARGE = "TRANSCRIPT_TOO_LARGE"
    CANCELLED = "CANCELLED"
    # failures
    SCOPE_REQUIRED = "SCOPE_REQUIRED"
    INVALID_TRANSCRIPT = "INVALID_TRANSCRIPT"
    TRANSCRIPT_CHANGED = "TRANSCRIPT_CHANGED"
    STATE_OVER_BUDGET = "STATE_OVER_BUDGET"
    REQUEST_OVER_BUDGET = "REQUEST_OVER_BUDGET"
    TIMEOUT = "TIMEOUT"
    MODEL_ERROR = "MODEL_ERROR"
    INVALID_ANSWER = "INVALID_ANSWER"
    SUMMARY_ERROR = "SUMMARY_ERROR"
    EMPTY_SUMMARY = "EMPTY_SUMMARY"
    ARCHIVE_ERROR = "ARCHIVE_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"


def _reason(value: str) -> Reason:
    """``value`` as a `Reason`; a plain string must be one of the codes (ValueError otherwise)."""
    return Reason(value)


class Action(enum.StrEnum):
    """What happens to one call/result pair (a `enum.StrEnum`, like `Reason`: ``Action.KEEP == "keep"``)."""

    KEEP = "keep"
    DROP_RESULT = "drop_result"
    DROP_CALL = "drop_call"


@attrs.frozen(kw_only=True)
class PairDecision:
    """The verdict on one call/result pair: action, why, and the model's two probabilities.

    ``keep_call`` and ``keep_result`` are None where no model answered (protected pairs, guards).
    """

    key: str
    call_id: str
    tool: str
    action: Action
    reason: str
    keep_call: float | None = None
    keep_result: float | None = None
    chars_before: int = 0
    chars_after: int = 0


@attrs.frozen(kw_only=True)
class PlanStats:
    """The numbers of one plan; characters are those of the canonical JSON of the history."""

    messages_before: int = 0
    messages_after: int = 0
    chars_before: int = 0
    chars_after: int = 0
    reduction: float = 0.0
    """The share of the history's characters the plan removes, not counting the messages that hold no
    content (a format's carriers: a session file's bookkeeping lines, which no plan changes)."""
    candidates: int = 0
    protected: int = 0
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    state_tokens: int = 0
    fitting_stage: str = ""
    tokens_before: int = 0
    """Estimated tokens of the history (`CompactorConfig.token_counter`; system messages excluded)."""
    tokens_after: int = 0
    target_tokens: int = 0
    """The budget's target (0: no budget, the thresholds decided)."""
    target_met: bool | None = None
    """With a budget: whether the proposal is at or under ``target_tokens``; None without one. An
    adopted plan may say False: short of the target, it saved at least ``minimum_reduction``."""
    cache_rewrite_tokens: int = 0
    """Tokens from the first changed message to the end: the part of a prompt cache adopting it rewrites."""
    judge_level_shift: float = 0.0
    """How far an in-process judge moved its policy levels for this history (its self-check on the
    run's own past; negative: it kept more). 0 for other models."""
    judge_reuse: float | None = None
    """At the judge's self-check: results the run used again per result the judge expected (None: none)."""
    judge_out_of_range: float | None = None
    """The share of candidate pairs with a feature outside the judge's training range (None: not known)."""
    judge_cautious: bool = False
    """Whether the judge was cautious because of that (nothing dropped, the newest pairs kept whole)."""
    elapsed_ms: float = 0.0


@attrs.frozen(kw_only=True)
class Plan:
    """A proposal: the new history, one decision per pair, the numbers, and the archive reference.

    Its repr counts messages and decisions rather than printing them: a history runs to megabytes.
    """

    messages: list[Message] = attrs.field(repr=lambda messages: f"<{len(messages)} messages>")
    decisions: tuple[PairDecision, ...] = attrs.field(repr=lambda decisions: f"<{len(decisions)} decisions>")
    stats: PlanStats
    archive_ref: str = ""


@attrs.frozen(kw_only=True)
class Outcome:
    """The result of `Compactor.plan`: a status, an upper-case reason code, a plan when there is one,
    and ``detail``, one human-readable line about what happened."""

    status: Status
    reason: Reason = attrs.field(converter=_reason)
    plan: Plan | None = None
    detail: str = ""

    @property
    def adopted(self) -> bool:
        """True when this outcome's messages replace the host's history (ENFORCE, decided)."""
        return self.status is Status.DECIDED and self.plan is not None and bool(self.plan.archive_ref)


def __getattr__(name: str) -> Any:
    # `Record` moved to tracetrim._record (it is derived from PlanStats there); the old path still works.
    if name == "Record":
        from tracetrim._record import Record

        return Record
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
