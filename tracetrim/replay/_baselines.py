"""The strategies users pick instead, as their documentation and source define them, edited per request.

Each is stateless, as they are where they run: Anthropic's context editing runs on the server over the
full history the client sends; LangChain's `ContextEditingMiddleware` edits a deep copy of each model
request; the OpenAI Agents SDK's `ToolOutputTrimmer` is a `call_model_input_filter`; observation
masking, as published, masks every step. So each derives every prompt from the run's whole history
(an edited message is made once and reused, so an unchanged prefix stays the same object).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tracetrim._render import block_text
from tracetrim._snapshot import Message, text_of_output
from tracetrim.learn._frontier import MASK_PLACEHOLDER
from tracetrim.learn._sources import Trajectory
from tracetrim.replay._book import MessageBook
from tracetrim.replay._host import HostRule
from tracetrim.replay._protocol import Turn

Slot = tuple[int, int]
"""A block by (message index, block index)."""
Block = dict[str, Any]
"""One content block."""
Edit = Callable[[Block], Block]
"""A block in, its replacement out."""

CLEARED_PLACEHOLDER = "[cleared]"
"""LangChain's `DEFAULT_TOOL_PLACEHOLDER`; Anthropic documents "placeholder text" without giving it, so
the same text stands for both."""


class _Edited:
    """A per-request editor's session: each prompt is the history with some blocks replaced; a message
    edited the same way twice is the same object, so the prompt cache model sees an unchanged prefix."""

    def __init__(self, plan: Callable[[Sequence[Message]], dict[Slot, Edit]]) -> None:
        self._plan = plan
        self._made: dict[tuple[int, tuple[int, ...]], tuple[Message, Message]] = {}

    async def prompt(self, history: Sequence[Message], step: int) -> Turn:
        """The history with the blocks the strategy edits for this request replaced."""
        edits = self._plan(history)
        if not edits:
            return Turn(history)
        by_message: dict[int, dict[int, Edit]] = {}
        for (i, j), edit in edits.items():
            by_message.setdefault(i, {})[j] = edit
        out = list(history)
        for i, blocks in by_message.items():
            original = history[i]
            key = (id(original), tuple(sorted(blocks)))
            made = self._made.get(key)
            if made is None or made[0] is not original:
                content = [blocks[j](b) if j in blocks else b for j, b in enumerate(original["content"])]
                made = (original, {**original, "content": content})
                self._made[key] = made
            out[i] = made[1]
        return Turn(out)


def _results(history: Sequence[Message]) -> list[tuple[Slot, Block]]:
    """Every tool result with a text output, in order."""
    return [
        ((i, j), block)
        for i, message in enumerate(history)
        for j, block in enumerate(message["content"])
        if block.get("type") == "tool_result" and text_of_output(block["output"]) is not None
    ]


def described(line: Callable[[Any], str]) -> Any:
    """An attrs field whose default is ``line`` of the instance: a strategy's ``models``, which names
    the settings it was made with."""
    return attrs.field(default=attrs.Factory(line, takes_self=True))


def _placeholder(text: str) -> Edit:
    return lambda block: {**block, "output": text}


def _cleared(text: str, slots: Callable[[Sequence[Message]], list[Slot]]) -> _Edited:
    """A session whose every prompt has the results at ``slots`` of its history replaced by ``text``."""
    placeholder = _placeholder(text)
    return _Edited(lambda history: dict.fromkeys(slots(history), placeholder))


@attrs.frozen
class NoCompaction:
    """The whole history at every call."""

    name: str = "none"
    models: str = "no compaction: every prompt is the whole history"

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _Edited:
        """A session that never edits."""
        return _Edited(lambda history: {})


@attrs.frozen
class KeepLastN:
    """Observation masking: every tool result but the last ``keep`` replaced by a placeholder, every call."""

    keep: int = 10
    name: str = described(lambda self: f"keep-last-{self.keep}")
    models: str = described(
        lambda self: (
            f"observation masking (Lindenbauer et al., 2025): all but the last {self.keep} tool results "
            f"become '{MASK_PLACEHOLDER}' at every call, calls kept"
        )
    )

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _Edited:
        """A session masking at every call."""

        def masked(history: Sequence[Message]) -> list[Slot]:
            results = _results(history)
            return [slot for slot, _ in results[: max(len(results) - self.keep, 0)]]

        return _cleared(MASK_PLACEHOLDER, masked)


def _calls(history: Sequence[Message]) -> dict[str, str]:
    """Call id -> tool name, for every tool call of the history."""
    return {
        str(block["id"]): str(block.get("name", ""))
        for message in history
        for block in message["content"]
        if block.get("type") == "tool_call"
    }


@attrs.frozen
class AnthropicClearToolUses:
    """Anthropic's server-side ``clear_tool_uses_20250919`` context edit, at its documented defaults.

    Over ``trigger`` input tokens (the whole prompt the client sends, system included), the results of
    every tool use but the last ``keep`` become a placeholder, oldest first; with ``clear_at_least``, an
    edit that would clear fewer tokens than that is not applied. Tool inputs stay (``clear_tool_inputs``
    false), no tool is excluded.
    """

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: frozenset[str] = frozenset()
    name: str = "anthropic clear_tool_uses"
    models: str = described(
        lambda self: (
            f"Anthropic clear_tool_uses_20250919 (docs, context editing): trigger {self.trigger:,} input "
            f"tokens, keep {self.keep} tool uses, clear_at_least {self.clear_at_least or 'none'}, inputs "
            "kept, no tool excluded; server-side, per request"
        )
    )

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _Edited:
        """A session clearing per request, as the API does over the full history it is sent."""

        def cleared(history: Sequence[Message]) -> list[Slot]:
            if book.total(history) <= self.trigger:
                return []
            calls = _calls(history)
            kept = set(list(calls)[-self.keep :]) if self.keep else set()
            slots: list[Slot] = []
            tokens = 0
            for slot, block in _results(history):
                call_id = str(block["id"])
                if call_id in calls and call_id not in kept and calls[call_id] not in self.exclude_tools:
                    slots.append(slot)
                    tokens += book.count(text_of_output(block["output"]) or "")
            return slots if tokens >= self.clear_at_least else []

        return _cleared(CLEARED_PLACEHOLDER, cleared)


def langchain_tokens(history: Sequence[Message]) -> int:
    """LangChain's `count_tokens_approximately` on a history, approximately: per non-system message
    (the middleware counts ``request.messages``, the system prompt apart) its characters and role over 4,
    rounded up, plus 3."""
    total = 0
    for message in history:
        if message["role"] == "system":
            continue
        chars = sum(len(block_text(b)) for b in message["content"]) + len(message["role"])
        total += math.ceil(chars / 4) + 3
    return total


@attrs.frozen
class LangChainClearToolUses:
    """LangChain v1's ``ContextEditingMiddleware()`` with its default ``ClearToolUsesEdit``.

    Over ``trigger`` approximate tokens, every tool result but the last ``keep`` becomes ``[cleared]``,
    oldest first; with ``clear_at_least`` above 0 it stops as soon as that many tokens are reclaimed
    (at 0, the default, it clears them all). Applied to a deep copy of each model request.
    """

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: frozenset[str] = frozenset()
    name: str = "langchain ClearToolUsesEdit"
    models: str = described(
        lambda self: (
            f"LangChain ContextEditingMiddleware + ClearToolUsesEdit (langchain 1.x source): trigger "
            f"{self.trigger:,} approximate tokens, keep {self.keep} results, clear_at_least "
            f"{self.clear_at_least}, placeholder '{CLEARED_PLACEHOLDER}'; per request"
        )
    )

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _Edited:
        """A session editing each request's copy, as the middleware's ``wrap_model_call`` does."""

        def cleared(history: Sequence[Message]) -> list[Slot]:
            before = langchain_tokens(history)
            if before <= self.trigger:
                return []
            calls = _calls(history)
            results = _results(history)
            candidates = results[: -self.keep] if self.keep else results
            if self.keep >= len(results):
                candidates = []
            slots: list[Slot] = []
            reclaimed = 0
            for slot, block in candidates:
                call_id = str(block["id"])
                if call_id not in calls or (block.get("name") or calls[call_id]) in self.exclude_tools:
                    continue
                slots.append(slot)
                if self.clear_at_least > 0:
                    text = text_of_output(block["output"]) or ""
                    reclaimed += math.ceil(len(text) / 4) - math.ceil(len(CLEARED_PLACEHOLDER) / 4)
                    if reclaimed >= self.clear_at_least:
                        break
            return slots

        return _cleared(CLEARED_PLACEHOLDER, cleared)


def _is_user_turn(message: Message) -> bool:
    """A user message that says something (not one holding only tool results)."""
    return message["role"] == "user" and any(b.get("type") != "tool_result" for b in message["content"])


@attrs.frozen
class OpenAIToolOutputTrimmer:
    """The OpenAI Agents SDK's ``ToolOutputTrimmer`` (``agents.extensions``), at its defaults.

    Before every model call, tool outputs older than the ``recent_turns``-th user message from the end
    and longer than ``max_output_chars`` become ``[Trimmed: TOOL output — N chars → P char preview]``
    and their first ``preview_chars`` characters (only when that is shorter). With fewer user messages
    than ``recent_turns`` nothing is old, so nothing is trimmed.
    """

    recent_turns: int = 2
    max_output_chars: int = 500
    preview_chars: int = 200
    name: str = "openai ToolOutputTrimmer"
    models: str = described(
        lambda self: (
            "OpenAI Agents SDK ToolOutputTrimmer (openai-agents source): recent_turns "
            f"{self.recent_turns}, outputs over {self.max_output_chars} chars cut to a "
            f"{self.preview_chars}-char preview, every tool; a call_model_input_filter, per call"
        )
    )

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _Edited:
        """A session trimming each model input."""

        def trim(block: Block) -> Block:
            text = text_of_output(block["output"]) or ""
            name = str(block.get("name") or "unknown_tool")
            summary = (
                f"[Trimmed: {name} output — {len(text)} chars → {self.preview_chars} char preview]\n"
                f"{text[: self.preview_chars]}..."
            )
            return {**block, "output": summary}

        def plan(history: Sequence[Message]) -> dict[Slot, Edit]:
            users = [i for i, message in enumerate(history) if _is_user_turn(message)]
            if len(users) < self.recent_turns:
                return {}
            boundary = users[-self.recent_turns]
            edits: dict[Slot, Edit] = {}
            for slot, block in _results(history):
                if slot[0] >= boundary:
                    break
                text = text_of_output(block["output"]) or ""
                name = str(block.get("name") or "unknown_tool")
                header = f"[Trimmed: {name} output — {len(text)} chars → {self.preview_chars} char preview]\n"
                if len(text) > self.max_output_chars and len(header) + self.preview_chars + 3 < len(text):
                    edits[slot] = trim
            return edits

        return _Edited(plan)
