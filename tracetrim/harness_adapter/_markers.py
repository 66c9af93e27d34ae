"""Recognising results tracetrim already shortened in formats that cannot carry block metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._marker import MARKER_KEY, mark_of, parse_shortened_note, shortened_mark
from tracetrim._snapshot import Message, text_of_output


def marker_metadata(block: dict[str, Any]) -> dict[str, Any] | None:
    """The ``metadata.tracetrim`` a shortened result block should have, read from its marker text."""
    output = block.get("output")
    text = text_of_output(output) if isinstance(output, (str, list)) else None
    if text is None:
        return None
    note = parse_shortened_note(text)
    if note is None or note.call_id != block.get("id"):
        return None
    return shortened_mark(note.archive_ref, note.original_chars)


def restore_markers(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with the shortened-result metadata put back where a converter lost it.

    Without it a later pass would shorten a result again and an archive search could return the short
    copy instead of the original. Only blocks that change are copied.
    """
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        changed = False
        blocks: list[Any] = []
        for block in content if isinstance(content, list) else ():
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and mark_of(block) is None
                and (meta := marker_metadata(block)) is not None
            ):
                block = {**block, "metadata": {**(block.get("metadata") or {}), MARKER_KEY: meta}}
                changed = True
            blocks.append(block)
        out.append({**message, "content": blocks} if changed else message)
    return out
