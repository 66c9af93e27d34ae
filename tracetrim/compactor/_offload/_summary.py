"""Summary messages: what replaces a compressed group, and how to put groups back in a history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._json import digest
from tracetrim._marker import MARKER_KEY, summary_mark, summary_note, summary_ref
from tracetrim._snapshot import Message

__all__ = ["replace_groups", "summary_message", "summary_ref"]

SUMMARY_NAME = MARKER_KEY
"""The ``name`` of every summary message: tracetrim wrote it."""


def summary_message(group: Sequence[Message], text: str, ref: str, tokens: int) -> Message:
    """One assistant text message standing for ``group``: a note naming the archive reference and
    the group's call ids, then the summary. ``metadata.tracetrim`` records the same for tools."""
    ids = [m["id"] for m in group if isinstance(m.get("id"), str)]
    call_ids = [b["id"] for m in group for b in m["content"] if b["type"] == "tool_call"]
    note = summary_note(len(group), ids, call_ids, tokens, ref)
    metadata: dict[str, Any] = summary_mark(len(group), ids, call_ids, tokens, ref)
    return {
        "id": f"tracetrim-summary-{digest(list(group))[:16]}",
        "role": "assistant",
        "name": SUMMARY_NAME,
        "content": [{"type": "text", "text": f"{note}\n\n{text}"}],
        "metadata": {MARKER_KEY: metadata},
    }


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
