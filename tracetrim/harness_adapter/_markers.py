"""Recognising results tracetrim already shortened in formats that cannot carry block metadata."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Message, text_of_output

MARKER_KEY = "tracetrim"

# Mirrors the note written by tracetrim.compactor's rebuild stage; the adapter tests pin the two together.
_MARKER = re.compile(
    r"\[tracetrim: the result of .* call (?P<call_id>\S+) was shortened from (?P<chars>\d+) to \d+ "
    r"characters\. (?:The full result is archived under reference (?P<ref>[0-9a-f]{64});|"
    r"The full result was not archived\.)",
    re.DOTALL,
)


def marker_metadata(block: dict[str, Any]) -> dict[str, Any] | None:
    """The ``metadata.tracetrim`` a shortened result block should have, read from its marker text."""
    output = block.get("output")
    text = text_of_output(output) if isinstance(output, (str, list)) else None
    if text is None:
        return None
    found = None
    for found in _MARKER.finditer(text):  # noqa: B007 - the last marker is the one rebuild appended
        continue
    if found is None or found.group("call_id") != block.get("id") or not text.rstrip().endswith("]"):
        return None
    return {
        "action": "drop_result",
        "archive_ref": found.group("ref") or "",
        "original_chars": int(found.group("chars")),
    }


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
                and not isinstance((block.get("metadata") or {}).get(MARKER_KEY), dict)
                and (meta := marker_metadata(block)) is not None
            ):
                block = {**block, "metadata": {**(block.get("metadata") or {}), MARKER_KEY: meta}}
                changed = True
            blocks.append(block)
        out.append({**message, "content": blocks} if changed else message)
    return out
