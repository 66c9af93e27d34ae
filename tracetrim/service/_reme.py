"""ReMe's ``compact_context`` contract: its request fields and options in, its response envelope out.

ReMe (reme-ai 0.4.2, ``reme/schema/compaction.py`` and ``reme/steps/compaction/compact_context.py``)
proposes recoverable previews of tool results: it never removes a call, it shortens only results the
host can recover (their call id has a ``source_refs`` entry), and it answers ``{"answer":
CompactionResult, "success": true, "metadata": {"compaction": stats}}``. A request ReMe's job would
refuse comes back as ``{"answer": "<why>", "success": false}``, as ReMe's job wrapper does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim._convert import to_json_object
from tracetrim._json import canonical_json
from tracetrim._tokens import estimate_tokens
from tracetrim.compactor import CompactionRequest, Mode, Outcome, Status
from tracetrim.compactor._options import OPTION_FIELDS
from tracetrim.decision import BinaryQuestion, DecisionModel, DecisionResponse, HistoryJudge
from tracetrim.decision._history import HistoryView, PairJudgement
from tracetrim.service._errors import ApiError, invalid
from tracetrim.service._requests import (
    CompactCall,
    _check_known,
    _kind,
    _mode_and_budget,
    _object,
    _string,
    _strings,
    build_config,
    parse_format,
    parse_scope,
    read_messages,
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


def _int_option(options: Mapping[str, Any], name: str, minimum: int) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise invalid(f"options.{name}", f"expected a whole number >= {minimum}, got {value!r}")
    return value


def _number_option(options: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise invalid(f"options.{name}", f"expected a number, got {_kind(value)}")
    if not low <= value <= high:
        raise invalid(f"options.{name}", f"expected a number in [{low}, {high}], got {value!r}")
    return float(value)


def _translate(options: dict[str, Any], max_budget_s: float) -> tuple[dict[str, Any], int | None]:
    """ReMe option names as tracetrim's (``options.<name>`` in errors); ReMe's maximum output tokens."""
    out = {k: v for k, v in options.items() if k not in REME_OPTIONS or k in OPTION_FIELDS}
    # ReMe adopts any preview that saves something; it has no minimum reduction.
    out.setdefault("minimum_reduction", 0.0)
    drop = _number_option(options, "drop_threshold", 0.0, 1.0)
    if drop is not None:
        # ReMe previews a result whose probability of being needed is at most drop_threshold.
        out.setdefault("keep_threshold", drop)
    evidence = _int_option(options, "evidence_chars", 1)
    if evidence is not None:
        out.setdefault("result_preview_chars", evidence)
    preview = _int_option(options, "preview_chars", 0)
    if preview is not None:
        # ReMe keeps both ends of a result: half the characters from the head, half from the tail.
        out.setdefault("truncate_head_chars", (preview + 1) // 2)
        out.setdefault("truncate_tail_chars", preview // 2)
    budget = _int_option(options, "max_output_tokens", 1)
    if budget is not None:
        # ReMe does nothing within the budget and compacts toward it above.
        out.setdefault("trigger_tokens", budget + 1)
        out.setdefault("target_tokens", budget)
    timeout = _number_option(options, "total_timeout_seconds", 0.0, max_budget_s)
    if timeout is not None:
        if timeout <= 0:
            raise invalid("options.total_timeout_seconds", "must be positive")
        out.setdefault("budget_s", timeout)
    return out, budget


def _source_refs(body: Mapping[str, Any]) -> dict[str, str]:
    refs = body.get("source_refs")
    if refs is None:
        return {}
    refs = _object(refs, "source_refs")
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
    body = _object(data, "")
    ignored = tuple(sorted(set(body) - REME_FIELDS - TRACETRIM_FIELDS))
    messages, fmt, original = read_messages(body, parse_format(body, "auto"))
    raw_options = body.get("options")
    options = {} if raw_options is None else dict(_object(raw_options, "options"))
    _check_known(options, REME_OPTIONS | OPTION_FIELDS | _EXTRA_OPTIONS, "options")
    drop_calls = options.pop("drop_calls", False)
    if not isinstance(drop_calls, bool):
        raise invalid("options.drop_calls", f"expected true or false, got {_kind(drop_calls)}")
    options, max_output_tokens = _translate(options, max_budget_s)
    scope = parse_scope(body, required=False)
    default_mode = "enforce" if has_archive and scope is not None else "shadow"
    mode, budget = _mode_and_budget(options, max_budget_s, default_mode)
    if mode is Mode.ENFORCE and scope is None:
        raise invalid(
            "scope",
            "ENFORCE needs a scope (user_id, agent_id, session_id) to archive the original under",
            "scope_required",
        )
    eligible = _strings(body, "eligible_tool_names", non_empty=True)
    refs = _source_refs(body)
    protected_calls = set(_strings(body, "protected_call_ids"))
    if mode is Mode.SHADOW:
        protected_calls |= _call_ids(messages) - set(refs)
    request = CompactionRequest(
        messages,
        _string(body, "goal"),
        _string(body, "next_action"),
        scope=scope,
        protected_message_ids=_strings(body, "protected_message_ids"),
        protected_call_ids=tuple(sorted(protected_calls)),
    )
    call = CompactCall(
        request=request,
        config=build_config(options, eligible),
        mode=mode,
        budget_s=budget,
        format=fmt,
        original=original,
    )
    return ReMeCall(call, refs, drop_calls, max_output_tokens, ignored)


class _KeepCalls:
    """A `DecisionModel` answering every ``call_*`` question with 1: ReMe never removes a call."""

    def __init__(self, model: DecisionModel) -> None:
        self._model = model

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        response = await self._model(state, questions)
        answers = {n: 1.0 if n.startswith("call_") else a for n, a in response.answers.items()}
        return attrs.evolve(response, answers=answers)


class _KeepCallsJudge:
    """A `HistoryJudge` keeping every call (``keep_call`` = 1); results judged as the judge says."""

    def __init__(self, judge: HistoryJudge) -> None:
        self._judge = judge

    @property
    def name(self) -> str:
        return self._judge.name

    def judge(self, view: HistoryView) -> Mapping[str, PairJudgement]:
        return {
            key: PairJudgement(keep_call=1.0, keep_result=j.keep_result)
            for key, j in self._judge.judge(view).items()
        }


def previews_only(model: DecisionModel | HistoryJudge) -> DecisionModel | HistoryJudge:
    """``model`` made to keep every call, so a plan only shortens results (ReMe's previews)."""
    if isinstance(model, HistoryJudge):
        return _KeepCallsJudge(model)
    return _KeepCalls(model)


def written(call: CompactCall, messages: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """Neutral ``messages`` in the request's format, and the format's other fields (Anthropic's system)."""
    if call.format.name == "neutral":
        return list(messages), {}
    fields = dict(call.format.write(messages))
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
