"""Inspect AI: a compaction strategy (``react(compaction=...)``) that compacts an agent's conversation."""

from __future__ import annotations

from typing import Any, Unpack

import pydantic
from inspect_ai.model import ChatMessage, ChatMessageUser, CompactionResult, CompactionStrategy, Model
from inspect_ai.model._model_info import get_model_input_tokens  # private, as is sample_state:
from inspect_ai.solver._task_state import sample_state  # tracetrim[inspect] pins an Inspect with both
from inspect_ai.tool import ToolInfo

from tracetrim._scope import Scope
from tracetrim._validators import FieldTypeError
from tracetrim.formats import from_inspect, to_inspect
from tracetrim.harness_adapter._identity import reuse_originals
from tracetrim.harness_adapter._run import to_write
from tracetrim.harness_adapter._strategy import CompactionStrategy as Strategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["TracetrimCompaction"]

_MESSAGES: pydantic.TypeAdapter[list[ChatMessage]] = pydantic.TypeAdapter(list[ChatMessage])


def _context_window(model: Model) -> int | None:
    """The model's input window as Inspect knows it (its model database; ``set_model_info`` overrides)."""
    window = get_model_input_tokens(model)
    return window if isinstance(window, int) else None


def _sample_scope(model: Model) -> Scope:
    """``Scope("inspect", <model>, <sample id>-<epoch>)`` for the sample being run."""
    state = sample_state()
    session = f"{state.sample_id}-{state.epoch}" if state is not None else "default"
    return Scope("inspect", str(model), session)


class TracetrimCompaction(WindowedAdapter, CompactionStrategy):
    """An Inspect compaction strategy: ``react(..., compaction=TracetrimCompaction(compactor))`` (and
    wherever Inspect takes a ``CompactionStrategy``: ``deepagent``, agent bridges).

    Inspect asks it to compact once the conversation passes ``threshold`` (a share of the model's
    context window, or a number of tokens; Inspect's default 0.9) and continues from what it returns.
    The last message is protected; messages tracetrim changed get new ids (Inspect caches by id), the
    rest are the conversation's own objects. Each kept call keeps the tool message answering it, and a
    reasoning part sent right before a call stays right before it or goes with it.

    Where tracetrim adopts nothing (SHADOW, nothing worth removing, any failure), ``fallback`` (an
    Inspect strategy such as ``CompactionEdit()``) compacts instead; without one the conversation comes
    back as it was, and Inspect fails the sample if it is still over ``threshold`` after three more
    tries. The budget (`WindowedAdapter`): the window is the one Inspect knows for the model, so by
    default a `Compactor` compacts down to 40% of it. ``scope`` defaults to ``Scope("inspect", <model>,
    <sample id>-<epoch>)``.
    """

    def __init__(
        self,
        strategy: Strategy,
        *,
        threshold: int | float = 0.9,
        memory: bool = True,
        fallback: CompactionStrategy | None = None,
        **options: Unpack[WindowOptions],
    ) -> None:
        if fallback is not None and not isinstance(fallback, CompactionStrategy):
            raise FieldTypeError(
                f"fallback must be an Inspect CompactionStrategy or None, got {type(fallback).__name__}"
            )
        WindowedAdapter.__init__(self, strategy, **options)
        CompactionStrategy.__init__(self, type="edit", threshold=threshold, memory=memory)
        self.fallback = fallback

    async def _compacted(self, model: Model, messages: list[ChatMessage]) -> list[ChatMessage] | None:
        """The compacted conversation when the strategy adopts one, else None."""
        if len(messages) < 2:
            return None
        sent: list[Any] = [m.model_dump(mode="json", exclude_none=True) for m in messages]
        neutral = from_inspect(sent)
        result = await self.compact_neutral(
            neutral,
            scope=self.scope or _sample_scope(model),
            protected_message_ids=[neutral[-1]["id"]],
            context_window=_context_window(model),
            private=True,
        )
        if result.messages is None:
            return None
        new = _MESSAGES.validate_python(to_inspect(to_write(result)))
        out: list[ChatMessage] = reuse_originals(messages, new)
        return out

    async def compact_outcome(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> CompactionResult:
        """The compacted conversation and which strategy made it (this one, or ``fallback``)."""
        compacted = await self._compacted(model, messages)
        if compacted is None and self.fallback is not None:
            outcome = await self.fallback.compact_outcome(model, messages, tools)
            outcome_of = self.last_result.outcome if self.last_result is not None else None
            why = f"tracetrim adopted nothing ({outcome_of.reason.name if outcome_of else 'not planned'})"
            return outcome._replace(fallback_reason=outcome.fallback_reason or why)
        return CompactionResult(
            input=compacted if compacted is not None else messages,
            message=None,
            preserve_prefix=self.preserve_prefix,
            applied=type(self).__name__,
        )

    async def compact(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        """The conversation to continue from (see `compact_outcome`) and the message ``fallback`` may
        append (tracetrim appends none)."""
        outcome = await self.compact_outcome(model, messages, tools)
        return outcome.input, outcome.message
