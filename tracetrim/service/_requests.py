"""Parsing request bodies into planner inputs; every mistake is a 422 naming the field at fault."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.archive import ArchiveError, check_ref
from tracetrim.compactor import CompactionRequest, CompactorConfig, Mode
from tracetrim.compactor._options import OPTION_FIELDS, REQUEST_FIELDS, OptionsError, config_from_options
from tracetrim.formats import FormatError, HistoryFormat, detect_messages, history_format
from tracetrim.service._errors import ApiError, invalid

COMPACT_FIELDS = REQUEST_FIELDS | {"messages", "scope", "format", "system"}
"""The top-level fields `POST /v1/compact_context` accepts."""

SERVICE_OPTIONS = frozenset({"mode", "budget_s"})
"""Options the service reads itself; every other option is a `CompactorConfig` field."""

_MODES = {"shadow": Mode.SHADOW, "enforce": Mode.ENFORCE}
_SCOPE_FIELDS = ("user_id", "agent_id", "session_id")


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


def _object(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        code = "invalid_field" if where else "invalid_body"
        raise invalid(where, f"expected a JSON object, got {_kind(data)}", code)
    return data


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_known(data: Mapping[str, Any], known: frozenset[str], where: str = "") -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        field = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ApiError(
            422,
            "unknown_field",
            f"unknown field(s) {', '.join(unknown)}{' in ' + where if where else ''}; "
            f"known: {', '.join(sorted(known))}",
            field=field,
        )


def _string(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise invalid(key, f"expected a string, got {_kind(value)}")
    return value


def _strings(
    data: Mapping[str, Any], key: str, *, required: bool = False, non_empty: bool = False
) -> tuple[str, ...]:
    if key not in data or data[key] is None:
        if required:
            raise invalid(key, "is required", code="missing_field")
        return ()
    value = data[key]
    if not isinstance(value, list):
        raise invalid(key, f"expected an array of strings, got {_kind(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or (non_empty and not item):
            raise invalid(
                f"{key}[{index}]",
                f"expected a non-empty string, got {_kind(item) if item != '' else 'an empty string'}",
            )
    return tuple(value)


def parse_scope(data: Mapping[str, Any], *, required: bool) -> Scope | None:
    """The ``scope`` object (``user_id``, ``agent_id``, ``session_id``), None when absent and optional."""
    raw = data.get("scope")
    if raw is None:
        if required:
            raise invalid(
                "scope", "is required: an object with user_id, agent_id and session_id", "missing_field"
            )
        return None
    scope = _object(raw, "scope")
    _check_known(scope, frozenset(_SCOPE_FIELDS), "scope")
    for part in _SCOPE_FIELDS:
        value = scope.get(part)
        if value is None:
            raise invalid(f"scope.{part}", "is required", "missing_field")
        if not isinstance(value, str):
            raise invalid(f"scope.{part}", f"expected a string, got {_kind(value)}")
    try:
        return Scope(**{part: scope[part] for part in _SCOPE_FIELDS})
    except (TypeError, ValueError) as exc:
        text = str(exc)
        part = next((p for p in _SCOPE_FIELDS if f"Scope.{p}" in text), "")
        raise invalid(f"scope.{part}" if part else "scope", text) from None


def _snapshot_error(exc: SnapshotError) -> ApiError:
    path = "messages"
    if exc.message_index is not None:
        path += f"[{exc.message_index}]"
        if exc.block_index is not None:
            path += f".content[{exc.block_index}]"
        if exc.field is not None:
            path += f".{exc.field}"
    return ApiError(422, "invalid_messages", str(exc), field=path)


def parse_format(data: Mapping[str, Any], default: str) -> str:
    """The ``format`` field: a `tracetrim.formats.HISTORY_FORMATS` name or ``auto``."""
    name = data.get("format", default)
    if name is None:
        name = default
    if not isinstance(name, str):
        raise invalid("format", f"expected a format name, got {_kind(name)}")
    if name != "auto":
        try:
            history_format(name)
        except FormatError as exc:
            raise invalid("format", f"{exc}, or auto") from None
    return name


def read_messages(data: Mapping[str, Any], fmt_name: str) -> tuple[list[Any], HistoryFormat, list[Any]]:
    """The neutral messages of ``data["messages"]`` read as ``fmt_name`` (``auto``: told by shape),
    the format used and the array as sent; a 422 naming the message, block and field otherwise."""
    if "messages" not in data:
        raise invalid("messages", "is required: an array of messages", "missing_field")
    messages = data["messages"]
    if not isinstance(messages, list):
        raise invalid("messages", f"expected an array of messages, got {_kind(messages)}")
    fmt = history_format(detect_messages(messages) if fmt_name == "auto" else fmt_name)
    fields = {"system": data["system"]} if data.get("system") is not None else {}
    try:
        neutral = fmt.read(messages, fields)
        validate_messages(neutral)
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


def _mode_and_budget(
    options: dict[str, Any], max_budget_s: float, default_mode: str = "shadow"
) -> tuple[Mode, float]:
    mode_name = options.pop("mode", default_mode)
    if mode_name not in _MODES:
        raise invalid("options.mode", f"expected 'shadow' or 'enforce', got {mode_name!r}")
    budget = options.pop("budget_s", max_budget_s)
    if (
        isinstance(budget, bool)
        or not isinstance(budget, (int, float))
        or not math.isfinite(budget)
        or not 0 < budget <= max_budget_s
    ):
        raise invalid(
            "options.budget_s", f"expected a number of seconds in (0, {max_budget_s}], got {budget!r}"
        )
    return _MODES[mode_name], float(budget)


def build_config(options: Mapping[str, Any], eligible: tuple[str, ...]) -> CompactorConfig:
    """The `CompactorConfig` of ``options`` (any `OPTION_FIELDS`); a 422 naming ``options.<field>``."""
    try:
        return config_from_options(options, eligible)
    except OptionsError as exc:
        message = str(exc).replace("CompactorConfig.", "options.")
        field = f"options.{exc.field}" if exc.field else "options"
        raise ApiError(422, "invalid_field", message, field=field) from None


def parse_compact(data: Any, *, max_budget_s: float) -> CompactCall:
    """A `CompactCall` from the JSON body of `POST /v1/compact_context`; `ApiError` (422) otherwise."""
    body = _object(data, "")
    _check_known(body, COMPACT_FIELDS)
    messages, fmt, original = read_messages(body, parse_format(body, "neutral"))
    goal, next_action = _string(body, "goal"), _string(body, "next_action")
    eligible = _strings(body, "eligible_tool_names", required=True, non_empty=True)
    protected_messages = _strings(body, "protected_message_ids")
    protected_calls = _strings(body, "protected_call_ids")
    raw_options = body.get("options")
    options = {} if raw_options is None else dict(_object(raw_options, "options"))
    _check_known(options, OPTION_FIELDS | SERVICE_OPTIONS, "options")
    mode, budget = _mode_and_budget(options, max_budget_s)
    config = build_config(options, eligible)
    scope = parse_scope(body, required=False)
    if mode is Mode.ENFORCE and scope is None:
        raise invalid(
            "scope",
            "ENFORCE needs a scope (user_id, agent_id, session_id) to archive the original under",
            "scope_required",
        )
    request = CompactionRequest(
        messages,
        goal,
        next_action,
        scope=scope,
        protected_message_ids=protected_messages,
        protected_call_ids=protected_calls,
    )
    return CompactCall(
        request=request, config=config, mode=mode, budget_s=budget, format=fmt, original=original
    )


def parse_restore(data: Any) -> RestoreCall:
    """A `RestoreCall` from the JSON body of `POST /v1/restore`; `ApiError` (422) otherwise."""
    body = _object(data, "")
    _check_known(body, frozenset({"scope", "archive_ref", "call_ids"}))
    scope = parse_scope(body, required=True)
    assert scope is not None
    if "archive_ref" not in body:
        raise invalid("archive_ref", "is required", "missing_field")
    try:
        ref = check_ref(body["archive_ref"])
    except ArchiveError as exc:
        raise invalid("archive_ref", str(exc)) from None
    call_ids = _strings(body, "call_ids", non_empty=True)
    if "call_ids" in body and body["call_ids"] is not None and not call_ids:
        raise invalid("call_ids", "must not be empty; leave it out to restore the whole snapshot")
    return RestoreCall(scope=scope, ref=ref, call_ids=call_ids)


def parse_list(data: Any) -> Scope:
    """The scope of a `POST /v1/archive/list` body; `ApiError` (422) otherwise."""
    body = _object(data, "")
    _check_known(body, frozenset({"scope"}))
    scope = parse_scope(body, required=True)
    assert scope is not None
    return scope
