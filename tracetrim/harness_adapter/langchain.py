"""LangChain v1: an ``AgentMiddleware`` that compacts the agent's messages before each model call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Unpack

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langgraph.runtime import Runtime

from tracetrim._logging import logger as _log
from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.formats import from_langchain, to_langchain
from tracetrim.harness_adapter._read_only import read_only_tools
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._sync import run_sync
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions, context_window_of

__all__ = ["TracetrimAgentMiddleware", "message_updates"]


def _thread_id() -> str:
    try:
        from langgraph.config import get_config

        thread = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a graph run
        thread = None
    return str(thread) if thread else "default"


def message_updates(
    messages: Sequence[AnyMessage], before: Sequence[Message], after: Sequence[Message]
) -> list[BaseMessage] | None:
    """The ``add_messages`` updates turning ``messages`` into ``after``: replacements and removals by id.

    ``before`` is ``from_langchain(messages)``. None when an update cannot be expressed by id (a message
    without an id changed, or a neutral message no longer maps to exactly one LangChain message).
    """
    new_by_id = {m["id"]: m for m in after}
    updates: list[BaseMessage] = []
    for message, old in zip(messages, before, strict=True):
        new = new_by_id.get(old["id"])
        if new is not None and new == old:  # values: a rebuild's changes change values
            continue
        if message.id is None:
            return None
        if new is None:
            updates.append(RemoveMessage(id=message.id))
            continue
        converted = to_langchain([new])
        if len(converted) != 1 or converted[0].id != message.id:
            return None
        # A ToolMessage from before block metadata was carried gets its marker (response_metadata) now.
        if converted[0] != message:
            updates.append(converted[0])
    return updates


def max_input_tokens(model: BaseChatModel | None) -> int | None:
    """The context window LangChain knows for ``model``: its profile's ``max_input_tokens``, else None."""
    profile = getattr(model, "profile", None) if model is not None else None
    return context_window_of(profile.get("max_input_tokens")) if isinstance(profile, Mapping) else None


class TracetrimAgentMiddleware(WindowedAdapter, AgentMiddleware[AgentState[Any], Any, Any]):
    """Compacts ``state["messages"]`` with a `CompactionStrategy` before every model call.

    Changed messages are replaced by id and dropped ones removed with ``RemoveMessage``, so the graph
    state itself shrinks (later turns and checkpoints see the compacted history). A ``ToolMessage``
    never outlives its ``AIMessage`` tool call, nor the reverse. The last message is protected.
    ``scope`` defaults to ``Scope("langchain", <middleware name>, <thread_id or "default">)``.

    The budget (`WindowedAdapter`): a ``before_model`` hook does not see the model, so pass the agent's
    chat model as ``model``; when its ``profile`` has ``max_input_tokens`` (LangChain fills it for
    known models, or set ``profile={"max_input_tokens": ...}``), ``trigger_tokens`` defaults to 60% of
    it and ``target_tokens`` to 40%. Below the trigger the strategy is not asked; a `Compactor` without
    a budget of its own compacts down to the target. ``context_window`` overrides the profile;
    explicit numbers override both; without a known window, or with None, every call is planned with
    the strategy's own rules.

    ``eligible_read_only=True`` also opts in the read-only ones among ``agent_tools`` (the tools given to
    ``create_agent``, which a ``before_model`` hook does not see): `read_only_tools` reads their
    ``metadata`` (MCP annotations such as ``readOnlyHint``) and ``tags`` (``"read_only"``).
    """

    def __init__(
        self,
        strategy: CompactionStrategy,
        *,
        model: BaseChatModel | None = None,
        agent_tools: Iterable[object] = (),
        **options: Unpack[WindowOptions],
    ) -> None:
        super().__init__(strategy, **options)
        tools = list(agent_tools)
        if self.eligible_read_only and not tools:
            raise FieldValueError(
                "needs agent_tools, the tools given to create_agent: a before_model hook does not see them",
                field="eligible_read_only",
            )
        self.agent_read_only = read_only_tools(tools)
        if model is not None and not isinstance(model, BaseChatModel):
            raise FieldTypeError(
                f"model must be a LangChain BaseChatModel or None, got {type(model).__name__}"
            )
        self.model = model

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Synchronous hook: the same as `abefore_model`."""
        return run_sync(self.abefore_model(state, runtime))

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Return message updates that compact the history, or None to leave it as it is."""
        messages = list(state["messages"])
        if len(messages) < 2:
            return None
        neutral = from_langchain(messages)
        result = await self.compact_neutral(
            neutral,
            scope=self.scope or Scope("langchain", self.name, _thread_id()),
            protected_message_ids=[neutral[-1]["id"]],
            context_window=max_input_tokens(self.model),
            private=True,
            read_only=self.agent_read_only,
        )
        if result.messages is None:
            return None
        updates = message_updates(messages, neutral, result.messages)
        if updates is None:
            _log.warning("tracetrim.adapter_rejected", problem="the history cannot be updated by message id")
            return None
        return {"messages": updates} if updates else None
