"""Converters between neutral messages and Roo Code task histories (``api_conversation_history.json``).

Shape, from Roo Code's task persistence (``src/core/task-persistence``, ``src/core/condense``): the
legacy file is a list of Anthropic messages with Roo's fields beside ``role`` and ``content`` (``ts``,
a response ``id``, ``reasoning_details``, ``reasoning_content``) and Roo's own content blocks
(``reasoning``, ``thoughtSignature``); the versioned file is ``{"version": 2, "messages": [...]}`` of AI
SDK ``ModelMessage``s with the same fields. Either may hold standalone encrypted reasoning items
(``{"type": "reasoning", "encrypted_content", ...}``, no ``role``) sent before the assistant turn they
belong to. Roo's condensing and sliding-window truncation are non-destructive: a summary
(``isSummary``, ``condenseId``) or truncation marker (``isTruncationMarker``, ``truncationId``) is
added, and the messages it replaces are tagged ``condenseParent`` / ``truncationParent`` and no longer
sent (``getEffectiveApiHistory``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._ai_sdk import FORMAT as AI_SDK_FORMAT
from tracetrim.formats._ai_sdk import from_ai_sdk, is_ai_sdk_part, to_ai_sdk
from tracetrim.formats._anthropic import FORMAT as ANTHROPIC_FORMAT
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._carrier import CarrierRun, carried, in_place
from tracetrim.formats._entry_tree import join_bared
from tracetrim.formats._order import order_of, reorder

FORMAT = "roo_code"
VERSION = 2
"""The ``version`` of Roo Code's versioned history file."""
ROO_FIELDS = frozenset(
    {"isSummary", "condenseId", "condenseParent", "truncationId", "truncationParent", "isTruncationMarker"}
)
"""The fields only Roo Code puts on a message: its non-destructive condensing and truncation."""
_ROLES = frozenset({"user", "assistant", "tool"})
_ANTHROPIC = "anthropic"
_AI_SDK = "ai-sdk"


def is_reasoning_item(item: Any) -> bool:
    """Whether ``item`` is a standalone encrypted reasoning item of a Roo Code history (no ``role``)."""
    return isinstance(item, dict) and "role" not in item and common.tag(item.get("type")) == "reasoning"


def is_roo_code_history(items: Sequence[Any], *, versioned: bool = False) -> bool:
    """Whether ``items`` (a file's list, or a versioned file's ``messages``) are a Roo Code history:
    messages and standalone reasoning items only, and something only Roo Code writes (its condense and
    truncation fields, a ``thoughtSignature`` block, or a versioned file's ``ts`` on every message)."""
    if not items or not all(
        isinstance(m, dict) and (common.tag(m.get("role")) in _ROLES or is_reasoning_item(m)) for m in items
    ):
        return False
    if any(not ROO_FIELDS.isdisjoint(m) for m in items):
        return True
    if any(
        isinstance(b, dict) and b.get("type") == "thoughtSignature"
        for m in items
        for b in common.listed(m.get("content"))
    ):
        return True
    return versioned and all("ts" in m for m in items)


def _ids(items: Sequence[dict[str, Any]], flag: str, key: str) -> dict[str, int]:
    """The ids of the summaries (or truncation markers) ``items`` hold, each with where it stands."""
    return {
        m[key]: i
        for i, m in enumerate(items)
        if _truthy(m.get(flag)) and isinstance(m.get(key), str) and m[key]
    }


def _truthy(value: Any) -> bool:
    """JavaScript's truthiness of a JSON value, as Roo Code tests its flags."""
    return value not in (None, False, "", 0)


def hidden(items: Sequence[dict[str, Any]]) -> set[int]:
    """Where the messages Roo Code no longer sends stand: tagged with a summary that is there and
    stands after them, or with a truncation marker that is there."""
    summaries = _ids(items, "isSummary", "condenseId")
    markers = _ids(items, "isTruncationMarker", "truncationId")
    return {
        i
        for i, m in enumerate(items)
        if i < summaries.get(common.tag(m.get("condenseParent")) or "", -1)
        or common.tag(m.get("truncationParent")) in markers
    }


def _dialect(items: Sequence[dict[str, Any]], versioned: bool) -> str:
    if versioned or any(m.get("role") == "tool" for m in items):
        return _AI_SDK
    parts = (p for m in items for p in common.listed(m.get("content")))
    return _AI_SDK if any(is_ai_sdk_part(p) for p in parts) else _ANTHROPIC


def from_roo_code(items: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
    """Convert a Roo Code history to neutral messages.

    What Roo Code sends is judged: every message but those a summary or truncation marker replaced,
    which ride in carriers in place (never judged). Each message sent becomes one neutral message
    through `from_anthropic` (the legacy file) or `from_ai_sdk` (the versioned one, ``fields`` holding
    its ``version``); a standalone reasoning item travels with the assistant turn after it.
    """
    common.require_sequence(items, "a Roo Code history", "message objects")
    for i, item in enumerate(items):
        common.require_dict(item, "a message", message=i)
        if not is_reasoning_item(item) and common.tag(item.get("role")) not in _ROLES:
            raise SnapshotError(
                f"role must be one of {sorted(_ROLES)}, got {item.get('role')!r}", message=i, field="role"
            )
    versioned = (fields or {}).get("version") == VERSION
    dialect = _dialect(items, versioned)
    gone = hidden(items)
    live = [i for i, m in enumerate(items) if i not in gone and not is_reasoning_item(m)]
    read = from_ai_sdk if dialect == _AI_SDK else from_anthropic
    converted = read([items[i] for i in live])
    by_index = dict(zip(live, converted, strict=True))
    position = {i: n for n, i in enumerate(live)}
    run = CarrierRun(FORMAT, {})
    before: list[Any] = []  # reasoning items waiting for the turn they belong to
    for i, item in enumerate(items):
        neutral = by_index.get(i)
        if neutral is None and i not in gone and is_reasoning_item(item):
            before.append(item)
            continue
        if neutral is None or neutral["role"] != "assistant" or item.get("role") != "assistant":
            for value in before:  # a reasoning item no turn follows is sent, and kept, as it is
                run.hold(value)
            before = []
        if neutral is None:
            run.hold(item)
            continue
        meta: dict[str, Any] = {"dialect": dialect, "order": order_of(item), common.POSITION: position[i]}
        if before:
            meta["before"] = before
            before = []
        if any(b["type"] == "tool_call" for b in neutral["content"]):
            meta["called"] = True
        run.add(common.attach_meta(neutral, FORMAT, meta))
    for value in before:
        run.hold(value)
    return run.messages()


def _sends_nothing(message: Message) -> bool:
    """Whether ``message`` carries what Roo Code does not send (a message a summary or marker replaced)."""
    return carried(message, FORMAT, copied=False) is not None


def _position(message: Message) -> int | None:
    return common.position_of(common.format_meta(message, FORMAT))


def _into_summaries(messages: list[Message], role: Callable[[Message], Any]) -> list[Message]:
    """``messages`` with the assistant turn a drop brought up to a summary (its results went) joined to
    the summary, which keeps its place and fields: the messages it replaced name it, and Roo Code sends
    them again once it is gone."""
    out: list[Message] = []
    summary: int | None = None  # where in ``out`` the last summary stands, while only carriers follow it
    for message in messages:
        if _sends_nothing(message):
            out.append(message)
            continue
        if (
            summary is not None
            and role(message) == "assistant"
            and not any(b["type"] in ("tool_call", "tool_result") for b in out[summary]["content"])
            and not (message["content"] and message["content"][0]["type"] == "tool_result")
            and _position(message) != (_position(out[summary]) or 0) + 1
        ):
            out[summary] = {**out[summary], "content": [*out[summary]["content"], *message["content"]]}
            continue
        summary = len(out) if role(message) == "summary" else None
        out.append(message)
    return out


def _written(message: Message, dialect: str, i: int) -> list[Any]:
    """The Roo Code messages ``message`` is written as (one, unless it holds calls and their results)."""
    history = common.ValidatedHistory([message])
    try:
        if dialect == _AI_SDK:
            written: list[Any] = to_ai_sdk(history)["messages"]
        else:
            written = to_anthropic(history)["messages"]
    except SnapshotError as exc:
        raise exc.at_message(i) from None
    return written


def to_roo_code(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a Roo Code history (the inverse of `from_roo_code`).

    Carried messages come back as they were; each other message is written by the converter it was read
    with, its fields in their order, after the reasoning items that came before it. Where a drop took a
    turn's calls, a turn left with reasoning alone goes with its reasoning items, and a turn left with
    text joins the assistant turn Roo Code sends next (Roo Code joins two user turns in a row before it
    sends them, not two assistant turns, which Bedrock Converse and Gemini refuse). A system message,
    which Roo Code keeps out of its history, is refused.
    """
    neutral = [m for m in common.neutral_input(messages) if not common.holds_reasoning_alone(m, FORMAT)]
    dialect = next(
        (str(d) for m in neutral if (d := common.format_meta(m, FORMAT).get("dialect")) is not None),
        _ANTHROPIC,
    )
    inner = AI_SDK_FORMAT if dialect == _AI_SDK else ANTHROPIC_FORMAT

    def role(message: Message) -> Any:
        """The role a message is sent with; a summary's own, as it is never joined away."""
        if _truthy(common.format_meta(message, inner).get("extra", {}).get("isSummary")):
            return "summary"
        return common.format_meta(message, inner).get("role", message["role"])

    neutral = _into_summaries(join_bared(neutral, FORMAT, _sends_nothing, _position, role), role)

    def convert(message: Message, i: int) -> list[Any]:
        if message["role"] == "system":
            raise SnapshotError("a Roo Code history holds no system messages", message=i, field="role")
        meta = common.format_meta(message, FORMAT)
        written = _written(message, dialect, i)
        if written:
            written[0] = reorder(written[0], meta.get("order"))
        return [*common.copied(common.listed(meta.get("before"))), *written]

    return in_place(neutral, FORMAT, convert)
