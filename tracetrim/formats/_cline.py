"""Converters between neutral messages and Cline task histories (``api_conversation_history.json``).

Shape, from Cline's task storage (``src/core/storage/disk.ts``, ``src/shared/messages/content.ts``): a list
of Anthropic messages, Cline's fields beside ``role`` and ``content`` (``modelInfo``, ``metrics``, ``ts``,
a response ``id``). Cline names the messages of this file by their index elsewhere: the truncation range
it no longer sends (``conversationHistoryDeletedRange``, kept with the task and in ``ui_messages.json``),
each UI message's ``conversationHistoryIndex`` (checkpoints restore to it) and the text edits of
``context_history.json`` (by message and block index). So every message and every block keeps its
place: a drop keeps the call and leaves a stub result (`tracetrim._marker.FIXED_CALL_KEY`), and the
writer refuses a history whose messages or blocks moved. Calls Cline's model wrote as XML in its text
are read as calls too (`tracetrim.formats._cline_text_tools`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._marker import fixed_call_metadata
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._ai_sdk import is_ai_sdk_part
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
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


def from_cline(items: Sequence[Any]) -> list[Message]:
    """Convert a Cline task history to neutral messages: each message through `from_anthropic`, where it
    stood and how many blocks it held recorded, every tool call marked to keep its place; calls in the
    assistant's text (Cline's text protocol) become calls too (`read_text_tools`)."""
    common.require_sequence(items, "a Cline history", "message objects")
    out = from_anthropic(items)
    for i, (item, neutral) in enumerate(zip(items, out, strict=True)):
        for block in neutral["content"]:
            if block["type"] == "tool_call":
                block["metadata"] = {**(block.get("metadata") or {}), **fixed_call_metadata()}
        meta: dict[str, Any] = {common.POSITION: i, "order": order_of(item)}
        if isinstance(item.get("content"), list):
            meta[_BLOCKS] = len(item["content"])
        common.attach_meta(neutral, FORMAT, meta)
    read_text_tools(out)
    return out


def _check_places(neutral: Sequence[Message]) -> None:
    """Refuse a history read from a Cline file whose messages or blocks no longer stand where they did
    (a summary in place of several messages, say): Cline would read the wrong messages by index."""
    metas = [common.format_meta(m, FORMAT) for m in neutral]
    positions = [common.position_of(meta) for meta in metas]
    if all(p is None for p in positions):
        return  # a history from elsewhere, written as a new Cline file: nothing indexes it yet
    for i, (message, meta, position) in enumerate(zip(neutral, metas, positions, strict=True)):
        if position != i:
            where = "was not in the file read" if position is None else f"stood at {position}"
            raise SnapshotError(
                "a Cline history keeps every message in its place (Cline names them by index: its "
                f"truncation range, checkpoints and context edits); this message {where}",
                message=i,
            )
        blocks = meta.get(_BLOCKS)
        if blocks is not None and blocks != len(message["content"]):
            raise SnapshotError(
                f"a Cline history keeps every block in its place; this message held {blocks} blocks, "
                f"now {len(message['content'])}",
                message=i,
                field="content",
            )


def to_cline(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a Cline task history (the inverse of `from_cline`): each message
    through `to_anthropic`, its fields in their order. A system message, which Cline keeps out of its
    history, is refused, as is a history read from a Cline file whose messages or blocks moved."""
    neutral = [write_text_tools(m) for m in common.neutral_input(messages)]
    for i, message in enumerate(neutral):
        if message["role"] == "system":
            raise SnapshotError("a Cline history holds no system messages", message=i, field="role")
    _check_places(neutral)
    out: list[Any] = []
    for i, message in enumerate(neutral):
        meta = common.format_meta(message, FORMAT)
        try:
            written: list[Any] = to_anthropic(common.ValidatedHistory([message]))["messages"]
        except SnapshotError as exc:
            raise SnapshotError(exc.problem, message=i, block=exc.block_index, field=exc.field) from None
        if len(written) != 1 and common.position_of(meta) is not None:
            raise SnapshotError(
                "a Cline history keeps every message in its place; this message now holds a user and "
                "an assistant turn",
                message=i,
            )
        written[0] = reorder(written[0], meta.get("order"))
        out.extend(written)
    return out
