"""The bounded JSON state a remote decision model sees, fitted under the state budget in stages."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import attrs

from tracetrim._json import canonical_json
from tracetrim._render import shorten
from tracetrim._tokens import TokenCounter
from tracetrim.decision._failures import Failure, JudgeError
from tracetrim.decision._goal import message_text
from tracetrim.decision._history import ToolPair


@attrs.frozen
class FittingStage:
    """How compact one fitting stage makes the observation; each keeps what the previous one did."""

    name: str
    input_limit: int | None = None
    """Characters kept of each call input (and of each result preview); None keeps them whole."""
    old_text_limit: int | None = None
    """Characters kept of old conversation text; None keeps it whole."""
    omit_old_text: bool = False
    """Leave out old messages that hold only text."""
    merge_protected: bool = False
    """Merge runs of old non-candidate call records into one count per tool."""


STAGES = (
    FittingStage("full"),
    FittingStage("inputs_1000", 1000),
    FittingStage("inputs_200", 200),
    FittingStage("inputs_60", 60),
    FittingStage("old_text_shortened", 60, 200),
    FittingStage("old_text_omitted", 60, 200, omit_old_text=True),
    FittingStage("protected_merged", 60, 200, omit_old_text=True, merge_protected=True),
)
"""Tried in order; the first stage whose observation fits the budget wins."""


class StateOverBudget(JudgeError, ValueError):
    """Even the most compact observation exceeds ``max_state_tokens``."""

    failure: ClassVar[Failure] = Failure.STATE_OVER_BUDGET


@attrs.frozen
class Observation:
    """The state sent with every decision request, its token count and the fitting stage that won."""

    state: dict[str, Any]
    tokens: int
    stage: str


@attrs.frozen
class _Item:
    message: int
    old: bool
    text: str | None = None
    text_only: bool = False
    pair: ToolPair | None = None


def _items(messages: Sequence[Mapping[str, Any]], pairs: Sequence[ToolPair], recent_from: int) -> list[_Item]:
    by_call_message: dict[int, list[ToolPair]] = {}
    for pair in pairs:
        at = pair.call_at or pair.result_at
        if at is not None:
            by_call_message.setdefault(at[0], []).append(pair)
    items: list[_Item] = []
    for i, message in enumerate(messages):
        old = 0 < i < recent_from
        own_pairs = by_call_message.get(i, [])
        if message["role"] != "system":
            text = message_text(message)
            if text:
                has_tools = any(b["type"] in ("tool_call", "tool_result") for b in message["content"])
                items.append(_Item(i, old, text=text, text_only=not has_tools))
        items.extend(_Item(i, old, pair=pair) for pair in own_pairs)
    return items


def _call_record(pair: ToolPair, limit: int | None, preview_chars: int) -> dict[str, Any]:
    key = pair.key if pair.candidate else ("pending" if pair.pending else "protected")
    record: dict[str, Any] = {
        "key": key,
        "call_id": pair.call_id,
        "tool": pair.tool,
        "input": shorten(pair.input, limit),
    }
    result: dict[str, Any] = {"state": pair.result_state or "pending", "chars": pair.result_chars}
    if preview_chars and pair.result_text:
        result["preview"] = shorten(pair.result_text, min(preview_chars, limit or preview_chars))
    record["result"] = result
    return record


def _render(items: Sequence[_Item], stage: FittingStage, preview_chars: int) -> Iterator[dict[str, Any]]:
    merged: dict[str, Any] | None = None
    for item in items:
        if item.pair is not None:
            if stage.merge_protected and item.old and not item.pair.candidate:
                if merged is None:
                    merged = {"message": item.message, "merged_protected_calls": 0, "tools": {}}
                merged["merged_protected_calls"] += 1
                merged["tools"][item.pair.tool] = merged["tools"].get(item.pair.tool, 0) + 1
                continue
            if merged is not None:
                yield merged
                merged = None
            yield {"message": item.message, "call": _call_record(item.pair, stage.input_limit, preview_chars)}
            continue
        assert item.text is not None
        if item.old and stage.omit_old_text and item.text_only:
            continue
        if merged is not None:
            yield merged
            merged = None
        text = shorten(item.text, stage.old_text_limit) if item.old else item.text
        yield {"message": item.message, "text": text}
    if merged is not None:
        yield merged


def observe(
    messages: Sequence[Mapping[str, Any]],
    pairs: Sequence[ToolPair],
    *,
    goal: str,
    next_action: str,
    preserve_recent: int,
    preview_chars: int,
    max_tokens: int,
    count_tokens: TokenCounter,
) -> Observation:
    """The most complete observation that fits ``max_tokens``; raise `StateOverBudget` if none does."""
    items = _items(messages, pairs, len(messages) - preserve_recent)
    roles = {item.message: messages[item.message]["role"] for item in items if item.text is not None}
    tokens = 0
    for stage in STAGES:
        history = list(_render(items, stage, preview_chars))
        for entry in history:
            if "text" in entry:
                entry["role"] = roles[entry["message"]]
        state = {"goal": goal, "next_action": next_action, "messages": len(messages), "history": history}
        tokens = count_tokens(canonical_json(state))
        if tokens <= max_tokens:
            return Observation(state, tokens, stage.name)
    raise StateOverBudget(
        f"the observation needs {tokens:,} tokens even at its most compact; "
        f"max_state_tokens is {max_tokens:,}"
    )
