"""Joining an assistant turn a drop left without its calls to the assistant turn after it."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from tracetrim._snapshot import Message
from tracetrim.formats._common import join_bared


def join_bared_turns(before: Sequence[Message], after: list[Message]) -> list[Message]:
    """``after`` with each assistant message that holds no tool call now joined with the next message
    when that one is an assistant turn too and they did not stand so in ``before`` (`join_bared`)."""
    called = {m["id"] for m in before if any(b.get("type") == "tool_call" for b in m.get("content", ()))}
    neighbours = {(a["id"], b["id"]) for a, b in itertools.pairwise(before)}
    return join_bared(after, called, neighbours)
