"""ReMe's ``compact_context`` contract: its request fields and options in, its response envelope out.

ReMe (reme-ai 0.4.2, ``reme/schema/compaction.py`` and ``reme/steps/compaction/compact_context.py``)
proposes recoverable previews of tool results: it never removes a call, it shortens only results the
host can recover (their call id has a ``source_refs`` entry), and it answers ``{"answer":
CompactionResult, "success": true, "metadata": {"compaction": stats}}``. A request ReMe's job would
refuse comes back as ``{"answer": "<why>", "success": false}``, as ReMe's job wrapper does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from tracetrim._convert import to_json_object
from tracetrim._input_convert import NonEmptyStr, expect_object, register_object, structure_part
from tracetrim._json import canonical_json
from tracetrim._scope import Scope
from tracetrim._tokens import estimate_tokens
from tracetrim._validators import describe, int_in, positive_number, probability
from tracetrim.compactor import CompactionRequest, CompactorConfig, Mode, Outcome, Status
from tracetrim.compactor._options import OPTION_FIELDS
from tracetrim.decision._history import HistoryJudge, HistoryView, Judgements, PairJudgement, judgements_of
from tracetrim.decision._remote import ModelOrJudge, as_judge
from tracetrim.formats._common import ValidatedHistory
from tracetrim.service._errors import ApiError, invalid
from tracetrim.service._requests import (
    CompactCall,
    ModeName,
    PlanOptions,
    check_format,
    mode_and_budget,
    parse_body,
    read_messages,
    require_scope,
)

REME_SCHEMA_VERSION = 2
"""``CompactionResult.schema_version`` of the ReMe release this contract follows (reme-ai 0.4.2)."""

REME_FIELDS = frozenset(
    {
        "messages",
        "goal",
        "next_action",
        "source_refs",
        "protected_message_ids",
        "protected_call_ids",
        "eligible_tool_names",
        "options",
    }
)
"""ReMe's ``CompactionRequest`` fields."""

TRACETRIM_FIELDS = frozenset({"scope", "format", "system", "metadata"})
"""Fields tracetrim adds (``metadata`` is ReMe's own request envelope field, accepted and ignored)."""

REME_OPTIONS = frozenset(
    {
        "drop_threshold",
        "preserve_recent_messages",
        "max_state_tokens",
        "max_request_tokens",
        "evidence_chars",
        "preview_chars",
        "max_output_tokens",
        "max_concurrency",
        "total_timeout_seconds",
    }
)
"""ReMe's ``CompactionOptions`` fields."""

_EXTRA_OPTIONS = frozenset({"mode", "budget_s", "drop_calls"})
_ACTIONS = {"keep": "keep", "drop_result": "preview", "drop_call": "drop"}


@attrs.frozen
class ReMeCall:
    """A parsed ReMe ``compact_context`` request: the tracetrim call plus what the answer echoes."""

    call: CompactCall
    source_refs: Mapping[str, str]
    drop_calls: bool
    max_output_tokens: int | None
    ignored_fields: tuple[str, ...]


_optional = attrs.validators.optional


@attrs.frozen(kw_only=True)
class _ReMeOwn:
    """The options only ReMe (or tracetrim's service) reads; the rest are `CompactorConfig` fields."""

    drop_threshold: float | None = attrs.field(default=None, validator=_optional(probability))
    evidence_chars: int | None = attrs.field(default=None, validator=_optional(int_in(1)))
    preview_chars: int | None = attrs.field(default=None, validator=_optional(int_in(0)))
    max_output_tokens: int | None = attrs.field(default=None, validator=_optional(int_in(1)))
    total_timeout_seconds: float | None = attrs.field(
        default=None, validator=_optional(positive_number("seconds"))
    )
    drop_calls: bool = False
    mode: ModeName | None = None
    budget_s: float | None = None


_OWN = frozenset(a.name for a in attrs.fields(_ReMeOwn))


@attrs.frozen(kw_only=True)
class ReMeOptions:
    """A ReMe body's ``options``: ReMe's own options and the `CompactorConfig` they translate to."""

    own: _ReMeOwn = attrs.field(factory=_ReMeOwn)
    config: CompactorConfig = attrs.field(factory=lambda: CompactorConfig(minimum_reduction=0.0))


def _translate(own: _ReMeOwn, options: Mapping[str, Any]) -> dict[str, Any]:
    """ReMe's options as `CompactorConfig` fields; a field set directly wins over its ReMe source."""
    out = {k: v for k, v in options.items() if k not in _OWN}
    # ReMe adopts any preview that saves something; it has no minimum reduction.
    out.setdefault("minimum_reduction", 0.0)
    if own.drop_threshold is not None:
        # ReMe previews a result whose probability of being needed is at most drop_threshold.
        out.setdefault("keep_threshold", own.drop_threshold)
    if own.evidence_chars is not None:
        out.setdefault("result_preview_chars", own.evidence_chars)
    if own.preview_chars is not None:
        # ReMe keeps both ends of a result: half the characters from the head, half from the tail.
        out.setdefault("truncate_head_chars", (own.preview_chars + 1) // 2)
        out.setdefault("truncate_tail_chars", own.preview_chars // 2)
    if own.max_output_tokens is not None:
        # ReMe does nothing within the budget and compacts toward it above.
        out.setdefault("trigger_tokens", own.max_output_tokens + 1)
        out.setdefault("target_tokens", own.max_output_tokens)
        # ReMe reports a budget it cannot meet (budget_exceeded) and keeps the history: it never drops a
        # call, and a budget that adopts what it reached would drop whole pairs on the way.
        out.setdefault("adopt_partial", False)
    return out


def _structure_reme_options(value: Any, _: Any) -> ReMeOptions:
    data = expect_object(value)
    extra = set(data) - REME_OPTIONS - OPTION_FIELDS - _EXTRA_OPTIONS
    if extra:
        raise ForbiddenExtraKeysError("", ReMeOptions, extra)
    errors: list[Exception] = []
    own = structure_part({k: v for k, v in data.items() if k in _OWN}, _ReMeOwn, errors)
    config = structure_part(_translate(own or _ReMeOwn(), data), CompactorConfig, errors)
    if errors or own is None or config is None:
        raise ClassValidationError("While structuring ReMeOptions", errors, ReMeOptions)
    return ReMeOptions(own=own, config=config)


register_object(
    ReMeOptions,
    noun="option",
    known=REME_OPTIONS | OPTION_FIELDS | _EXTRA_OPTIONS,
    hook=_structure_reme_options,
)


@attrs.frozen(kw_only=True)
class ReMeBody:
    """The fields of a ReMe ``compact_context`` body tracetrim reads (others are ignored)."""

    messages: list[Any]
    goal: str | None = None
    next_action: str | None = None
    source_refs: Any = None
    protected_message_ids: tuple[str, ...] | None = None
    protected_call_ids: tuple[str, ...] | None = None
    eligible_tool_names: tuple[NonEmptyStr, ...] | None = None
    options: ReMeOptions | None = None
    scope: Scope | None = None
    format: str | None = None
    system: Any = None
    metadata: Any = None


def _source_refs(refs: Any) -> dict[str, str]:
    if refs is None:
        return {}
    if not isinstance(refs, dict):
        raise invalid("source_refs", f"expected a JSON object, got {describe(refs)}")
    for call_id, ref in refs.items():
        if not call_id.strip() or not isinstance(ref, str) or not ref.strip():
            raise invalid(f"source_refs.{call_id}", "source references need non-empty call ids and values")
    return dict(refs)


def _call_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    return {
        block["id"]
        for message in messages
        for block in message.get("content", ())
        if isinstance(block, dict) and block.get("type") == "tool_call" and isinstance(block.get("id"), str)
    }


def parse_reme(data: Any, *, max_budget_s: float, has_archive: bool) -> ReMeCall:
    """A `ReMeCall` from a ReMe ``compact_context`` body; `ApiError` (422) naming the field otherwise.

    Unknown top-level fields are ignored, as ReMe's service does, and reported back; unknown
    options are refused, as ReMe's ``CompactionOptions`` does. ``mode`` defaults to ``enforce`` when
    this server has an archive and the request a ``scope``, else ``shadow``. In SHADOW only calls
    with a ``source_refs`` entry may be shortened (the host recovers them); in ENFORCE the archive
    holds the original, so every eligible call may be.
    """
    ignored: tuple[str, ...] = ()
    if isinstance(data, dict):
        ignored = tuple(sorted(set(data) - REME_FIELDS - TRACETRIM_FIELDS))
        data = {k: v for k, v in data.items() if k not in ignored}
    body = parse_body(data, ReMeBody)
    messages, fmt, original = read_messages(body.messages, body.system, check_format(body.format, "auto"))
    options = body.options or ReMeOptions()
    own = options.own
    timeout = own.total_timeout_seconds
    if timeout is not None and timeout > max_budget_s:
        raise invalid(
            "options.total_timeout_seconds",
            f"expected a number of seconds in (0, {max_budget_s}], got {timeout!r}",
        )
    default_mode: ModeName = "enforce" if has_archive and body.scope is not None else "shadow"
    budget_s = own.budget_s if own.budget_s is not None else timeout
    mode, budget = mode_and_budget(PlanOptions(mode=own.mode, budget_s=budget_s), max_budget_s, default_mode)
    require_scope(mode, body.scope)
    refs = _source_refs(body.source_refs)
    protected_calls = set(body.protected_call_ids or ())
    if mode is Mode.SHADOW:
        protected_calls |= _call_ids(messages) - set(refs)
    request = CompactionRequest(
        messages,
        body.goal or "",
        body.next_action or "",
        scope=body.scope,
        protected_message_ids=body.protected_message_ids or (),
        protected_call_ids=tuple(sorted(protected_calls)),
    )
    call = CompactCall(
        request=request,
        config=attrs.evolve(options.config, eligible_tools=body.eligible_tool_names or ()),
        mode=mode,
        budget_s=budget,
        format=fmt,
        original=original,
    )
    return ReMeCall(call, refs, own.drop_calls, own.max_output_tokens, ignored)


class _KeepCallsJudge:
    """A `HistoryJudge` keeping every call (``keep_call`` = 1); results judged as the judge says."""

    def __init__(self, judge: HistoryJudge) -> None:
        self._judge = judge

    @property
    def name(self) -> str:
        return self._judge.name

    async def judge(self, view: HistoryView) -> Judgements:
        judged = await judgements_of(self._judge, view)
        kept = {key: PairJudgement(keep_call=1.0, keep_result=j.keep_result) for key, j in judged.items()}
        return attrs.evolve(judged, answers=kept)


def previews_only(model: ModelOrJudge, config: CompactorConfig) -> HistoryJudge:
    """``model`` (as the plan under ``config`` judges with it) made to keep every call, so a plan only
    shortens results (ReMe's previews)."""
    return _KeepCallsJudge(as_judge(model, config))


def written(call: CompactCall, messages: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """Neutral ``messages`` (a plan's: validated by its runner, so not validated again) in the
    request's format, and the format's other fields (Anthropic's system)."""
    if call.format.name == "neutral":
        return list(messages), {}
    fields = dict(call.format.write(ValidatedHistory(messages)))
    return list(fields.pop("messages")), fields


def reme_envelope(reme: ReMeCall, outcome: Outcome) -> dict[str, Any]:
    """ReMe's response envelope for one outcome; tracetrim's own verdict under ``metadata.outcome``."""
    call, plan = reme.call, outcome.plan
    taken = plan is not None and outcome.status is Status.DECIDED
    if call.mode is Mode.ENFORCE:
        taken = taken and outcome.adopted
    # ReMe's "changed" means the messages differ: a decided plan may change nothing at all.
    taken = taken and plan is not None and plan.messages != call.request.messages
    extra: dict[str, Any] = {}
    if taken and plan is not None:
        messages, extra = written(call, plan.messages)
    else:
        messages = list(call.original)
    # An unadopted plan changed nothing: each pair is kept, and says why its change was not applied.
    not_applied = "" if taken else str(outcome.reason).lower()
    decisions = [
        {
            "id": d.key,
            "call_id": d.call_id,
            "action": _ACTIONS.get(d.action.value, d.action.value) if taken else "keep",
            "reason": d.reason if taken or d.action.value == "keep" else not_applied,
            "probability": d.keep_result,
            "source_ref": reme.source_refs.get(d.call_id),
        }
        for d in (plan.decisions if plan is not None else ())
    ]
    stats: dict[str, Any] = to_json_object(plan.stats) if plan is not None else {}
    budget_met = None
    if reme.max_output_tokens is not None:
        neutral = plan.messages if taken and plan is not None else call.request.messages
        tokens = estimate_tokens(canonical_json(list(neutral)))
        stats["tokens_after"] = tokens
        budget_met = tokens <= reme.max_output_tokens
    if budget_met is False:  # ReMe's order: a missed budget is reported even when something changed
        reason = "budget_exceeded"
    elif taken:
        reason = "compacted"
    elif plan is None or plan.stats.candidates == 0:
        reason = "no_candidates" if outcome.status is not Status.ERROR else "no_change"
    else:
        reason = "no_change"
    answer = {
        "schema_version": REME_SCHEMA_VERSION,
        "messages": messages,
        "decisions": decisions,
        "changed": bool(taken),
        "reason": reason,
        "budget_met": budget_met,
        "stats": stats,
    }
    verdict = {
        "status": outcome.status.value,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "mode": call.mode.value,
        "format": call.format.name,
        "archive_ref": plan.archive_ref if plan is not None and outcome.adopted else "",
        "ignored_fields": list(reme.ignored_fields),
        **extra,
    }
    return {"answer": answer, "success": True, "metadata": {"compaction": stats, "outcome": verdict}}


def reme_failure(error: ApiError) -> dict[str, Any]:
    """ReMe's envelope for a request its job refuses: ``success`` false, the reason as the answer."""
    return {"answer": error.message, "success": False, "metadata": {"error": error.body()["error"]}}
