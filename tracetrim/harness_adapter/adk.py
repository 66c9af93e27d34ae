"""Google ADK: a plugin that compacts the contents of each model request (``before_model_callback``)."""

from __future__ import annotations

from typing import Any, Unpack

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from tracetrim._scope import Scope
from tracetrim.formats import from_gemini, to_gemini
from tracetrim.harness_adapter._run import to_write
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["TracetrimPlugin"]


class TracetrimPlugin(WindowedAdapter, BasePlugin):
    """An ADK plugin: ``Runner(..., plugins=[TracetrimPlugin(compactor)])`` (or ``App(plugins=...)``).

    Before each model call ADK builds the request's ``contents`` from the session's events; the plugin
    compacts them and the model is sent the shorter history. The session's events stay as they were
    (ADK records them; the archive keeps each original the strategy adopted a compaction of), so every
    request is planned from the whole history: a deterministic strategy makes the same choices for the
    same past, and the prompt cache sees the same prefix. The last content (the turn the model answers)
    is protected. Gemini's rules hold for what is sent: a call and its response go together, two model
    turns a drop made neighbours are joined, a turn's first call keeps its signature.

    ``scope`` defaults to ``Scope(<user id>, <agent name>, <session id>)``. The budget
    (`WindowedAdapter`): ADK does not report a model's context window, so ``"auto"`` derives one only
    from ``context_window=``; without it every request is planned with the strategy's own rules.
    Register ``RecallTool(archive, scope).function`` as a tool so the agent can bring back what a
    tombstone names.
    """

    def __init__(
        self, strategy: CompactionStrategy, *, name: str = "tracetrim", **options: Unpack[WindowOptions]
    ) -> None:
        WindowedAdapter.__init__(self, strategy, **options)
        BasePlugin.__init__(self, name)

    def scope_for(self, callback_context: CallbackContext) -> Scope:
        """The archive scope of this session's history."""
        if self.scope is not None:
            return self.scope
        session = getattr(callback_context, "session", None)
        session_id = getattr(session, "id", None) or "default"
        user = getattr(callback_context, "user_id", None) or "adk"
        return Scope(str(user), str(callback_context.agent_name or "agent"), str(session_id))

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """Replace ``llm_request.contents`` by a compacted copy when the strategy adopts one; never
        answers for the model (returns None)."""
        contents = list(llm_request.contents or [])
        if len(contents) < 2:
            return None
        sent: list[dict[str, Any]] = [
            c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents
        ]
        neutral = from_gemini(sent)
        result = await self.compact_neutral(
            neutral,
            scope=self.scope_for(callback_context),
            protected_message_ids=[neutral[-1]["id"]],
            private=True,
        )
        if result.messages is None:
            return None
        # ADK keeps the system instruction in the request's config, so the contents hold no system turn
        # to come back as one
        written = to_gemini(to_write(result))["messages"]
        llm_request.contents = [types.Content.model_validate(c) for c in written]
        return None
