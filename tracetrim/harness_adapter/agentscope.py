"""AgentScope 2.x: a middleware that compacts ``agent.state.context`` in ``on_compress_context``."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Unpack

from agentscope.agent import Agent
from agentscope.message import Msg
from agentscope.middleware import MiddlewareBase

from tracetrim._json import strict_loads
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim.harness_adapter._changes import Changes, diff_tool_blocks
from tracetrim.harness_adapter._read_only import read_only_tools
from tracetrim.harness_adapter._run import AdapterResult
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["TracetrimMiddleware"]

DEFAULT_READ_TOOLS: Mapping[str, str] = {"Read": "file_path"}
"""AgentScope's built-in Read tool caches files by the ``file_path`` of its input."""

MAX_ARCHIVE_ENTRIES = 100


def _unfinished_calls(messages: Sequence[Message]) -> set[str]:
    """Calls not finished, or with no result yet: asking, submitted, running or pending."""
    results = {b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_result"}
    return {
        b["id"]
        for m in messages
        for b in m["content"]
        if isinstance(b, dict)
        and b.get("type") == "tool_call"
        and (b.get("state") != "finished" or b["id"] not in results)
    }


class TracetrimMiddleware(WindowedAdapter, MiddlewareBase):
    """Compacts an AgentScope agent's context with a `CompactionStrategy` before the built-in step.

    On each ``on_compress_context`` it snapshots ``agent.state.context`` as neutral messages, plans with
    the strategy (in the strategy's mode), checks that every call keeps its result, and, when a new
    history is adopted (ENFORCE, archived first by the `Compactor`), swaps it in with one assignment. The
    last message (the running reply) and every unfinished, asking or submitted call are protected. Read
    caches of files whose Read result was shortened or dropped are evicted, so the Read tool does not
    answer "unchanged" about content the model no longer sees. What was archived is recorded in
    ``agent.state.middle_context[<middleware key>]``. ``next_handler`` always runs afterwards, so the
    built-in summarising step still fires when the context is still over its threshold.

    ``scope`` defaults to ``Scope("agentscope", agent.name, agent.state.session_id)``.

    The budget (`WindowedAdapter`): AgentScope knows every model's context window
    (``agent.model.context_size``), so by default ``trigger_tokens`` is 60% of it and ``target_tokens``
    40%, below AgentScope's own compression (``trigger_ratio``, 0.8 by default). Below the trigger
    (estimated tokens of the context's JSON) the strategy is not asked; a `Compactor` without a budget
    of its own compacts down to the target. ``context_window`` overrides the model's; explicit numbers
    override both; None plans on every step with the strategy's own rules.

    ``eligible_read_only=True`` also opts in, on each step, the tools of ``agent.toolkit`` that the history
    calls and that declare ``is_read_only`` (AgentScope's ``Read``, ``Grep``, ``Glob``; MCP tools with
    ``readOnlyHint``).
    """

    def __init__(
        self,
        strategy: CompactionStrategy,
        *,
        read_tools: Mapping[str, str] = DEFAULT_READ_TOOLS,
        **options: Unpack[WindowOptions],
    ) -> None:
        super().__init__(strategy, **options)
        self.read_tools = dict(read_tools)

    async def on_compress_context(
        self,
        agent: Agent,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[None]],
    ) -> None:
        """Compact the context, then hand over to the next middleware or the built-in compression."""
        await self.compact_agent(agent)
        await next_handler()

    def scope_for(self, agent: Agent) -> Scope:
        """The archive scope of ``agent``'s history."""
        return self.scope or Scope("agentscope", agent.name, agent.state.session_id)

    async def compact_agent(self, agent: Agent) -> AdapterResult:
        """Compact ``agent.state.context`` now; returns what happened (``messages`` None: unchanged)."""
        context = list(agent.state.context)
        if len(context) < 2:
            return AdapterResult(None)
        neutral: list[Message] = [msg.model_dump(mode="json") for msg in context]
        read_only = await _toolkit_read_only(agent, neutral) if self.eligible_read_only else frozenset()
        result = await self.compact_neutral(
            neutral,
            scope=self.scope_for(agent),
            protected_message_ids=[neutral[-1]["id"]],
            protected_call_ids=sorted(_unfinished_calls(neutral)),
            context_window=getattr(getattr(agent, "model", None), "context_size", None),
            private=True,
            read_only=read_only,
        )
        if result.planned:
            await self._remember(agent, result, None)
        if result.messages is None:
            return result
        if [id(m) for m in agent.state.context] != [id(m) for m in context]:
            # The context moved on while we planned; adopting now would lose what was appended.
            return AdapterResult(None, result.outcome, result.archive_ref, planned=True)
        changes = diff_tool_blocks(neutral, result.messages)
        new_context = _rebuild(context, neutral, result.messages)
        self._evict_read_cache(agent, neutral, changes)
        agent.state.context = new_context
        await self._remember(agent, result, changes)
        return result

    def _evict_read_cache(self, agent: Agent, neutral: Sequence[Message], changes: Changes) -> None:
        touched = changes.shortened | changes.dropped
        paths: set[str] = set()
        for message in neutral:
            for block in message["content"]:
                if block.get("type") != "tool_call" or block.get("id") not in touched:
                    continue
                key = self.read_tools.get(block.get("name", ""))
                if key is None:
                    continue
                try:
                    value = strict_loads(block["input"]).get(key)
                except (ValueError, AttributeError):
                    continue
                if isinstance(value, str):
                    paths.add(value)
        if paths:
            cache = agent.state.tool_context
            cache.read_file_cache = [e for e in cache.read_file_cache if e.file_path not in paths]

    async def _remember(self, agent: Agent, result: AdapterResult, changes: Changes | None) -> None:
        key = await self.get_middleware_key()
        mine = dict(agent.state.middle_context.get(key) or {})
        outcome = result.outcome
        mine["last"] = {
            "at": time.time(),
            "status": outcome.status.value if outcome else ("ADOPTED" if result.messages else "UNCHANGED"),
            "reason": outcome.reason if outcome else "",
        }
        if changes is not None and result.archive_ref:
            entries = [
                *mine.get("archives", []),
                {
                    "archive_ref": result.archive_ref,
                    "at": time.time(),
                    "shortened": sorted(changes.shortened),
                    "dropped": sorted(changes.dropped),
                },
            ]
            mine["archives"] = entries[-MAX_ARCHIVE_ENTRIES:]
        agent.state.middle_context = {**agent.state.middle_context, key: mine}


async def _toolkit_read_only(agent: Agent, messages: Sequence[Message]) -> frozenset[str]:
    """The tools ``messages`` call that ``agent.toolkit`` holds and that declare themselves read-only."""
    called = {b["name"] for m in messages for b in m["content"] if b.get("type") == "tool_call"}
    tools = [await agent.toolkit.get_tool(name) for name in sorted(called)]
    return read_only_tools(tool for tool in tools if tool is not None)


def _rebuild(context: Sequence[Msg], before: Sequence[Message], after: Sequence[Message]) -> list[Msg]:
    """The new context: untouched messages are the host's own objects; changed ones are re-validated."""
    originals = {m["id"]: (msg, m) for msg, m in zip(context, before, strict=True)}
    out: list[Msg] = []
    for message in after:
        original, neutral = originals[message["id"]]
        # compared as values: a rebuild's untouched messages are copies, its changes change values
        out.append(original if message == neutral else Msg.model_validate(message))
    return out
