"""pydantic-ai: a history processor (and its ``ProcessHistory`` capability) that compacts each request."""

from __future__ import annotations

from typing import Any, Unpack

from pydantic_ai import RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest

from tracetrim._scope import Scope
from tracetrim.formats import from_pydantic_ai, to_pydantic_ai
from tracetrim.formats._pydantic_ai import last_message_ids
from tracetrim.harness_adapter._identity import reuse_originals
from tracetrim.harness_adapter._read_only import read_only_tools
from tracetrim.harness_adapter._run import to_write
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["TracetrimHistoryProcessor", "tracetrim_capability"]


class TracetrimHistoryProcessor(WindowedAdapter):
    """A pydantic-ai history processor: ``await processor(ctx, messages) -> messages``.

    Compacts the history before each model request. The last message (the request about to be sent)
    is protected and the result always ends with a ``ModelRequest``; messages that did not change are
    the run's own objects. Through `tracetrim_capability` (``ProcessHistory``) the run's history itself
    is replaced, so later requests build on the compacted one. ``scope`` defaults to
    ``Scope("pydantic-ai", <agent name or "agent">, <conversation id, else run id, else "default">)``.

    The budget (`WindowedAdapter`): when the run's model knows its context window
    (``ctx.model.context_window``, from its ``ModelProfile``, genai-prices or ``profile={"context_window":
    ...}``), ``trigger_tokens`` defaults to 60% of it and ``target_tokens`` to 40%. Below the trigger
    the strategy is not asked; a `Compactor` without a budget of its own compacts down to the target.
    ``context_window`` overrides the model's; explicit numbers override both; without a known window,
    or with None, every request is planned with the strategy's own rules.

    ``eligible_read_only=True`` also opts in the run's tools that declare themselves read-only
    (`read_only_tools` over ``ctx.tool_manager.tools``: a ``Tool``'s ``metadata``, an MCP toolset's
    ``annotations``).
    """

    def scope_for(self, ctx: RunContext[Any]) -> Scope:
        """The archive scope of this run's history."""
        if self.scope is not None:
            return self.scope
        agent = getattr(ctx.agent, "name", None) if getattr(ctx, "agent", None) is not None else None
        session = getattr(ctx, "conversation_id", None) or getattr(ctx, "run_id", None)
        return Scope("pydantic-ai", agent or "agent", str(session) if session else "default")

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send: compacted when the strategy adopts a shorter one, else ``messages``."""
        if len(messages) < 2 or not isinstance(messages[-1], ModelRequest):
            return messages
        neutral = from_pydantic_ai(messages)
        # A request may become several neutral messages; all of the last one's pieces are protected.
        result = await self.compact_neutral(
            neutral,
            scope=self.scope_for(ctx),
            protected_message_ids=last_message_ids(neutral),
            context_window=getattr(getattr(ctx, "model", None), "context_window", None),
            private=True,
            read_only=_run_read_only(ctx) if self.eligible_read_only else (),
            join_turns=False,  # `to_pydantic_ai` joins responses a drop made neighbours, part fields kept
        )
        if result.messages is None:
            return messages
        new = to_pydantic_ai(to_write(result))
        if not new or not isinstance(new[-1], ModelRequest):
            return messages
        out: list[ModelMessage] = reuse_originals(messages, new)
        return out


def _run_read_only(ctx: RunContext[Any]) -> frozenset[str]:
    """The read-only tools of this run step (its tool manager's; none when the run has none yet)."""
    tools = getattr(getattr(ctx, "tool_manager", None), "tools", None) or {}
    return read_only_tools(tools.values())


def tracetrim_capability(
    strategy: CompactionStrategy, **options: Unpack[WindowOptions]
) -> ProcessHistory[Any]:
    """``Agent(..., capabilities=[tracetrim_capability(compactor)])``: a `TracetrimHistoryProcessor` as a
    ``ProcessHistory`` capability (the same arguments and budget defaults)."""
    return ProcessHistory(processor=TracetrimHistoryProcessor(strategy, **options))
