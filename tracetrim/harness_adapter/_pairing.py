"""The safety check every adapter runs before adopting a history: calls and results stay together."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tracetrim._snapshot import Message


def _tool_ids(messages: Sequence[Message]) -> tuple[Counter[str], Counter[str]]:
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()
    for message in messages:
        for block in message.get("content", ()):
            if isinstance(block, dict) and isinstance(block.get("id"), str):
                if block.get("type") == "tool_call":
                    calls[block["id"]] += 1
                elif block.get("type") == "tool_result":
                    results[block["id"]] += 1
    return calls, results


def pairing_problem(before: Sequence[Message], after: Sequence[Message]) -> str | None:
    """Why ``after`` must not replace ``before``, or None when it may.

    A call and its result leave together or not at all; nothing the original lacked appears; message
    ids keep their order and no id is invented.
    """
    calls_before, results_before = _tool_ids(before)
    calls_after, results_after = _tool_ids(after)
    for call_id in sorted(set(calls_after) | set(results_after)):
        if calls_after[call_id] > calls_before[call_id] or results_after[call_id] > results_before[call_id]:
            return f"tool block {call_id!r} appears in the new history more often than in the original"
    for call_id in sorted(set(calls_before) | set(results_before)):
        kept_call = calls_after[call_id] == calls_before[call_id]
        kept_result = results_after[call_id] == results_before[call_id]
        gone = calls_after[call_id] == 0 and results_after[call_id] == 0
        if not (kept_call and kept_result) and not gone:
            return f"tool call {call_id!r} would lose its call or its result but not both"
        if gone and not (calls_before[call_id] == 1 and results_before[call_id] == 1):
            return f"tool block {call_id!r} was removed although it was not a complete pair"
    ids_before = [m.get("id") for m in before]
    ids_after = [m["id"] for m in after if isinstance(m.get("id"), str)]
    position = {message_id: i for i, message_id in enumerate(ids_before)}
    last = -1
    for message_id in ids_after:
        at = position.get(message_id)
        if at is None or at <= last:
            return f"message id {message_id!r} is new or out of order in the new history"
        last = at
    return None
