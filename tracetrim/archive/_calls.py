"""Finding a tool call's original blocks in a history, and `restore_calls` for archived ones."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import Block, Message
from tracetrim.archive._errors import CallNotFoundError
from tracetrim.archive._protocol import Archive, scope_label

TOOL_BLOCK_TYPES = ("tool_call", "tool_result")


def tool_key(block: Any) -> tuple[str, str] | None:
    """``(type, id)`` for a tool_call or tool_result block, else None."""
    if isinstance(block, dict) and block.get("type") in TOOL_BLOCK_TYPES and isinstance(block.get("id"), str):
        return block["type"], block["id"]
    return None


@attrs.frozen
class CallBlocks:
    """The original tool_call and tool_result blocks of one call id (either may be None)."""

    call_id: str
    call: Block | None
    result: Block | None

    def as_dict(self) -> dict[str, Any]:
        """The blocks as one JSON object: ``{"call_id", "call", "result"}``."""
        return {"call_id": self.call_id, "call": self.call, "result": self.result}


def find_call(messages: Sequence[Message], call_id: str) -> CallBlocks | None:
    """Copies of the first tool_call and tool_result with ``call_id``; None when neither exists."""
    found: dict[str, Block] = {}
    for message in messages:
        for block in message.get("content", ()):
            key = tool_key(block)
            if key is not None and key[1] == call_id and key[0] not in found:
                found[key[0]] = copy.deepcopy(block)
    if not found:
        return None
    return CallBlocks(call_id=call_id, call=found.get("tool_call"), result=found.get("tool_result"))


async def restore_calls(
    archive: Archive, scope: Scope, ref: str, call_ids: Iterable[str]
) -> list[CallBlocks]:
    """The original call and result blocks of ``call_ids`` from snapshot ``ref``, in the order asked.

    Raises `CallNotFoundError` naming the first id the snapshot does not hold.
    """
    wanted = [call_ids] if isinstance(call_ids, str) else list(call_ids)
    messages = await archive.restore(scope, ref)
    restored = []
    for call_id in wanted:
        blocks = find_call(messages, call_id)
        if blocks is None:
            raise CallNotFoundError(f"snapshot {ref} in {scope_label(scope)} has no tool call {call_id!r}")
        restored.append(blocks)
    return restored


def calls_history(messages: Sequence[Message], call_ids: Iterable[str]) -> list[Message]:
    """The messages of ``messages`` that hold ``call_ids``' calls or results, each with only those
    blocks: the calls as a history of their own, for a format's writer (`tracetrim restore --call-id
    ID --format NAME`). Raises `CallNotFoundError` naming the first id no message holds."""
    wanted = [call_ids] if isinstance(call_ids, str) else list(call_ids)
    out: list[Message] = []
    seen: set[str] = set()
    for message in messages:
        blocks = [
            b for b in message.get("content", ()) if (key := tool_key(b)) is not None and key[1] in wanted
        ]
        if blocks:
            seen.update(b["id"] for b in blocks)
            out.append({**copy.deepcopy(message), "content": copy.deepcopy(blocks)})
    missing = [c for c in wanted if c not in seen]
    if missing:
        raise CallNotFoundError(f"the snapshot has no tool call {missing[0]!r}")
    return out
