"""Converters between neutral messages and Kimi CLI context files (``~/.kimi/sessions/*/*/context.jsonl``).

Shape, from Kimi CLI's ``kimi_cli.soul.context.Context`` and kosong's ``Message``: one JSON object a line.
Messages are kosong ``Message`` dumps (``model_dump_json(exclude_none=True)``): OpenAI-chat-like, with
``role``, ``content`` (a string, or parts such as ``{"type": "think", "think", "encrypted"}``),
``tool_calls`` and ``tool_call_id``. Kimi's own records sit between them: ``_system_prompt`` (first),
``_checkpoint`` (``id``, where ``/undo`` and D-Mail revert to) and ``_usage`` (``token_count``, the
context's size the API reported, which Kimi compares with its window to decide on its own compaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Message
from tracetrim._tokens import estimate_tokens, message_tokens
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._shape import JsonLines

FORMAT = "kimi_cli"
RECORDS = frozenset({"_system_prompt", "_checkpoint", "_usage"})
"""The roles of Kimi CLI's own records, which no provider's messages have."""
_FIELDS = ("role", "name", "content", "tool_calls", "tool_call_id", "partial")
"""kosong's ``Message`` fields, in the order its dump writes them."""
_CALL_FIELDS = ("type", "id", "function", "extras")
_BEFORE = "before"


def is_kimi_cli_context(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a Kimi CLI context file: objects with a string ``role``, one of them a record
    only Kimi CLI writes (``_system_prompt``, ``_checkpoint``, ``_usage``)."""
    roles = [common.tag(line.get("role")) if isinstance(line, dict) else None for line in lines]
    return None not in roles and any(role in RECORDS for role in roles)


def _is_record(line: dict[str, Any]) -> bool:
    role = line.get("role")
    return isinstance(role, str) and role.startswith("_")


def from_kimi_cli(lines: Sequence[Any]) -> list[Message]:
    """Convert the lines of a Kimi CLI context file to neutral messages.

    Kimi's records (every role starting with ``_``) ride in carriers in place, never judged; the
    messages go through `from_openai_chat`, one neutral message each. Each carrier notes the tokens of
    the messages before it, so a ``_usage`` record can be brought down by what a plan removed.
    """
    common.require_sequence(lines, "a Kimi CLI context", "lines")
    for i, line in enumerate(lines):
        common.require_dict(line, "a context line", message=i)
    live = [i for i, line in enumerate(lines) if not _is_record(line)]
    converted = from_openai_chat([lines[i] for i in live])
    by_index = dict(zip(live, converted, strict=True))
    run = CarrierRun(FORMAT, {})
    for i, line in enumerate(lines):
        neutral = by_index.get(i)
        if neutral is None:
            run.hold(line)
            continue
        if neutral["role"] == "assistant" and any(b["type"] == "tool_call" for b in neutral["content"]):
            common.attach_meta(neutral, FORMAT, {"called": True})
        run.add(neutral)
    return _tokens_before(run.messages())


def _tokens_before(messages: list[Message]) -> list[Message]:
    """``messages`` with each carrier noting the estimated tokens of the messages before it; in place."""
    total = 0
    for message in messages:
        if carried(message, FORMAT, copied=False) is not None:
            common.format_meta(message, FORMAT)[_BEFORE] = total
        else:
            total += message_tokens(message, estimate_tokens)
    return messages


def _usage(line: Any, removed: int) -> Any:
    """A ``_usage`` record brought down by ``removed`` tokens (Kimi measures again on its next call)."""
    if removed <= 0 or not isinstance(line, dict) or line.get("role") != "_usage":
        return line
    count = line.get("token_count")
    if not isinstance(count, int) or isinstance(count, bool):
        return line
    return {**line, "token_count": max(0, count - removed)}


def _kimi_order(message: dict[str, Any]) -> dict[str, Any]:
    """A written message with its keys in the order kosong dumps them (a tool call's too)."""
    out = {k: message[k] for k in _FIELDS if k in message}
    out.update({k: v for k, v in message.items() if k not in out})
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [
            {**{k: c[k] for k in _CALL_FIELDS if k in c}, **c} if isinstance(c, dict) else c for c in calls
        ]
    return out


def to_kimi_cli(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a Kimi CLI context file (the inverse of `from_kimi_cli`).

    Carried records come back where they were; the messages between two records are written by
    `to_openai_chat` together. A turn that held calls and a drop left with no call and no text goes with
    its thinking. A ``_usage`` record after messages a plan shortened or removed counts that many
    estimated tokens fewer, or Kimi would take the context for as full as before and compact it again.
    """
    neutral = [m for m in common.neutral_input(messages) if not common.holds_reasoning_alone(m, FORMAT)]
    out: list[Any] = []
    segment: list[Message] = []
    total = 0  # tokens of the messages written so far

    def flush() -> None:
        if segment:
            written = to_openai_chat(common.ValidatedHistory(segment))
            out.extend(_kimi_order(m) for m in written)
            segment.clear()

    for message in neutral:
        value = carried(message, FORMAT)
        if value is None:
            segment.append(message)
            total += message_tokens(message, estimate_tokens)
            continue
        flush()
        before = common.format_meta(message, FORMAT).get(_BEFORE)
        removed = before - total if isinstance(before, int) else 0
        out.extend(_usage(common.copied(line), removed) for line in value)
    flush()
    return JsonLines(out)
