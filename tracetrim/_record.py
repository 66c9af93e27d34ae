"""The observer's record of one plan: every `PlanStats` number, the outcome, and opt-in per-pair detail."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tracetrim._convert import converter, to_json_object
from tracetrim._followup import now_iso
from tracetrim._json import canonical_json
from tracetrim._logging import logger as _log
from tracetrim._snapshot import Message, text_of_output
from tracetrim._tokens import chars_to_tokens
from tracetrim._validators import FieldValueError
from tracetrim.compactor._outcome import Outcome, PairDecision, PlanStats

if TYPE_CHECKING:
    from tracetrim.compactor._config import ExecutionOptions
    from tracetrim.compactor._request import CompactionRequest

RECORD_VERSION = 2
"""The record layout written today; version 1 (no ``record_version`` key) had no per-pair detail."""


@attrs.frozen(kw_only=True)
class RecordDetail:
    """What an observer asks records to carry beyond the numbers.

    An observer asks by having a ``record_detail`` attribute of this type (`JsonLinesObserver` does).
    ``pairs`` adds one `PairRecord` per call/result pair; ``content`` adds each pair's call input and
    result text to those, and is off by default: records never carry message content unasked.
    """

    pairs: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    content: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if self.content and not self.pairs:
            raise FieldValueError("RecordDetail.content needs pairs=True: content is carried per pair")


@attrs.frozen(kw_only=True)
class PairRecord(PairDecision):
    """One pair's decision as a record carries it: the `PairDecision`, its sizes in tokens, its age,
    and no content unless the observer asked for it.

    ``age_turns`` counts the assistant messages after the one holding the call (0: the latest turn;
    None where the call was not found). Tokens are estimated from characters.
    """

    tokens_before: int = 0
    tokens_after: int = 0
    age_turns: int | None = None
    call_input: str | None = None
    result_text: str | None = None


@attrs.frozen(kw_only=True)
class Record(PlanStats):
    """What the observer gets for every plan: one flat, JSON-friendly line for logs and audits.

    It is a `PlanStats` (every plan number under its own name, ``elapsed_ms`` being the whole plan's
    time, records without a plan carrying zeros) plus the outcome, the scope and, when the observer
    asks (`RecordDetail`), the per-pair decisions. ``at`` is when the plan ended (ISO 8601 UTC; "" in
    version 1 lines) and ``record_version`` the layout (`RECORD_VERSION`).
    """

    purpose: str
    version: str
    mode: str
    status: str
    reason: str
    scope: dict[str, str] | None = None
    detail: str = ""
    actions: dict[str, int] = attrs.field(factory=dict)
    archive_ref: str = ""
    pairs: tuple[PairRecord, ...] | None = None
    at: str = ""
    record_version: int = RECORD_VERSION

    @property
    def stats(self) -> PlanStats:
        """The plan numbers alone."""
        return PlanStats(**{field.name: getattr(self, field.name) for field in attrs.fields(PlanStats)})


def record_from_json(data: Any) -> Record:
    """A `Record` from one decoded JSON line of any version; cattrs errors for anything else.

    Version 1 lines have no ``record_version``; numbers a line lacks (written before a field existed)
    take their defaults, and keys this version does not know are ignored.
    """
    if isinstance(data, Mapping) and "record_version" not in data:
        data = {**data, "record_version": 1}
    return converter.structure(data, Record)


def record_json(record: Record) -> dict[str, Any]:
    """The record as plain JSON data; ``pairs`` is left out when the record has none."""
    data: dict[str, Any] = to_json_object(record)
    if data.get("pairs") is None:
        data.pop("pairs", None)
    return data


def _turn_ages(messages: Sequence[Any]) -> dict[str, int]:
    """Call id to the number of assistant messages after the one holding the call."""
    where: dict[str, int] = {}
    turns = 0
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for block in _blocks(message):
            if block.get("type") == "tool_call" and isinstance(block.get("id"), str):
                where.setdefault(block["id"], turns)
        turns += 1
    return where


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _contents(messages: Sequence[Any]) -> dict[str, tuple[str | None, str | None]]:
    """Call id to its call input (canonical JSON when not a string) and its result's text."""
    inputs: dict[str, str | None] = {}
    results: dict[str, str | None] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        for block in _blocks(message):
            call_id = block.get("id")
            if not isinstance(call_id, str):
                continue
            if block.get("type") == "tool_call":
                value = block.get("input")
                inputs[call_id] = value if isinstance(value, str) else canonical_json(value)
            elif block.get("type") == "tool_result":
                output = block.get("output")
                results[call_id] = text_of_output(output) if isinstance(output, (str, list)) else None
    return {
        call_id: (inputs.get(call_id), results.get(call_id)) for call_id in inputs.keys() | results.keys()
    }


def pair_records(
    messages: Sequence[Message], decisions: Sequence[PairDecision], detail: RecordDetail
) -> tuple[PairRecord, ...]:
    """One `PairRecord` per decision; call input and result text only when ``detail.content``."""
    ages = _turn_ages(messages)
    contents = _contents(messages) if detail.content else {}
    return tuple(
        PairRecord(
            **attrs.asdict(decision, recurse=False),
            tokens_before=chars_to_tokens(decision.chars_before),
            tokens_after=chars_to_tokens(decision.chars_after),
            age_turns=ages.get(decision.call_id),
            call_input=contents.get(decision.call_id, (None, None))[0],
            result_text=contents.get(decision.call_id, (None, None))[1],
        )
        for decision in decisions
    )


def observer_detail(observer: object) -> RecordDetail:
    """The detail ``observer`` asks for: its ``record_detail`` attribute, or the numbers alone."""
    detail = getattr(observer, "record_detail", None)
    return detail if isinstance(detail, RecordDetail) else RecordDetail()


def make_record(
    execution: ExecutionOptions,
    request: CompactionRequest,
    outcome: Outcome,
    elapsed_ms: float,
    detail: RecordDetail | None = None,
) -> Record:
    """The observer's record for one plan, with the detail ``detail`` asks for (none by default)."""
    detail = detail or RecordDetail()
    plan = outcome.plan
    stats = plan.stats if plan is not None else PlanStats()
    actions = Counter(d.action.value for d in plan.decisions) if plan is not None else Counter()
    # Every plan number goes in under its own name (PlanStats fields added later included); the
    # record's time is the whole plan's, and the reduction is rounded for a readable line.
    numbers = attrs.asdict(stats, recurse=False)
    numbers["elapsed_ms"] = round(elapsed_ms, 3)
    numbers["reduction"] = round(stats.reduction, 6)
    pairs = None
    if detail.pairs and plan is not None:
        pairs = pair_records(request.messages, plan.decisions, detail)
    return Record(
        purpose=execution.purpose,
        version=execution.version,
        mode=execution.mode.value,
        status=outcome.status.value,
        reason=outcome.reason,
        scope=request.scope.as_dict() if request.scope is not None else None,
        detail=outcome.detail,
        actions=dict(actions),
        archive_ref=plan.archive_ref if plan else "",
        pairs=pairs,
        at=now_iso(),
        **numbers,
    )


def emit_record(
    execution: ExecutionOptions, request: CompactionRequest, outcome: Outcome, started: float
) -> None:
    """Log the plan's record (numbers only) and hand it, with the detail it asks for, to the observer.

    An observer's error is logged and swallowed: an observer must never change what the host gets.
    """
    elapsed_ms = (time.perf_counter() - started) * 1000
    detail = observer_detail(execution.observer)
    record = make_record(execution, request, outcome, elapsed_ms, detail)
    fields = record_json(record)
    fields.pop("pairs", None)  # per-pair detail is for the observer, not for every log line
    _log.info("tracetrim.plan", **fields)
    if execution.observer is not None:
        try:
            execution.observer(record)
        except Exception:
            _log.warning("tracetrim.observer_failed", exc_info=True)
