"""The one runner every strategy shares: load the history, ask for a proposal, archive, adopt, record.

A strategy (`Compactor`'s pair planner, `OffloadStrategy`'s size rules) only proposes: given the
validated transcript, the request, the reference the original will be archived under and a deadline,
it returns a `Proposal` or an `Outcome` saying why there is none. Everything else happens here, once,
the same way for every strategy: OFF, loading and validation, the scope check, the reference
computed before anything is rebuilt (so markers name it and nothing is rebuilt twice), the check that
the host's history did not change meanwhile, archiving the original and every snapshot the proposal
names before adopting, cancellation, a bug turned into an ``ERROR`` outcome, timing and the record.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import attrs

from tracetrim._gc_pause import gc_paused
from tracetrim._record import emit_record
from tracetrim._scope import Scope
from tracetrim._snapshot import LIST_FRAME, Message, SnapshotError, framed
from tracetrim._validators import FieldTypeError
from tracetrim.archive import Archive
from tracetrim.archive._protocol import EncodedSnapshot, EncodedSnapshotArchive, snapshot_frame
from tracetrim.compactor._config import ExecutionOptions, Mode
from tracetrim.compactor._flow import compacted_history
from tracetrim.compactor._outcome import Outcome, Plan, Reason, Status
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._transcript import Transcript, TranscriptTooLarge, load_transcript, unchanged

Remake = Callable[[str, "Sequence[str] | None"], Awaitable["Proposal | Outcome"]]
"""Makes a proposal again naming other references: the original's, and the snapshots' (None: as
``snapshot_ref`` predicts them)."""


@attrs.frozen
class Proposal:
    """A strategy's candidate history, before anything is archived.

    ``plan.messages`` is the proposed history; its markers name ``ref`` (the reference the runner
    passed in) and, for each of ``snapshots`` (further histories to archive with the original, such
    as summarised groups), the reference paired with it. ``remake`` makes the same proposal naming
    other references, for an archive that names snapshots its own way; the runner calls it only then.
    """

    plan: Plan
    detail: str
    snapshots: tuple[tuple[list[Message], str], ...] = ()
    remake: Remake | None = None


class Proposer(Protocol):
    """What a strategy gives the runner: a proposal for one loaded history, or why there is none."""

    async def __call__(
        self, transcript: Transcript, request: CompactionRequest, ref: str, deadline: float
    ) -> Proposal | Outcome: ...


class Strategy(abc.ABC):
    """Base of the strategies the runner drives: `plan` and `compact` come from one `propose`.

    A subclass sets ``execution`` and ``archive`` and implements `propose` and
    ``max_transcript_chars``; `Compactor` and `OffloadStrategy` are the two.
    """

    execution: ExecutionOptions
    archive: Archive | None

    @property
    @abc.abstractmethod
    def max_transcript_chars(self) -> int:
        """The largest history (characters of its JSON) this strategy plans; larger ones are SKIPPED."""

    @abc.abstractmethod
    async def propose(
        self, transcript: Transcript, request: CompactionRequest, ref: str, deadline: float
    ) -> Proposal | Outcome:
        """A proposal for one loaded history whose markers name ``ref``, or why there is none."""

    @property
    def own_budget(self) -> bool:
        """Whether this strategy brings its own trigger and target, which an adapter leaves alone
        (`OffloadStrategy`'s config always has a trigger; `Compactor` overrides this)."""
        return True

    def with_budget(self, trigger_tokens: int, target_tokens: int) -> Strategy:
        """This strategy planning to ``trigger_tokens`` / ``target_tokens``: a copy when it takes the
        budget (the original is not changed: a host may share it), itself when it has `own_budget`."""
        return self

    async def plan(self, request: CompactionRequest) -> Outcome:
        """Plan ``request`` and return the outcome; see `Outcome` for what each status means."""
        return await run(
            self.propose,
            request,
            execution=self.execution,
            archive=self.archive,
            max_chars=self.max_transcript_chars,
        )

    async def compact(self, request: CompactionRequest) -> list[Message] | None:
        """The harness entry point: the new history, the original one after a failure in ENFORCE mode,
        or None (OFF and SHADOW) so the host runs its own compaction unchanged."""
        return compacted_history(self.execution, request, await self.plan(request))


async def run(
    propose: Proposer,
    request: CompactionRequest,
    *,
    execution: ExecutionOptions,
    archive: Archive | None,
    max_chars: int,
) -> Outcome:
    """Plan ``request`` with ``propose``: the outcome every strategy's ``plan`` returns.

    Only a call with something other than a `CompactionRequest` raises (`TypeError`): that is a
    mistake in the host's code, to be found on the first call, not an outcome to be logged.
    Cancellation propagates after a ``CANCELLED`` record; any other exception becomes an
    ``INTERNAL_ERROR`` outcome, so a bug never takes the host's agent down with it.
    """
    if not isinstance(request, CompactionRequest):
        raise FieldTypeError(
            f"plan() and compact() take a tracetrim.CompactionRequest, got {type(request).__name__};"
            " wrap the history: CompactionRequest(messages)"
        )
    started = time.perf_counter()
    try:
        if execution.mode is Mode.OFF:
            outcome = Outcome(status=Status.SKIPPED, reason=Reason.DISABLED, detail="mode is OFF")
        else:
            outcome = await _run(propose, request, execution, archive, max_chars)
    except asyncio.CancelledError:
        cancelled = Outcome(status=Status.CANCELLED, reason=Reason.CANCELLED, detail="plan cancelled")
        emit_record(execution, request, cancelled, started)
        raise
    except Exception as exc:  # a bug must not take the host's agent down with it
        outcome = Outcome(
            status=Status.ERROR, reason=Reason.INTERNAL_ERROR, detail=f"{type(exc).__name__}: {exc}"
        )
    outcome = _with_elapsed(outcome, started)
    emit_record(execution, request, outcome, started)
    return outcome


async def _run(
    propose: Proposer,
    request: CompactionRequest,
    execution: ExecutionOptions,
    archive: Archive | None,
    max_chars: int,
) -> Outcome:
    deadline = asyncio.get_running_loop().time() + execution.budget_s
    scope = request.scope
    # Each message is encoded (canonically) and hashed once, here: in the archive's frame the
    # fingerprint is the reference, and an archive that takes encoded snapshots stores these bytes.
    keep = execution.mode is Mode.ENFORCE and isinstance(archive, EncodedSnapshotArchive)
    frame = snapshot_frame(scope, request.sent if keep else None) if scope is not None else LIST_FRAME
    try:
        with gc_paused():
            transcript = load_transcript(request.messages, max_chars, frame=frame, keep_encoded=keep)
    except TranscriptTooLarge as exc:
        return Outcome(status=Status.SKIPPED, reason=Reason.TRANSCRIPT_TOO_LARGE, detail=str(exc))
    except SnapshotError as exc:
        return Outcome(status=Status.ERROR, reason=Reason.INVALID_TRANSCRIPT, detail=str(exc))
    if execution.mode is Mode.ENFORCE and scope is None:
        detail = "ENFORCE mode needs request.scope to archive under"
        return Outcome(status=Status.ERROR, reason=Reason.SCOPE_REQUIRED, detail=detail)
    # Markers name the reference the original will be archived under, so the proposal reads the
    # same in SHADOW as in ENFORCE and is made once.
    ref = transcript.fingerprint.hex() if scope is not None else ""
    turn = LoopTurn()
    try:
        proposed = await propose(transcript, request, ref, deadline)
    finally:
        turn.close()
    if isinstance(proposed, Outcome):
        if (
            proposed.status is Status.INCONCLUSIVE
            and turn.turned
            and not unchanged(request.messages, transcript)
        ):
            return _changed()
        return proposed
    if execution.mode is Mode.SHADOW:
        if turn.turned and not unchanged(request.messages, transcript):
            return _changed()
        detail = (
            f"{proposed.detail}; not adopted (SHADOW)" if proposed.detail else "proposal not adopted (SHADOW)"
        )
        return Outcome(
            status=Status.DECIDED, reason=Reason.SHADOW_PROPOSAL, detail=detail, plan=proposed.plan
        )
    assert archive is not None and scope is not None
    return await _archive_then_adopt(proposed, archive, scope, transcript, ref, request, deadline)


async def _archive_then_adopt(
    proposed: Proposal,
    archive: Archive,
    scope: Scope,
    transcript: Transcript,
    ref: str,
    request: CompactionRequest,
    deadline: float,
) -> Outcome:
    """Save the original (and each snapshot the proposal names) first; adopt only what names them."""
    if transcript.encoded is not None and isinstance(archive, EncodedSnapshotArchive):
        encoded = EncodedSnapshot(ref=ref, data=framed(transcript.encoded, transcript.frame))
        saved = await _save(archive, scope, transcript.messages, deadline, encoded)
    else:
        saved = await _save(archive, scope, transcript.messages, deadline)
    if isinstance(saved, Outcome):
        return saved
    if saved != ref and proposed.remake is not None:
        # A custom archive names snapshots its own way: the markers must say its name.
        remade = await proposed.remake(saved, None)
        if isinstance(remade, Outcome):
            return remade
        proposed = remade
    refs: list[str] = []
    for snapshot, _ in proposed.snapshots:
        extra = await _save(archive, scope, snapshot, deadline)
        if isinstance(extra, Outcome):
            return extra
        refs.append(extra)
    if refs != [predicted for _, predicted in proposed.snapshots] and proposed.remake is not None:
        remade = await proposed.remake(saved, refs)
        if isinstance(remade, Outcome):
            return remade
        proposed = remade
    if not unchanged(request.messages, transcript):
        return _changed()
    detail = f"{proposed.detail}; original archived as {saved}" if proposed.detail else ""
    return Outcome(
        status=Status.DECIDED,
        reason=Reason.ARCHIVED_PROPOSAL,
        detail=detail or f"original archived as {saved}",
        plan=attrs.evolve(proposed.plan, archive_ref=saved),
    )


async def _save(
    archive: Archive,
    scope: Scope,
    messages: Sequence[Message],
    deadline: float,
    encoded: EncodedSnapshot | None = None,
) -> str | Outcome:
    """The reference ``archive`` saved ``messages`` under, or an ``ARCHIVE_ERROR`` outcome when the save
    fails, runs past ``deadline`` (a loop time) or returns no reference: nothing is adopted unsaved.

    With ``encoded`` (their snapshot, already encoded and hashed) ``archive`` stores those bytes."""
    try:
        async with asyncio.timeout_at(deadline):
            if encoded is not None and isinstance(archive, EncodedSnapshotArchive):
                saved = await archive.save_encoded(scope, encoded)
            else:
                saved = await archive.save(scope, messages)
    except TimeoutError:
        return _archive_error("archive save did not finish before the deadline")
    except Exception as exc:
        return _archive_error(f"archive save failed: {type(exc).__name__}: {exc}")
    if not isinstance(saved, str) or not saved:
        return _archive_error(f"archive save returned no reference ({saved!r})")
    return saved


class LoopTurn:
    """Whether the event loop has turned since this was made.

    A plan whose proposal never waited (an in-process judge, nothing to archive) gave no other task
    a chance to run: the host's history is as it was loaded, and encoding it again to check would
    only cost time (3% of such a plan at 10,000 messages).
    """

    def __init__(self) -> None:
        self.turned = False
        self._handle = asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        self.turned = True

    def close(self) -> None:
        """Stop watching: the loop's next turn no longer counts."""
        self._handle.cancel()


def _archive_error(detail: str) -> Outcome:
    return Outcome(status=Status.ERROR, reason=Reason.ARCHIVE_ERROR, detail=detail)


def _changed() -> Outcome:
    detail = "the history changed while it was being planned"
    return Outcome(status=Status.ERROR, reason=Reason.TRANSCRIPT_CHANGED, detail=detail)


def _with_elapsed(outcome: Outcome, started: float) -> Outcome:
    """``outcome`` with the plan's ``elapsed_ms`` set from ``started`` (a ``perf_counter`` value)."""
    if outcome.plan is None:
        return outcome
    stats = attrs.evolve(outcome.plan.stats, elapsed_ms=(time.perf_counter() - started) * 1000)
    return attrs.evolve(outcome, plan=attrs.evolve(outcome.plan, stats=stats))
