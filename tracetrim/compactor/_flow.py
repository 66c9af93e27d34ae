"""What every strategy's orchestrator shares: early stops, loading, change checks, stats and records."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._convert import to_json_object
from tracetrim._json import canonical_lengths
from tracetrim._logging import logger as _log
from tracetrim._scope import Scope
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.archive import Archive
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._outcome import (
    Action,
    Outcome,
    PairDecision,
    Plan,
    PlanStats,
    Reason,
    Record,
    Status,
)
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._transcript import Transcript, TranscriptTooLarge, load_transcript, unchanged


class Stop(Exception):
    """Ends a plan early with an outcome (internal control flow only)."""

    def __init__(self, status: Status, reason: Reason, detail: str, plan: Plan | None = None) -> None:
        super().__init__(detail)
        self.outcome = Outcome(status=status, reason=reason, plan=plan, detail=detail)


def load_request(request: CompactionRequest, max_chars: int) -> Transcript:
    """The request's history as a `Transcript`, or a `Stop` saying why it cannot be planned."""
    try:
        return load_transcript(request.messages, max_chars)
    except TranscriptTooLarge as exc:
        raise Stop(Status.SKIPPED, Reason.TRANSCRIPT_TOO_LARGE, str(exc)) from None
    except SnapshotError as exc:
        raise Stop(Status.ERROR, Reason.INVALID_TRANSCRIPT, str(exc)) from None


def check_unchanged(request: CompactionRequest, transcript: Transcript) -> None:
    """Stop with TRANSCRIPT_CHANGED when the host's history changed while it was being planned."""
    if not unchanged(request.messages, transcript):
        raise Stop(Status.ERROR, Reason.TRANSCRIPT_CHANGED, "the history changed while it was being planned")


def pair_decisions(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    applied: Mapping[str, tuple[Action, str]],
    chars_after: Mapping[str, int],
    probabilities: Mapping[str, float],
) -> tuple[PairDecision, ...]:
    """One `PairDecision` per pair: the action applied (keep with the pair's own reason by default)."""
    decisions = []
    for pair, before in zip(pairs, _pair_sizes(messages, pairs), strict=True):
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


def _pair_sizes(messages: Sequence[Message], pairs: Sequence[Pair]) -> list[int]:
    """Characters of each pair's call and result blocks as they stand in ``messages``
    (`tracetrim.compactor._rebuild.pair_chars` of each pair, measured in one batch)."""
    places = [[at for at in (pair.call_at, pair.result_at) if at] for pair in pairs]
    sizes = iter(canonical_lengths([messages[i]["content"][j] for found in places for i, j in found]))
    return [sum(next(sizes) for _ in found) for found in places]


def _list_overhead(count: int) -> int:
    """Characters of a JSON list's brackets and commas."""
    return 2 + max(count - 1, 0)


def rebuilt_length(before: Sequence[Message], after: Sequence[Message], sizes: Sequence[int]) -> int:
    """``canonical_length(after)``, where ``after`` is a rebuild of ``before`` whose messages are
    ``sizes`` characters long (`Transcript.sizes`).

    A rebuild keeps every message it does not touch as the same object, so only the messages it
    added are measured: the history is not encoded whole again.
    """
    kept = {id(message) for message in after}
    was = {id(message) for message in before}
    inner = sum(size for message, size in zip(before, sizes, strict=True) if id(message) in kept)
    inner += sum(canonical_lengths([message for message in after if id(message) not in was]))
    return inner + _list_overhead(len(after))


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
    # Every plan statistic but the plan's own timing goes into the record under the same name.
    numbers = attrs.asdict(stats)
    del numbers["elapsed_ms"]
    numbers["reduction"] = round(stats.reduction, 6)
    return Record(
        purpose=execution.purpose,
        version=execution.version,
        mode=execution.mode.value,
        status=outcome.status.value,
        reason=outcome.reason,
        elapsed_ms=round(elapsed_ms, 3),
        scope=request.scope.as_dict() if request.scope is not None else None,
        detail=outcome.detail,
        actions=dict(actions),
        archive_ref=plan.archive_ref if plan else "",
        **numbers,
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


async def run_plan(
    execution: ExecutionOptions, request: CompactionRequest, body: Callable[[float], Awaitable[Outcome]]
) -> Outcome:
    """The frame of every strategy's ``plan``: OFF skips, `Stop` ends early, a bug becomes an ERROR
    outcome, and each outcome gets its elapsed time and record. ``body`` gets the start time.

    Only a call with something other than a `CompactionRequest` raises (`TypeError`): that is a
    mistake in the host's code, to be found on the first call, not an outcome to be logged.
    """
    if not isinstance(request, CompactionRequest):
        raise TypeError(
            f"plan() and compact() take a tracetrim.CompactionRequest, got {type(request).__name__};"
            " wrap the history: CompactionRequest(messages)"
        )
    started = time.perf_counter()
    try:
        if execution.mode is Mode.OFF:
            outcome = Outcome(status=Status.SKIPPED, reason=Reason.DISABLED, detail="mode is OFF")
        else:
            outcome = await body(started)
    except asyncio.CancelledError:
        cancelled = Outcome(status=Status.CANCELLED, reason=Reason.CANCELLED, detail="plan cancelled")
        emit_record(execution, request, cancelled, started)
        raise
    except Stop as stop:
        outcome = stop.outcome
    except Exception as exc:  # a bug must not take the host's agent down with it
        outcome = Outcome(
            status=Status.ERROR, reason=Reason.INTERNAL_ERROR, detail=f"{type(exc).__name__}: {exc}"
        )
    outcome = with_elapsed(outcome, started)
    emit_record(execution, request, outcome, started)
    return outcome


def compacted_history(
    execution: ExecutionOptions, request: CompactionRequest, outcome: Outcome
) -> list[Message] | None:
    """What a strategy's ``compact`` hands the harness: the new history, the original one after a
    failure in ENFORCE mode, or None (OFF and SHADOW) so the host runs its own compaction unchanged."""
    if execution.mode is not Mode.ENFORCE:
        return None
    if outcome.adopted and outcome.plan is not None:
        return outcome.plan.messages
    try:
        return list(request.messages)
    except TypeError:
        return None


async def save_original(archive: Archive, scope: Scope, messages: list[Message], deadline: float) -> str:
    """Archive ``messages`` before a shorter history is adopted; a `Stop` (ARCHIVE_ERROR) when the save
    fails, runs past ``deadline`` (a loop time) or returns no reference, so nothing is adopted unsaved."""
    try:
        async with asyncio.timeout_at(deadline):
            saved = await archive.save(scope, messages)
    except TimeoutError:
        raise Stop(
            Status.ERROR, Reason.ARCHIVE_ERROR, "archive save did not finish before the deadline"
        ) from None
    except Exception as exc:
        raise Stop(
            Status.ERROR, Reason.ARCHIVE_ERROR, f"archive save failed: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(saved, str) or not saved:
        raise Stop(Status.ERROR, Reason.ARCHIVE_ERROR, f"archive save returned no reference ({saved!r})")
    return saved
