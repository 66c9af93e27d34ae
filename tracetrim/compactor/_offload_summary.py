"""Summary messages: what replaces a compressed group, and how to put groups back in a history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._json import digest
from tracetrim._snapshot import Message

SUMMARY_ACTION = "summary"
SUMMARY_NAME = "tracetrim"
_MAX_LISTED_CALLS = 20


def summary_message(group: Sequence[Message], text: str, ref: str, tokens: int) -> Message:
    """One assistant text message standing for ``group``: a note naming the archive reference and
    the group's call ids, then the summary. ``metadata.tracetrim`` records the same for tools."""
    ids = [m["id"] for m in group if isinstance(m.get("id"), str)]
    call_ids = [b["id"] for m in group for b in m["content"] if b["type"] == "tool_call"]
    span = "" if not ids else f" ({ids[0]})" if len(ids) == 1 else f" ({ids[0]} to {ids[-1]})"
    where = (
        f"archived under reference {ref}; restore that reference, or recall a tool result by its call id, "
        "instead of running a tool again"
        if ref
        else "not archived"
    )
    calls = ""
    if call_ids:
        more = len(call_ids) - _MAX_LISTED_CALLS
        listed = ", ".join(call_ids[:_MAX_LISTED_CALLS]) + (f" and {more} more" if more > 0 else "")
        calls = f" Tool calls among them: {listed}."
    note = (
        f"[tracetrim: summary of {len(group)} earlier messages{span}, about {tokens:,} tokens, "
        f"which are {where}.{calls}]"
    )
    metadata: dict[str, Any] = {
        "action": SUMMARY_ACTION,
        "archive_ref": ref,
        "messages": len(group),
        "message_ids": ids,
        "call_ids": call_ids,
        "original_tokens": tokens,
    }
    return {
        "id": f"tracetrim-summary-{digest(list(group))[:16]}",
        "role": "assistant",
        "name": SUMMARY_NAME,
        "content": [{"type": "text", "text": f"{note}\n\n{text}"}],
        "metadata": {"tracetrim": metadata},
    }


def summary_ref(message: Message) -> str | None:
    """The archive reference of a summary message (``""`` when it was not archived); None otherwise."""
    metadata = message.get("metadata")
    marker = metadata.get("tracetrim") if isinstance(metadata, dict) else None
    if not isinstance(marker, dict) or marker.get("action") != SUMMARY_ACTION:
        return None
    ref = marker.get("archive_ref")
    return ref if isinstance(ref, str) else ""


def replace_groups(
    messages: Sequence[Message], groups: Sequence[range], replacements: Sequence[Message]
) -> list[Message]:
    """``messages`` with each group (ranges in order, not overlapping) replaced by its message."""
    out: list[Message] = []
    position = 0
    for group, replacement in zip(groups, replacements, strict=True):
        out.extend(messages[position : group.start])
        out.append(replacement)
        position = group.stop
    out.extend(messages[position:])
    return out
