"""Stage 2: match tool calls with their results and decide which pairs a model may judge."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._json import canonical_length, strict_loads, text_nesting_exceeds
from tracetrim._marker import MARKER_PREFIX, has_mark, parse_shortened_note
from tracetrim._snapshot import Block, Message, text_of_output

PIN_KEYS = ("tracetrim.pinned", "jev.context.pinned")


@attrs.frozen
class Pair:
    """One tool-call id with where its call and result sit; ``reason`` says why it is not a candidate."""

    key: str
    call_id: str
    tool: str
    call_at: tuple[int, int] | None
    result_at: tuple[int, int] | None
    reason: str = ""
    input: str = ""
    result_state: str = ""
    result_text: str | None = None
    result_chars: int = 0

    @property
    def candidate(self) -> bool:
        """True when a model may decide this pair's fate."""
        return not self.reason

    @property
    def pending(self) -> bool:
        """True for a call still waiting for (or producing) its result."""
        return self.result_at is None or self.result_state == "running"


def _pinned(metadata: Any) -> bool:
    if not isinstance(metadata, Mapping):
        return False
    for dotted in PIN_KEYS:
        if metadata.get(dotted) is True:
            return True
        node: Any = metadata
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is True:
            return True
    return False


def protected_messages(
    messages: Sequence[Message],
    *,
    preserve_recent: int,
    protected_ids: Collection[str],
    pinned_ids: Collection[str],
) -> dict[int, str]:
    """Message index to the rule that protects it; unprotected messages are absent."""
    protected: dict[int, str] = {}
    recent_from = len(messages) - preserve_recent
    for i, message in enumerate(messages):
        message_id = message.get("id")
        if i == 0:
            protected[i] = "first_message"
        elif message["role"] == "system":
            protected[i] = "system_message"
        elif i >= recent_from:
            protected[i] = "recent_message"
        elif message_id in protected_ids:
            protected[i] = "protected_message"
        elif message_id in pinned_ids or _pinned(message.get("metadata")):
            protected[i] = "pinned_message"
    return protected


def _input_problem(text: str) -> str:
    """Why a call's input is not a JSON object the planner may judge, or "" when it is one."""
    # Checked before decoding: json's decoder recurses in C and would raise RecursionError.
    if text_nesting_exceeds(text):
        return "input_too_deep"
    try:
        value = strict_loads(text)
    except ValueError:
        return "input_not_json_object"
    return "" if isinstance(value, dict) else "input_not_json_object"


def _guard(
    call: Block, result: Block, call_at: tuple[int, int], result_at: tuple[int, int], result_text: str | None
) -> str:
    if result_at <= call_at:
        return "result_before_call"
    if call.get("state") != "finished":
        return "call_not_finished"
    if result.get("state") != "success":
        return "result_not_success"
    if result["name"] != call["name"]:
        return "name_mismatch"
    input_problem = _input_problem(call["input"])
    if input_problem:
        return input_problem
    if result_text is None:
        return "non_text_output"
    # The note counts too: formats without block metadata (OpenAI chat) carry only the text. Only a
    # note that ends the result: one quoting the prefix (a page about tracetrim) is not shortened.
    if has_mark(result) or (MARKER_PREFIX in result_text and parse_shortened_note(result_text) is not None):
        return "already_shortened"
    return ""


TOOL_NOT_ELIGIBLE = "tool_not_eligible"
"""The reason a pair of a tool the host did not opt in (``eligible_tools``) is kept."""


def find_pairs(
    messages: Sequence[Message],
    *,
    eligible_tools: Collection[str],
    protected: Mapping[int, str],
    protected_call_ids: Collection[str],
) -> list[Pair]:
    """Every tool-call id in order of first appearance, keyed ``t1, t2, ...``, with its verdict."""
    # The first call and the first result of each id; most ids have one of each, so no list is made.
    calls: dict[str, tuple[int, int]] = {}
    results: dict[str, tuple[int, int]] = {}
    duplicated: set[str] = set()
    order: dict[str, None] = {}
    for i, message in enumerate(messages):
        for j, block in enumerate(message["content"]):
            kind = block["type"]
            if kind == "tool_call":
                table = calls
            elif kind == "tool_result":
                table = results
            else:
                continue
            call_id = block["id"]
            if call_id in table:
                duplicated.add(call_id)
            else:
                table[call_id] = (i, j)
            order.setdefault(call_id, None)

    pairs: list[Pair] = []
    for n, call_id in enumerate(order, start=1):
        key = f"t{n}"
        call_at, result_at = calls.get(call_id), results.get(call_id)
        if call_id in duplicated:
            first = call_at or result_at
            assert first is not None
            tool = messages[first[0]]["content"][first[1]]["name"]
            pairs.append(Pair(key, call_id, tool, call_at, result_at, reason="duplicate_id"))
            continue
        if result_at is None:
            assert call_at is not None
            i, j = call_at
            call = messages[i]["content"][j]
            pairs.append(
                Pair(key, call_id, call["name"], (i, j), None, reason="no_result", input=call["input"])
            )
            continue
        result = messages[result_at[0]]["content"][result_at[1]]
        result_text = text_of_output(result["output"])
        state = str(result.get("state", ""))
        chars = len(result_text) if result_text is not None else canonical_length(result["output"])
        if call_at is None:
            pairs.append(
                Pair(
                    key,
                    call_id,
                    result["name"],
                    None,
                    result_at,
                    reason="no_call",
                    result_state=state,
                    result_chars=chars,
                )
            )
            continue
        call = messages[call_at[0]]["content"][call_at[1]]
        reason = (
            _guard(call, result, call_at, result_at, result_text)
            or ("" if call["name"] in eligible_tools else TOOL_NOT_ELIGIBLE)
            or protected.get(call_at[0], "")
            or protected.get(result_at[0], "")
            or ("protected_call" if call_id in protected_call_ids else "")
        )
        pairs.append(
            Pair(
                key,
                call_id,
                call["name"],
                call_at,
                result_at,
                reason=reason,
                input=call["input"],
                result_state=state,
                result_text=result_text,
                result_chars=chars,
            )
        )
    return pairs
