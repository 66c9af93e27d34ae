"""Stage 7: apply the actions to a copy of the history, touching nothing but the chosen blocks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tracetrim._json import canonical_length
from tracetrim._marker import MARKER_KEY, shortened_mark, shortened_note
from tracetrim._snapshot import Block, Message
from tracetrim.compactor._outcome import Action
from tracetrim.compactor._pairs import Pair


def marker(pair: Pair, ref: str, kept: int) -> str:
    """The note left where ``pair``'s result was cut (`tracetrim._marker.shortened_note`)."""
    return shortened_note(pair.tool, pair.call_id, pair.result_chars, kept, ref)


def shortened_text(text: str, pair: Pair, ref: str, head: int, tail: int) -> str:
    """Head, optional tail and the marker."""
    tail = min(tail, max(len(text) - head, 0))
    parts = [text[:head]]
    if tail:
        parts.append(f"\n…\n{text[len(text) - tail :]}")
    parts.append(f"\n{marker(pair, ref, head + tail)}")
    return "".join(parts)


def block_chars(block: Block) -> int:
    """Characters of one block's canonical JSON."""
    return canonical_length(block)


def pair_chars(messages: Sequence[Message], pair: Pair) -> int:
    """Characters of a pair's call and result blocks as they stand in ``messages``."""
    return sum(block_chars(messages[at[0]]["content"][at[1]]) for at in (pair.call_at, pair.result_at) if at)


@attrs.frozen
class Rebuilt:
    """The new history plus, per pair key, the action actually applied and the pair's new size."""

    messages: list[Message]
    applied: dict[str, tuple[Action, str]]
    chars_after: dict[str, int]


def _shortened_block(block: Block, pair: Pair, ref: str, head: int, tail: int) -> Block | None:
    assert pair.result_text is not None
    text = shortened_text(pair.result_text, pair, ref, head, tail)
    if len(text) >= len(pair.result_text):
        return None
    new = dict(block)
    new["output"] = text if isinstance(block["output"], str) else [{"type": "text", "text": text}]
    metadata: dict[str, Any] = dict(block.get("metadata") or {})
    metadata[MARKER_KEY] = shortened_mark(ref, pair.result_chars)
    new["metadata"] = metadata
    return new


def rebuild(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    actions: Mapping[str, tuple[Action, str]],
    *,
    archive_ref: str,
    head_chars: int,
    tail_chars: int,
) -> Rebuilt:
    """A new history with ``actions`` applied; only touched messages and blocks are copied."""
    replaced: dict[tuple[int, int], Block | None] = {}
    applied: dict[str, tuple[Action, str]] = {}
    chars_after: dict[str, int] = {}
    for pair in pairs:
        action, reason = actions.get(pair.key, (Action.KEEP, pair.reason))
        if action is Action.KEEP or pair.call_at is None or pair.result_at is None:
            applied[pair.key] = (Action.KEEP, reason)
            continue
        if action is Action.DROP_CALL:
            replaced[pair.call_at] = replaced[pair.result_at] = None
            applied[pair.key] = (action, reason)
            chars_after[pair.key] = 0
            continue
        i, j = pair.result_at
        new = _shortened_block(messages[i]["content"][j], pair, archive_ref, head_chars, tail_chars)
        if new is None:
            applied[pair.key] = (Action.KEEP, "already_short")
            continue
        replaced[pair.result_at] = new
        applied[pair.key] = (action, reason)
        chars_after[pair.key] = block_chars(
            messages[pair.call_at[0]]["content"][pair.call_at[1]]
        ) + block_chars(new)

    touched: dict[int, list[tuple[int, Block | None]]] = {}
    for (i, j), block in replaced.items():
        touched.setdefault(i, []).append((j, block))
    out: list[Message] = []
    for i, message in enumerate(messages):
        changes = touched.get(i)
        if not changes:
            out.append(message)
            continue
        content: list[Block | None] = list(message["content"])
        for j, block in changes:
            content[j] = block
        kept = [block for block in content if block is not None]
        if kept:
            out.append({**message, "content": kept})
    return Rebuilt(out, applied, chars_after)
