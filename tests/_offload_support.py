"""Helpers for the offload tests: an independent oracle for `compact`, summarizers."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetrim._tokens import estimate_tokens
from tracetrim.decision import Summary

REPO = Path(__file__).resolve().parents[1]


def expected_offloads(
    messages: Sequence[dict[str, Any]],
    *,
    limit: int,
    keep_recent: int,
    protected_ids: Sequence[str] = (),
    protected_calls: Sequence[str] = (),
) -> set[str]:
    """Call ids whose results `compact` must shorten, computed from the rules, not from the code."""
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for i, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] in ("tool_call", "tool_result"):
                counts[(block["type"], block["id"])] += 1
                where[(block["type"], block["id"])] = (i, block)
    recent_from = len(messages) - keep_recent
    chosen = set()
    for (kind, call_id), (i, result) in where.items():
        if kind != "tool_result" or counts[(kind, call_id)] != 1 or counts[("tool_call", call_id)] != 1:
            continue
        j, call = where[("tool_call", call_id)]
        output = result["output"]
        if isinstance(output, list):
            if not all(isinstance(b, dict) and b.get("type") == "text" for b in output):
                continue
            output = "\n".join(b["text"] for b in output)
        try:
            is_object = isinstance(json.loads(call["input"]), dict)
        except ValueError:
            is_object = False
        skip = (
            j > i
            or call.get("state") != "finished"
            or result.get("state") != "success"
            or call["name"] != result["name"]
            or not is_object
            or "tracetrim" in (result.get("metadata") or {})
            or call_id in protected_calls
            or any(
                k == 0
                or k >= recent_from
                or messages[k]["role"] == "system"
                or messages[k].get("id") in protected_ids
                for k in (i, j)
            )
        )
        if not skip and estimate_tokens(output) > limit:
            chosen.add(call_id)
    return chosen


def shortened_ids(messages: Sequence[dict[str, Any]]) -> set[str]:
    """Ids of tool results carrying a tracetrim marker."""
    return {
        b["id"]
        for m in messages
        for b in m["content"]
        if b["type"] == "tool_result" and "tracetrim" in (b.get("metadata") or {})
    }


class RecordingSummarizer:
    """A scripted summarizer: records every group it was given; answers with ``answer`` or raises it."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.groups: list[list[dict[str, Any]]] = []

    async def __call__(self, messages: Sequence[dict[str, Any]], *, goal: str = "") -> Summary | str:
        self.groups.append(list(messages))
        if isinstance(self.answer, BaseException):
            raise self.answer
        if self.answer is not None:
            return self.answer  # type: ignore[no-any-return]
        ids = ", ".join(str(m.get("id")) for m in messages)
        return Summary(text=f"Summary of {ids} for goal {goal[:20]!r}.", model="scripted")
