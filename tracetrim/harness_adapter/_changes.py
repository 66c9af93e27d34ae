"""Which tool calls a compaction shortened and which it dropped, read off the two histories."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from tracetrim._marker import mark_of
from tracetrim._snapshot import Message


@attrs.frozen
class Changes:
    """Call ids whose result was shortened, and call ids whose call and result were removed."""

    shortened: frozenset[str]
    dropped: frozenset[str]


def _results(messages: Sequence[Message]) -> dict[str, dict[str, object]]:
    return {
        b["id"]: b
        for m in messages
        for b in m.get("content", ())
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("id"), str)
    }


def _is_marked(block: dict[str, object]) -> bool:
    return mark_of(block) is not None


def diff_tool_blocks(before: Sequence[Message], after: Sequence[Message]) -> Changes:
    """The calls shortened (newly marked) and dropped (result gone) between ``before`` and ``after``."""
    old, new = _results(before), _results(after)
    shortened = {i for i, block in new.items() if _is_marked(block) and i in old and not _is_marked(old[i])}
    dropped = set(old) - set(new)
    return Changes(shortened=frozenset(shortened), dropped=frozenset(dropped))
