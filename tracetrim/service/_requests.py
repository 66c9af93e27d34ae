"""Parsing request bodies into planner inputs; every mistake is a 422 naming the field at fault.

Each body has a wire class (`CompactBody`, `RestoreBody`, `ListBody`) structured by the one strict
input converter (`tracetrim._input_convert`): unknown keys refused, no coercion, the path of each
fault (``options.keep_threshold``, ``scope.user_id``, ``eligible_tool_names[1]``) in the answer.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import attrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from tracetrim._input_convert import (
    InputError,
    NonEmptyStr,
    expect_object,
    register_object,
    structure_input,
    structure_part,
)
from tracetrim._json import spaced_json
from tracetrim._scope import Scope
from tracetrim._snapshot import EncodedHistory, SnapshotError, copy_messages
from tracetrim.archive import ArchiveError, SentDocument, check_ref
from tracetrim.compactor import CompactionRequest, CompactorConfig, Mode
from tracetrim.compactor._options import OPTION_FIELDS
from tracetrim.formats import FormatError, HistoryFormat, detect_messages, history_format
from tracetrim.service._errors import ApiError, invalid

T = TypeVar("T")

ModeName = Literal["shadow", "enforce"]

SERVICE_OPTIONS = frozenset({"mode", "budget_s"})
"""Options the service reads itself; every other option is a `CompactorConfig` field."""


@attrs.frozen(kw_only=True)
class PlanOptions:
    """A body's ``options``: the run's mode and deadline beside the `CompactorConfig` fields."""

    mode: ModeName | None = None
    budget_s: float | None = None
    config: CompactorConfig = attrs.field(factory=CompactorConfig)


def _structure_plan_options(value: Any, _: Any) -> PlanOptions:
    data = expect_object(value)
    extra = set(data) - SERVICE_OPTIONS - OPTION_FIELDS
    if extra:
        raise ForbiddenExtraKeysError("", PlanOptions, extra)
    errors: list[Exception] = []
    mode = structure_part(data.get("mode"), ModeName | None, errors, "mode")
    budget_s = structure_part(data.get("budget_s"), float | None, errors, "budget_s")
    rest = {k: v for k, v in data.items() if k not in SERVICE_OPTIONS}
    config = structure_part(rest, CompactorConfig, errors)
    if errors:
        raise ClassValidationError("While structuring PlanOptions", errors, PlanOptions)
    return PlanOptions(mode=mode, budget_s=budget_s, config=config)


register_object(
    PlanOptions, noun="option", known=OPTION_FIELDS | SERVICE_OPTIONS, hook=_structure_plan_options
)


@attrs.frozen(kw_only=True)
class CompactBody:
    """The body of `POST /v1/compact_context`: the `RequestFields` (``options`` with the service's
    ``mode`` and ``budget_s``) plus the history, its format and its owner."""

    messages: list[Any]
    goal: str | None = None
    next_action: str | None = None
    eligible_tool_names: tuple[NonEmptyStr, ...] | None = None
    protected_message_ids: tuple[str, ...] | None = None
    protected_call_ids: tuple[str, ...] | None = None
    options: PlanOptions | None = None
    scope: Scope | None = None
    format: str | None = None
    system: Any = None


@attrs.frozen(kw_only=True)
class RestoreBody:
    """The body of `POST /v1/restore`: scope, reference, the call ids wanted (absent: all) and the
    format to answer in (absent: neutral; ``sent``: the history exactly as it was sent)."""

    scope: Scope
    archive_ref: str
    call_ids: tuple[NonEmptyStr, ...] | None = None
    format: str | None = None


@attrs.frozen(kw_only=True)
class ListBody:
    """The body of `POST /v1/archive/list`."""

    scope: Scope


@attrs.frozen
class CompactCall:
    """A parsed compaction request: the planner request, its config, mode, deadline and message format.

    ``original`` is the ``messages`` array exactly as the client sent it (in ``format``), returned
    untouched whenever nothing is adopted.
    """

    request: CompactionRequest
    config: CompactorConfig
    mode: Mode
    budget_s: float
    format: HistoryFormat
    original: list[Any]


@attrs.frozen
class RestoreCall:
    """A parsed `POST /restore`: scope, reference and the call ids wanted (empty: the whole snapshot)."""

    scope: Scope
    ref: str
    call_ids: tuple[str, ...] = ()
    format: str = "neutral"


def parse_body(data: Any, cl: type[T]) -> T:
    """``data`` structured as the wire class ``cl``; a 422 naming the first field at fault (every
    fault in the message), ``invalid_body`` when the body is not a JSON object."""
    try:
        return structure_input(data, cl)
    except InputError as exc:
        code = exc.code if exc.field else "invalid_body"
        raise ApiError(422, code, str(exc), field=exc.field or None) from None


def _snapshot_error(exc: SnapshotError) -> ApiError:
    path = "messages"
    if exc.message_index is not None:
        path += f"[{exc.message_index}]"
        if exc.block_index is not None:
            path += f".content[{exc.block_index}]"
        if exc.field is not None:
            path += f".{exc.field}"
    return ApiError(422, "invalid_messages", str(exc), field=path)


def check_format(name: str | None, default: str) -> str:
    """The ``format`` field: a `tracetrim.formats.HISTORY_FORMATS` name or ``auto``."""
    name = default if name is None else name
    if name != "auto":
        try:
            history_format(name)
        except FormatError as exc:
            raise invalid("format", f"{exc}, or auto") from None
    return name


def _validated(neutral: list[Any]) -> EncodedHistory:
    """``neutral`` checked as the runner checks it (a `SnapshotError` names the place) and kept with
    each message's canonical JSON, which the runner then reuses instead of encoding it again; it is
    this request's own copy, so the runner need not check that it changed (`EncodedHistory.owned`)."""
    copied = copy_messages(neutral, keep_encoded=True)
    blocks = copied.blocks
    assert copied.encoded is not None and blocks is not None
    sizes = [[blocks.of(n, b) for b in range(len(m["content"]))] for n, m in enumerate(copied.messages)]
    return EncodedHistory(copied.messages, copied.encoded, sizes, owned=True)


def read_messages(
    messages: list[Any], system: Any, fmt_name: str
) -> tuple[list[Any], HistoryFormat, list[Any]]:
    """The neutral messages of ``messages`` read as ``fmt_name`` (``auto``: told by shape), the
    format used and the array as sent; a 422 naming the message, block and field otherwise."""
    try:
        fmt = history_format(detect_messages(messages) if fmt_name == "auto" else fmt_name)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # a shape detection trips over
        raise ApiError(
            422, "invalid_messages", f"the format of the messages cannot be told ({exc})", field="messages"
        ) from None
    fields = {"system": system} if system is not None else {}
    try:
        neutral = _validated(fmt.read(messages, fields))
    except SnapshotError as exc:
        error = _snapshot_error(exc)
        if fmt.name != "neutral":
            error = ApiError(422, error.code, f"reading the messages as {fmt.name}: {exc}", field=error.field)
        raise error from None
    except FormatError as exc:
        raise ApiError(422, "invalid_messages", str(exc), field="messages") from None
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # a reader meeting a shape it refuses
        raise ApiError(
            422,
            "invalid_messages",
            f"the messages are not valid {fmt.name} messages ({exc})",
            field="messages",
        ) from None
    return neutral, fmt, messages


def mode_and_budget(
    options: PlanOptions, max_budget_s: float, default_mode: ModeName = "shadow"
) -> tuple[Mode, float]:
    """The run's mode and deadline from ``options`` (the server's budget caps the deadline)."""
    budget = options.budget_s if options.budget_s is not None else max_budget_s
    if not 0 < budget <= max_budget_s:
        raise invalid(
            "options.budget_s", f"expected a number of seconds in (0, {max_budget_s}], got {budget!r}"
        )
    return Mode(options.mode or default_mode), float(budget)


def require_scope(mode: Mode, scope: Scope | None) -> None:
    """ENFORCE archives the original under a scope: a 422 (``scope_required``) without one."""
    if mode is Mode.ENFORCE and scope is None:
        raise invalid(
            "scope",
            "ENFORCE needs a scope (user_id, agent_id, session_id) to archive the original under",
            "scope_required",
        )


def parse_compact(data: Any, *, max_budget_s: float) -> CompactCall:
    """A `CompactCall` from the JSON body of `POST /v1/compact_context`; `ApiError` (422) otherwise."""
    body = parse_body(data, CompactBody)
    if body.eligible_tool_names is None:
        raise invalid("eligible_tool_names", "is required", "missing_field")
    messages, fmt, original = read_messages(body.messages, body.system, check_format(body.format, "neutral"))
    options = body.options or PlanOptions()
    mode, budget = mode_and_budget(options, max_budget_s)
    config = attrs.evolve(options.config, eligible_tools=body.eligible_tool_names)
    require_scope(mode, body.scope)
    request = CompactionRequest(
        messages,
        body.goal or "",
        body.next_action or "",
        scope=body.scope,
        protected_message_ids=body.protected_message_ids or (),
        protected_call_ids=body.protected_call_ids or (),
        sent=_sent(fmt, original, body.system) if mode is Mode.ENFORCE else None,
    )
    return CompactCall(
        request=request, config=config, mode=mode, budget_s=budget, format=fmt, original=original
    )


def _sent(fmt: HistoryFormat, original: Any, system: Any) -> SentDocument | None:
    """The history as the client sent it, archived beside the neutral snapshot: the ``messages`` array
    (with Anthropic's ``system``) in its format. A body is parsed before it is read, so this is the
    sent JSON value, encoded again (key order and values kept, not the body's whitespace)."""
    document = original if system is None else {"system": system, "messages": original}
    try:
        data = spaced_json(document).encode("utf-8")
    except (TypeError, ValueError):
        return None
    return SentDocument(fmt.name, data)


SENT_FORMAT = "sent"
"""``/v1/restore``'s ``format`` for the history exactly as it was sent."""


def parse_restore(data: Any) -> RestoreCall:
    """A `RestoreCall` from the JSON body of `POST /v1/restore`; `ApiError` (422) otherwise."""
    body = parse_body(data, RestoreBody)
    try:
        ref = check_ref(body.archive_ref)
    except ArchiveError as exc:
        raise invalid("archive_ref", str(exc)) from None
    if body.call_ids is not None and not body.call_ids:
        raise invalid("call_ids", "must not be empty; leave it out to restore the whole snapshot")
    fmt = body.format or "neutral"
    if fmt != SENT_FORMAT:
        try:
            history_format(fmt)
        except FormatError as exc:
            raise invalid("format", f"{exc}, or {SENT_FORMAT}") from None
    if body.call_ids and fmt != "neutral":
        raise invalid("format", "call_ids answers with the calls' neutral blocks; leave format out")
    return RestoreCall(scope=body.scope, ref=ref, call_ids=body.call_ids or (), format=fmt)


def parse_list(data: Any) -> Scope:
    """The scope of a `POST /v1/archive/list` body; `ApiError` (422) otherwise."""
    return parse_body(data, ListBody).scope
