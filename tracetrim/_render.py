"""Plain-text views shared by the planner and the models at the edge (no I/O, no imports from either).

`shorten` keeps the head and tail of a text within a limit; `block_text` is the part of a snapshot
block a model reads. The observation stage, the offload strategy and the summarizer's prompt all use them.
"""

from __future__ import annotations

from tracetrim._json import canonical_json
from tracetrim._snapshot import Block, text_of_output


def shorten(text: str, limit: int | None) -> str:
    """Head and tail of ``text`` within about ``limit`` characters, saying how much was cut."""
    if limit is None or len(text) <= limit:
        return text
    if limit <= 0:
        return f"[{len(text)} chars]"
    head = (limit * 2 + 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}[…{cut} chars…]{text[len(text) - tail :]}" if tail else f"{text[:head]}[…{cut} chars]"
    )


def block_text(block: Block) -> str:
    """The part of a block a model reads: text, thinking, a call's name and input, a result's output."""
    kind = block["type"]
    if kind == "text":
        return str(block["text"])
    if kind == "thinking":
        return str(block["thinking"])
    if kind == "tool_call":
        return f"{block['name']} {block['input']}"
    if kind == "tool_result":
        text = text_of_output(block["output"])
        return text if text is not None else canonical_json(block["output"])
    return canonical_json(block)
