"""What every strategy's orchestrator shares: early stops, loading, change checks, stats and records."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim._convert import to_json_object
from tracetrim._logging import logger as _log
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.compactor._config import ExecutionOptions
from tracetrim.compactor._outcome import Action, Outcome, PairDecision, Plan, PlanStats, Record, Status
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._rebuild import pair_chars
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._transcript import Transcript, TranscriptTooLarge, load_transcript, unchanged


class Stop(Exception):
    """Ends a plan early with an outcome (internal control flow only)."""

    def __init__(self, status: Status, reason: str, detail: str, plan: Plan | None = None) -> None:
        super().__init__(detail)
        self.outcome = Outcome(status=status, reason=reason, plan=plan, detail=detail)


def load_request(request: CompactionRequest, max_chars: int) -> Transcript:
    """The request's history as a `Transcript`, or a `Stop` saying why it cannot be planned."""
    try:
        return load_transcript(request.messages, max_chars)
    except TranscriptTooLarge as exc:
        raise Stop(Status.SKIPPED, "TRANSCRIPT_TOO_LARGE", str(exc)) from None
    except SnapshotError as exc:
        raise Stop(Status.ERROR, "INVALID_TRANSCRIPT", str(exc)) from None


def check_unchanged(request: CompactionRequest, transcript: Transcript) -> None:
    """Stop with TRANSCRIPT_CHANGED when the host's history changed while it was being planned."""
    if not unchanged(request.messages, transcript):
        raise Stop(Status.ERROR, "TRANSCRIPT_CHANGED", "the history changed while it was being planned")


def pair_decisions(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    applied: Mapping[str, tuple[Action, str]],
    chars_after: Mapping[str, int],
    probabilities: Mapping[str, float],
) -> tuple[PairDecision, ...]:
    """One `PairDecision` per pair: the action applied (keep with the pair's own reason by default)."""
    decisions = []
    for pair in pairs:
        before = pair_chars(messages, pair)
        action, reason = applied.get(pair.key, (Action.KEEP, pair.reason))
        decisions.append(
            PairDecision(
                key=pair.key,
                call_id=pair.call_id,
                tool=pair.tool,
                action=action,
                reason=reason,
                keep_call=probabilities.get(f"call_{pair.key}"),
                keep_result=probabilities.get(f"result_{pair.key}"),
                chars_before=before,
                chars_after=chars_after.get(pair.key, before),
            )
        )
    return tuple(decisions)


def with_reduction(stats: PlanStats) -> PlanStats:
    """``stats`` with ``reduction`` computed from the characters before and after."""
    reduction = 1 - stats.chars_after / stats.chars_before if stats.chars_before else 0.0
    return attrs.evolve(stats, reduction=reduction)


def with_elapsed(outcome: Outcome, started: float) -> Outcome:
    """``outcome`` with the plan's ``elapsed_ms`` set from ``started`` (a ``perf_counter`` value)."""
    if outcome.plan is None:
        return outcome
    stats = attrs.evolve(outcome.plan.stats, elapsed_ms=(time.perf_counter() - started) * 1000)
    return attrs.evolve(outcome, plan=attrs.evolve(outcome.plan, stats=stats))


def make_record(
    execution: ExecutionOptions, request: CompactionRequest, outcome: Outcome, elapsed_ms: float
) -> Record:
    """The observer's record for one plan."""
    plan = outcome.plan
    stats = plan.stats if plan is not None else PlanStats()
    actions = Counter(d.action.value for d in plan.decisions) if plan is not None else Counter()
    return Record(
        purpose=execution.purpose,
        version=execution.version,
        mode=execution.mode.value,
        status=outcome.status.value,
        reason=outcome.reason,
        elapsed_ms=round(elapsed_ms, 3),
        scope=request.scope.as_dict() if request.scope is not None else None,
        detail=outcome.detail,
        messages_before=stats.messages_before,
        messages_after=stats.messages_after,
        chars_before=stats.chars_before,
        chars_after=stats.chars_after,
        reduction=round(stats.reduction, 6),
        candidates=stats.candidates,
        protected=stats.protected,
        requests=stats.requests,
        retries=stats.retries,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        state_tokens=stats.state_tokens,
        fitting_stage=stats.fitting_stage,
        actions=dict(actions),
        archive_ref=plan.archive_ref if plan else "",
    )


def emit_record(
    execution: ExecutionOptions, request: CompactionRequest, outcome: Outcome, started: float
) -> None:
    """Log the plan's record and hand it to the observer; an observer's error is logged and swallowed."""
    record = make_record(execution, request, outcome, (time.perf_counter() - started) * 1000)
    fields: dict[str, Any] = to_json_object(record)
    _log.info("tracetrim.plan", **fields)
    if execution.observer is not None:
        try:
            execution.observer(record)
        except Exception:  # an observer must never change what the host gets
            _log.warning("tracetrim.observer_failed", exc_info=True)
