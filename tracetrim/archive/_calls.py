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


def _first_blocks(messages: Sequence[Message]) -> dict[str, dict[str, Block]]:
    """Each call id to its first tool_call and first tool_result (by type), in one pass over ``messages``."""
    first: dict[str, dict[str, Block]] = {}
    for message in messages:
        for block in message.get("content", ()):
            key = tool_key(block)
            if key is not None:
                first.setdefault(key[1], {}).setdefault(key[0], block)
    return first


def _call_blocks(call_id: str, found: dict[str, Block] | None) -> CallBlocks | None:
    """Copies of ``found``'s blocks as `CallBlocks`; None when there are none."""
    if not found:
        return None
    # Copied per request: the caller may edit what it gets, and an id asked twice gets two copies.
    return CallBlocks(
        call_id=call_id,
        call=copy.deepcopy(found.get("tool_call")),
        result=copy.deepcopy(found.get("tool_result")),
    )


def find_call(messages: Sequence[Message], call_id: str) -> CallBlocks | None:
    """Copies of the first tool_call and tool_result with ``call_id``; None when neither exists."""
    return _call_blocks(call_id, _first_blocks(messages).get(call_id))


async def restore_calls(
    archive: Archive, scope: Scope, ref: str, call_ids: Iterable[str]
) -> list[CallBlocks]:
    """The original call and result blocks of ``call_ids`` from snapshot ``ref``, in the order asked.

    Raises `CallNotFoundError` naming the first id the snapshot does not hold.
    """
    wanted = [call_ids] if isinstance(call_ids, str) else list(call_ids)
    messages = await archive.restore(scope, ref)
    # Indexed once: looking each id up by a scan of the snapshot is quadratic in ids and messages.
    first = _first_blocks(messages)
    restored = []
    for call_id in wanted:
        blocks = _call_blocks(call_id, first.get(call_id))
        if blocks is None:
            raise CallNotFoundError(f"snapshot {ref} in {scope_label(scope)} has no tool call {call_id!r}")
        restored.append(blocks)
    return restored


def calls_history(messages: Sequence[Message], call_ids: Iterable[str]) -> list[Message]:
    """The messages of ``messages`` that hold ``call_ids``' calls or results, each with only those
    blocks: the calls as a history of their own, for a format's writer (`tracetrim restore --call-id
    ID --format NAME`). Raises `CallNotFoundError` naming the first id no message holds."""
    wanted = [call_ids] if isinstance(call_ids, str) else list(call_ids)
    wanted_set = set(wanted)  # a set: one membership test per block, however many ids are asked
    out: list[Message] = []
    seen: set[str] = set()
    for message in messages:
        blocks = [
            b for b in message.get("content", ()) if (key := tool_key(b)) is not None and key[1] in wanted_set
        ]
        if blocks:
            seen.update(b["id"] for b in blocks)
            out.append({**copy.deepcopy(message), "content": copy.deepcopy(blocks)})
    missing = [c for c in wanted if c not in seen]
    if missing:
        raise CallNotFoundError(f"the snapshot has no tool call {missing[0]!r}")
    return out
