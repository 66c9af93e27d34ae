"""Microsoft Agent Framework: a compaction strategy (``compaction_strategy=``) that compacts what each model
call is sent."""

from __future__ import annotations

from typing import Any, Unpack

from agent_framework import Message

from tracetrim._scope import Scope
from tracetrim.formats import from_agent_framework, to_agent_framework
from tracetrim.formats._agent_framework import EXCLUDED_KEY
from tracetrim.harness_adapter._identity import reuse_originals
from tracetrim.harness_adapter._run import to_write
from tracetrim.harness_adapter._strategy import CompactionStrategy
from tracetrim.harness_adapter._window import WindowedAdapter, WindowOptions

__all__ = ["TracetrimCompactionStrategy"]

DEFAULT_SCOPE = Scope("agent-framework", "agent", "default")
"""The archive scope when none is given: Agent Framework hands a compaction strategy the messages alone."""


def _sent(message: Message) -> bool:
    """Whether Agent Framework sends ``message`` (its own compaction has not excluded it)."""
    return not message.additional_properties.get(EXCLUDED_KEY, False)


def _spliced(messages: list[Message], sent: list[Message], new: list[Message]) -> list[Message]:
    """``messages`` with the ones sent replaced by ``new`` (which reuses some of them, in order): each
    new message goes just before the next original it reuses (or at the end), the originals it does not
    reuse go, and every message Agent Framework excluded stays where it was."""
    originals = {id(message) for message in sent}
    reused = {id(message): k for k, message in enumerate(new) if id(message) in originals}
    out: list[Message] = []
    cursor = 0
    for message in messages:
        if not _sent(message):
            out.append(message)
            continue
        at = reused.get(id(message))
        if at is not None:
            out.extend(new[cursor : at + 1])
            cursor = at + 1
    out.extend(new[cursor:])
    return out


class TracetrimCompactionStrategy(WindowedAdapter):
    """An Agent Framework compaction strategy: ``Agent(client, compaction_strategy=
    TracetrimCompactionStrategy(compactor))`` (or a chat client's ``compaction_strategy``, one step of a
    ``TokenBudgetComposedStrategy``, a ``CompactionProvider``'s ``before_strategy`` / ``after_strategy``).

    Agent Framework calls it before each model call with the messages of the run (those its own
    compaction excluded among them) and sends what it leaves included. When the strategy adopts a
    compaction, the messages it changed are replaced in that list by new ``Message`` objects (each under
    a ``message_id`` of its own) and the ones a drop emptied are taken out; the caller's ``Message``
    objects are never changed, so the session keeps its history whole and the archive keeps each
    original adopted in ENFORCE (as a ``CompactionProvider``'s ``after_strategy`` it is handed the history
    the session stores, which then keeps the compaction). The last message (what the model answers) is
    protected; a call and its result go or stay together; a reasoning content goes with the call it led
    to; two assistant turns a drop made neighbours are joined.

    The budget (`WindowedAdapter`): Agent Framework does not report a model's context window, so
    ``"auto"`` derives one only from ``context_window=``; without it every call is planned with the
    strategy's own rules. ``scope`` defaults to ``DEFAULT_SCOPE``: give each conversation its own so a
    restore finds its history. Register ``RecallTool(archive, scope).function`` as a tool so the agent can
    bring back what a tombstone names.
    """

    def __init__(self, strategy: CompactionStrategy, **options: Unpack[WindowOptions]) -> None:
        WindowedAdapter.__init__(self, strategy, **options)

    async def __call__(self, messages: list[Message]) -> bool:
        """Compact ``messages`` in place (Agent Framework's protocol); whether they changed."""
        sent = [message for message in messages if _sent(message)]
        if len(sent) < 2:
            return False
        dicts: list[dict[str, Any]] = [message.to_dict() for message in sent]
        neutral = from_agent_framework(dicts)
        result = await self.compact_neutral(
            neutral,
            scope=self.scope or DEFAULT_SCOPE,
            protected_message_ids=[neutral[-1]["id"]],
            private=True,
        )
        if result.messages is None:
            return False
        written = to_agent_framework(to_write(result))["messages"]
        originals = {id(d): message for d, message in zip(dicts, sent, strict=True)}
        new = [
            originals[id(item)] if id(item) in originals else Message.from_dict(item)
            for item in reuse_originals(dicts, written)
        ]
        messages[:] = _spliced(messages, sent, new)
        return True
