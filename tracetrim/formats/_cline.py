"""Converters between neutral messages and Cline task histories (``api_conversation_history.json``).

Shape, from Cline's task storage (``src/core/storage/disk.ts``, ``src/shared/messages/content.ts``): a list
of Anthropic messages, Cline's fields beside ``role`` and ``content`` (``modelInfo``, ``metrics``, ``ts``,
a response ``id``). Cline names the messages of this file by their index elsewhere: the truncation range
it no longer sends (``conversationHistoryDeletedRange``, kept with the task and in ``ui_messages.json``),
each UI message's ``conversationHistoryIndex`` (checkpoints restore to it) and the text edits of
``context_history.json`` (by message and block index). So every message and every block keeps its
place: a drop keeps the call and leaves a stub result (`tracetrim._marker.FIXED_CALL_KEY`), and the
writer refuses a history whose messages or blocks moved. The messages the truncation range hides
(given as the reader's ``conversationHistoryDeletedRange`` field; ``tracetrim compact`` reads it from
the ``ui_messages.json`` beside the file) are kept in place, not judged. Calls Cline's model wrote as XML
in its text are read as calls too (`tracetrim.formats._cline_text_tools`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._marker import fixed_call_metadata
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._ai_sdk import is_ai_sdk_part
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._carrier import carried, in_place, interleaved
from tracetrim.formats._cline_text_tools import read_text_tools, write_text_tools
from tracetrim.formats._order import order_of, reorder

FORMAT = "cline"
CLINE_FIELDS = frozenset({"modelInfo", "metrics"})
"""The fields only Cline puts on a message of its history: the model that wrote it and what it cost."""
OBSERVING_TOOLS = (
    "read_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "execute_command",
    "write_to_file",
    "replace_in_file",
    "browser_action",
    "web_fetch",
    "use_mcp_tool",
    "access_mcp_resource",
)
"""Cline's tools whose results are what the agent saw of the world (a file, a search, a command's output,
the file an edit saved), eligible when nothing names any; not the ones whose results carry the user's
own words (``ask_followup_question``, ``attempt_completion``, ``plan_mode_respond``)."""
DELETED_RANGE = "conversationHistoryDeletedRange"
"""The field (of the task, and of each UI message) naming the messages Cline no longer sends: the
inclusive range ``[2, end]`` (its start is always 2: the first user-assistant pair is always sent)."""
_ENVIRONMENT = "<environment_details>"
_BLOCKS = "blocks"


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    blocks = common.listed(content)
    return [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]


def is_cline_history(items: Sequence[Any]) -> bool:
    """Whether ``items`` are a Cline task history: Anthropic messages only (``role`` user or assistant, no
    chat-completions ``tool_calls`` or AI SDK parts) and something Cline writes: its ``modelInfo`` or
    ``metrics`` fields, or the ``<environment_details>`` it sends in every user turn."""
    if not items or not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in items):
        return False
    if any(
        "tool_calls" in m or any(is_ai_sdk_part(b) for b in common.listed(m.get("content"))) for m in items
    ):
        return False  # chat-completions or AI SDK messages, which Cline's file never holds
    if any(not CLINE_FIELDS.isdisjoint(m) for m in items):
        return True
    return any(
        text.lstrip().startswith(_ENVIRONMENT) for m in items if m["role"] == "user" for text in _texts(m)
    )


def deleted_range(ui_messages: Any) -> list[int] | None:
    """The truncation range in force for a task, from its ``ui_messages.json``: the last UI message's
    ``conversationHistoryDeletedRange`` (each takes the task's range when it is written), or None."""
    for message in reversed(common.listed(ui_messages)):
        if isinstance(message, dict) and DELETED_RANGE in message:
            found = message[DELETED_RANGE]
            return list(found) if isinstance(found, list) else None
    return None


def _hidden_end(fields: Mapping[str, Any] | None) -> int:
    """The last index the truncation range in ``fields`` hides (1 when it hides nothing)."""
    found = (fields or {}).get(DELETED_RANGE)
    if found is None:
        return 1
    if not (
        isinstance(found, (list, tuple))
        and len(found) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in found)
    ):
        shown = repr(found)[:80]  # what a hostile file holds there may be long
        raise SnapshotError(f"must be two message indexes [start, end], got {shown}", field=DELETED_RANGE)
    end: int = found[1]
    return max(end, 1)


def from_cline(items: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
    """Convert a Cline task history to neutral messages: each message Cline sends through
    `from_anthropic`, where it stood and how many blocks it held recorded, every tool call marked to keep
    its place; calls in the assistant's text (Cline's text protocol) become calls too
    (`read_text_tools`). The messages ``fields``' truncation range hides (``[2, end]``, as Cline's
    `getTruncatedMessages` leaves them out) ride in carriers in place, never judged."""
    common.require_sequence(items, "a Cline history", "message objects")
    end = _hidden_end(fields)
    if end > 1:  # the turns Cline sends: the first pair, then those after the range
        runs = [range(0, min(2, len(items))), range(min(end + 1, len(items)), len(items))]
    else:
        runs = [range(len(items))]
    indexes = [i for stretch in runs for i in stretch]
    try:
        converted = from_anthropic([items[i] for i in indexes])
    except SnapshotError as exc:  # named where it stands in the file
        at = None if exc.message_index is None else indexes[exc.message_index]
        raise exc.at_message(at) from None
    live = dict(zip(indexes, converted, strict=True))
    for i, neutral in live.items():
        item = items[i]
        for block in neutral["content"]:
            if block["type"] == "tool_call":
                block["metadata"] = {**(block.get("metadata") or {}), **fixed_call_metadata()}
        meta: dict[str, Any] = {common.POSITION: i, "order": order_of(item)}
        if isinstance(item.get("content"), list):
            meta[_BLOCKS] = len(item["content"])
        common.attach_meta(neutral, FORMAT, meta)
    for stretch in runs:  # a call in the assistant's text is answered in the turn right after it
        turns = [live[i] for i in stretch]
        read_text_tools(turns, stretch.start)
        live.update(zip(stretch, turns, strict=True))
    return interleaved(FORMAT, items, live)


def _place_problem(message: Message, at: int) -> tuple[str, str | None] | None:
    """Why ``message``, about to be written at index ``at`` of a file read from Cline's, is not where it
    stood (or holds another number of blocks), and the field to name; None when it is."""
    meta = common.format_meta(message, FORMAT)
    position = common.position_of(meta)
    if position != at:
        where = "was not in the file read" if position is None else f"stood at {position}"
        return (
            "a Cline history keeps every message in its place (Cline names them by index: its truncation "
            f"range, checkpoints and context edits); this message {where}",
            None,
        )
    blocks = meta.get(_BLOCKS)
    if blocks is not None and blocks != len(message["content"]):
        now = len(message["content"])
        return (
            f"a Cline history keeps every block in its place; this message held {blocks} blocks, now {now}",
            "content",
        )
    return None


def to_cline(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a Cline task history (the inverse of `from_cline`): the messages
    the truncation range hid where they stood, each other message through `to_anthropic`, its fields in
    their order. A system message, which Cline keeps out of its history, is refused, as is a history
    read from a Cline file whose messages or blocks moved."""
    neutral = [write_text_tools(m) for m in common.neutral_input(messages)]
    read = any(common.position_of(common.format_meta(m, FORMAT)) is not None for m in neutral)
    written_at: dict[int, int] = {}  # where each message (not a carrier) goes in the file
    at = 0
    for i, message in enumerate(neutral):
        hidden = carried(message, FORMAT, copied=False)
        written_at[i] = at
        at += 1 if hidden is None else len(hidden)

    def convert(message: Message, i: int) -> list[Any]:
        if message["role"] == "system":
            raise SnapshotError("a Cline history holds no system messages", message=i, field="role")
        problem = _place_problem(message, written_at[i]) if read else None
        if problem is not None:
            raise SnapshotError(problem[0], message=i, field=problem[1])
        try:
            written: list[Any] = to_anthropic(common.ValidatedHistory([message]))["messages"]
        except SnapshotError as exc:
            raise exc.at_message(i) from None
        if len(written) != 1 and read:
            raise SnapshotError(
                "a Cline history keeps every message in its place; this message now holds a user and "
                "an assistant turn",
                message=i,
            )
        written[0] = reorder(written[0], common.format_meta(message, FORMAT).get("order"))
        return written

    return in_place(neutral, FORMAT, convert)
