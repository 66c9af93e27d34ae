"""pydantic-ai: a history processor (and its ``ProcessHistory`` capability) that compacts each request."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest

from tracetrim._scope import Scope
from tracetrim.formats import from_pydantic_ai, to_pydantic_ai
from tracetrim.harness_adapter._identity import reuse_originals
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import AUTO, TokenSetting, WindowedAdapter

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
        head = len(from_pydantic_ai(messages[:-1]))
        result = await self.compact_neutral(
            neutral,
            scope=self.scope_for(ctx),
            protected_message_ids=[m["id"] for m in neutral[head:]],
            context_window=getattr(getattr(ctx, "model", None), "context_window", None),
        )
        if result.messages is None:
            return messages
        new = to_pydantic_ai(result.messages)
        if not new or not isinstance(new[-1], ModelRequest):
            return messages
        out: list[ModelMessage] = reuse_originals(messages, new)
        return out


def tracetrim_capability(
    strategy: CompactionStrategy,
    *,
    scope: Scope | None = None,
    goal: str = "",
    next_action: str = "",
    trigger_tokens: TokenSetting = AUTO,
    target_tokens: TokenSetting = AUTO,
    context_window: int | None = None,
) -> ProcessHistory[Any]:
    """``Agent(..., capabilities=[tracetrim_capability(compactor)])``: a `TracetrimHistoryProcessor` as a
    ``ProcessHistory`` capability (the same arguments and budget defaults)."""
    processor = TracetrimHistoryProcessor(
        strategy,
        scope=scope,
        goal=goal,
        next_action=next_action,
        trigger_tokens=trigger_tokens,
        target_tokens=target_tokens,
        context_window=context_window,
    )
    return ProcessHistory(processor=processor)
