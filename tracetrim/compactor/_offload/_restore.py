"""`restore_offloaded`: bring back every summarised group and every shortened result from the archive."""

from __future__ import annotations

from collections.abc import Sequence

from tracetrim._marker import is_shortened, mark_of, summary_ref
from tracetrim._scope import Scope
from tracetrim._snapshot import Message, validate_messages
from tracetrim.archive import Archive, rehydrate


def _shortened_refs(messages: Sequence[Message]) -> dict[str, list[str]]:
    refs: dict[str, list[str]] = {}
    for message in messages:
        for block in message["content"]:
            mark = mark_of(block) if block["type"] == "tool_result" and is_shortened(block) else None
            if mark is not None:
                ref = mark.get("archive_ref")
                if isinstance(ref, str) and ref:
                    refs.setdefault(ref, []).append(block["id"])
    return refs


async def restore_offloaded(
    current: Sequence[Message], archive: Archive, scope: Scope, *, max_passes: int = 8
) -> list[Message]:
    """``current`` with summaries replaced by the groups they stand for and shortened results made whole.

    Works for what `OffloadStrategy` and `Compactor` left in a history, over several passes (a
    summary of a summary, a result shortened again after a recall) up to ``max_passes`` deep.
    Summaries and results whose marker names no reference stay as they are. Messages added since
    compaction are kept. Raises `ArchiveError` when a named snapshot cannot be restored.
    """
    messages = validate_messages(current)
    for _ in range(max_passes):
        if not any(summary_ref(m) for m in messages):
            break
        expanded: list[Message] = []
        for message in messages:
            ref = summary_ref(message)
            expanded.extend(await archive.restore(scope, ref) if ref else [message])
        messages = expanded
    for _ in range(max_passes):
        refs = _shortened_refs(messages)
        before = messages
        for ref, call_ids in refs.items():
            messages = rehydrate(messages, await archive.restore(scope, ref), call_ids)
        if not refs or messages == before:
            break
    return messages
