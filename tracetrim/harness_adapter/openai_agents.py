"""openai-agents: a ``call_model_input_filter`` and a ``Session`` wrapper that compacts between runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from agents.items import TResponseInputItem
from agents.memory.session import OpenAIResponsesCompactionArgs, Session
from agents.run_config import CallModelData, ModelInputData

from tracetrim._json import digest
from tracetrim._logging import logger as _log
from tracetrim._scope import Scope
from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.formats import from_openai_responses, to_openai_responses
from tracetrim.harness_adapter._identity import reuse_originals
from tracetrim.harness_adapter._read_only import read_only_tools
from tracetrim.harness_adapter._run import AdapterResult, to_write
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["CompactingSession", "TracetrimInputFilter", "model_context_window"]


def model_context_window(model: object) -> int | None:
    """The context window the SDK knows for ``model`` (a model name, or a ``Model`` holding one in
    ``.model``): the table its compaction capability uses (``CompactionModelInfo``); None when unknown."""
    name = model if isinstance(model, str) else getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return None
    try:
        from agents.sandbox.capabilities.compaction import CompactionModelInfo
    except ImportError:  # an SDK without the table knows no window
        return None
    info = CompactionModelInfo.maybe_for_model(name)
    return info.context_window if info is not None else None


async def _compact_items(
    adapter: WindowedAdapter,
    items: Sequence[Any],
    scope: Scope,
    window: int | None,
    read_only: frozenset[str] = frozenset(),
) -> list[Any] | None:
    """The items to adopt, or None; what happened is left in ``adapter.last_result``."""
    neutral = from_openai_responses(list(items))
    if len(neutral) < 2:
        adapter.last_result = AdapterResult(None)
        return None
    result = await adapter.compact_neutral(
        neutral,
        scope=scope,
        protected_message_ids=[neutral[-1]["id"]],
        context_window=window,
        private=True,
        read_only=read_only,
        join_turns=False,  # Responses items are not turns: assistant items side by side are what it sends
    )
    if result.messages is None:
        return None
    return reuse_originals(items, to_openai_responses(to_write(result)))


_WITHHELD_LIMIT = 4096


def _fingerprint(item: Any) -> str | None:
    """What a withheld item is known by: a tool call or output by its kind and call id (unique in a
    conversation, and free: no pass over its content), anything else by a digest of its content."""
    found = _call_id(item)
    if found is not None:
        return f"{item.get('type', '')}\x00{found[0]}"
    try:
        return digest(item)
    except (TypeError, ValueError):  # not plain JSON: never withheld
        return None


def _call_id(item: Any) -> tuple[str, bool] | None:
    """``(call_id, is_output)`` for a tool call or tool output item, else None."""
    if not isinstance(item, dict) or not isinstance(item.get("call_id"), str):
        return None
    return item["call_id"], str(item.get("type", "")).endswith("_output")


def _answers_server_calls(items: Sequence[Any]) -> bool:
    """Whether some tool output's call is not in ``items``: the input is the delta of a conversation the
    server holds (``previous_response_id``, ``conversation_id``); a full history always has the call."""
    ids = [found for found in map(_call_id, items) if found is not None]
    calls = {call_id for call_id, is_output in ids if not is_output}
    return any(is_output and call_id not in calls for call_id, is_output in ids)


class TracetrimInputFilter(WindowedAdapter):
    """A ``RunConfig(call_model_input_filter=...)`` that compacts the input of every model call.

    Only what the model receives changes; the run's own items and any session keep the full history
    (pair it with `CompactingSession` to shrink the stored history too). Unchanged items are passed on
    as the SDK's own objects. ``scope`` defaults to ``Scope("openai-agents", <agent name>, "default")``.

    The budget (`WindowedAdapter`): when the agent's model is an OpenAI model the SDK knows the context
    window of (`model_context_window`: ``agent.model`` as a name or a model object holding one),
    ``trigger_tokens`` defaults to 60% of it and ``target_tokens`` to 40%. Below the trigger the
    strategy is not asked; a `Compactor` without a budget of its own compacts down to the target. An
    agent without a model of its own (the run config's or the default) reports no window: pass
    ``context_window``. Explicit numbers override both; without a known window, or with None, every
    call is planned with the strategy's own rules.

    With server-managed conversation state (``previous_response_id``, ``auto_previous_response_id``,
    ``conversation_id``) the SDK sends only what the server lacks, and it offers again, on every later
    call, each item it gave the filter that was not sent as that very item. So the filter remembers the
    items it shortened or dropped (tool items by call id, others by content) and keeps them out of later
    inputs that continue a server conversation (an input holding a tool output whose call is not in it);
    those inputs are not planned, since the server already holds the history they build on.

    ``eligible_read_only=True`` also opts in the agent's tools that declare themselves read-only
    (`read_only_tools` over ``agent.tools``: an MCP tool's ``readOnlyHint``, which the SDK keeps on the
    ``FunctionTool`` it makes from it; a plain ``@function_tool`` declares nothing of the kind).
    """

    def __init__(
        self,
        strategy: CompactionStrategy,
        **options: Unpack[WindowOptions],
    ) -> None:
        super().__init__(strategy, **options)
        self._withheld: dict[str, None] = {}  # fingerprints of items replaced or dropped, oldest first

    def _remember_withheld(self, original: Sequence[Any], sent: Sequence[Any]) -> None:
        kept = {id(item) for item in sent}
        for item in original:
            fingerprint = _fingerprint(item) if id(item) not in kept else None
            if fingerprint is not None:
                self._withheld.pop(fingerprint, None)
                self._withheld[fingerprint] = None
        while len(self._withheld) > _WITHHELD_LIMIT:
            del self._withheld[next(iter(self._withheld))]

    def _without_withheld(self, items: Sequence[Any]) -> list[Any] | None:
        """``items`` less the ones this filter withheld before, never splitting a call from its output in
        ``items``; None when there are none."""
        drop = {i for i, item in enumerate(items) if _fingerprint(item) in self._withheld}
        if not drop:
            return None
        while True:
            ids = {i: found for i, item in enumerate(items) if (found := _call_id(item)) is not None}
            kept_ids = {ids[i] for i in ids if i not in drop}
            back = {i for i in drop if i in ids and (ids[i][0], not ids[i][1]) in kept_ids}
            if not back:
                break
            drop -= back
        return [item for i, item in enumerate(items) if i not in drop] if drop else None

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """Return the model input, compacted when the strategy adopts a shorter history."""
        model_data = data.model_data
        if _answers_server_calls(model_data.input):
            self.last_result = AdapterResult(None)
            kept = self._without_withheld(model_data.input)
            if kept is None:
                return model_data
            return ModelInputData(input=kept, instructions=model_data.instructions)
        scope = self.scope or Scope("openai-agents", data.agent.name or "agent", "default")
        read_only = read_only_tools(data.agent.tools) if self.eligible_read_only else frozenset()
        window = model_context_window(data.agent.model)
        items = await _compact_items(self, model_data.input, scope, window, read_only)
        if items is None:
            return model_data
        self._remember_withheld(model_data.input, items)
        return ModelInputData(input=items, instructions=model_data.instructions)


class CompactingSession(WindowedAdapter):
    """Wraps any openai-agents ``Session`` and compacts its stored history between runs.

    The Runner calls `run_compaction` after it saves a run's items (the SDK's compaction hook); `compact`
    does the same on demand. The new history replaces the stored one by ``clear_session`` plus
    ``add_items``; if that write fails the original items are written back, and in ENFORCE mode the
    archive holds them anyway. The history is re-read just before the swap and the swap abandoned if
    it changed, but the inner session is not locked: do not share it with a concurrent run while
    compacting. ``scope`` defaults to ``Scope("openai-agents", "session", <session_id>)``.

    The budget (`WindowedAdapter`): a session does not know which model reads it; name it in ``model``
    and, when the SDK knows that model's context window (`model_context_window`), ``trigger_tokens``
    defaults to 60% of it and ``target_tokens`` to 40%. ``context_window`` overrides the model's;
    explicit numbers override both; without a known window, or with None, every compaction is planned
    with the strategy's own rules.
    """

    def __init__(
        self,
        session: Session,
        strategy: CompactionStrategy,
        *,
        model: str | None = None,
        **options: Unpack[WindowOptions],
    ) -> None:
        if model is not None and not isinstance(model, str):
            raise FieldTypeError(f"model must be a model name or None, got {type(model).__name__}")
        self.session = session
        self.session_id = session.session_id
        self.session_settings = getattr(session, "session_settings", None)
        self.model = model
        if options.get("eligible_read_only"):
            raise FieldValueError(
                "is for TracetrimInputFilter: a session does not see the agent's tools (opt them in with "
                "CompactorConfig(eligible_tools=read_only_tools(agent.tools)))",
                field="eligible_read_only",
            )
        options["scope"] = options.get("scope") or Scope("openai-agents", "session", session.session_id)
        super().__init__(strategy, **options)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The stored history (the latest ``limit`` items when given)."""
        return await self.session.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the stored history."""
        await self.session.add_items(items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item."""
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Remove every stored item."""
        await self.session.clear_session()

    async def run_compaction(self, args: OpenAIResponsesCompactionArgs | None = None) -> None:
        """The Runner's after-run hook: compact the stored history."""
        await self.compact()

    async def compact(self) -> AdapterResult:
        """Compact the stored history now; ``messages`` is None when it was left as it was."""
        items = await self.session.get_items()
        assert self.scope is not None  # always set at construction
        new_items = await _compact_items(self, items, self.scope, model_context_window(self.model))
        result = self.last_result
        assert result is not None
        if new_items is None:
            return result
        if await self.session.get_items() != items:
            _log.warning("tracetrim.session_changed", session_id=self.session_id)
            return AdapterResult(None, result.outcome, result.archive_ref, planned=True)
        await self.session.clear_session()
        try:
            await self.session.add_items(new_items)
        except BaseException:
            await self.session.clear_session()
            await self.session.add_items(list(items))
            raise
        return result
