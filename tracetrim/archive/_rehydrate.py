"""`rehydrate`: put archived tool results and dropped pairs back into a later, compacted history."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence

from tracetrim._marker import is_shortened, tombstone_call_id
from tracetrim._snapshot import Block, Message, validate_messages
from tracetrim._validators import FieldValueError
from tracetrim.archive._calls import tool_key
from tracetrim.archive._errors import CallNotFoundError

_Key = tuple[str, str]


def _unique_tool_blocks(messages: Sequence[Message]) -> dict[_Key, Block]:
    """Tool blocks whose ``(type, id)`` occurs once; the planner never touches the others."""
    counts: Counter[_Key] = Counter()
    blocks: dict[_Key, Block] = {}
    for message in messages:
        for block in message["content"]:
            key = tool_key(block)
            if key is not None:
                counts[key] += 1
                blocks[key] = block
    return {key: block for key, block in blocks.items() if counts[key] == 1}


def _signature(block: Block) -> object:
    # A tool block is known by (type, id): a shortened result stands where its original stood.
    # Every other block is never edited by a planner, so it must be equal.
    key = tool_key(block)
    return key if key is not None else block


def _stones(message: Message) -> list[str]:
    """The call ids of ``message``'s tombstones, in order."""
    return [call for b in message["content"] if (call := tombstone_call_id(b)) is not None]


def _kept(archived: Message, dropped: set[_Key]) -> list[object]:
    """The signatures of ``archived``'s blocks that compaction kept, in order."""
    return [_signature(b) for b in archived["content"] if tool_key(b) not in dropped]


def _derives_from(
    archived: Message, kept: list[object], current: Message, stones: list[str], dropped: set[_Key]
) -> bool:
    """True when ``current`` can be ``archived`` after compaction (and blocks appended since).

    ``kept`` is `_kept` of ``archived`` and ``stones`` `_stones` of ``current``, worked out once by the
    caller rather than once per candidate pair. Tombstones (left where a dropped call stood) stand for
    their call: they must name calls of ``archived`` that were dropped, and are otherwise skipped in
    the comparison.
    """
    if current.get("role") != archived.get("role") or current.get("id") != archived.get("id"):
        return False
    if any(("tool_call", call) not in dropped for call in stones):
        return False
    if archived["content"] and not kept and not stones:
        return False  # a message whose blocks all went is gone, unless tombstones mark its place
    now = [b for b in current["content"] if tombstone_call_id(b) is None]
    return len(now) >= len(kept) and all(_signature(b) == k for b, k in zip(now, kept, strict=False))


def _all_dropped(message: Message, dropped: set[_Key]) -> bool:
    """True when ``message`` had blocks and compaction dropped every one of them."""
    content = message["content"]
    return bool(content) and all(tool_key(b) in dropped for b in content)


def _stone_places(
    current: Sequence[Message], stones: Sequence[list[str]], dropped: set[_Key]
) -> dict[tuple[object, object], list[int]]:
    """By role and id, in order, the current messages an all-dropped archived message derives to.

    `_derives_from` of a message with nothing kept asks only for its role and id and for tombstones,
    all of dropped calls: a test of the current message alone, so it can be indexed once. Looking
    such a message up here, rather than scanning the rest of ``current`` for it each time, is what
    keeps the alignment linear when many archived messages went entirely.
    """
    places: dict[tuple[object, object], list[int]] = {}
    for c, message in enumerate(current):
        if stones[c] and all(("tool_call", call) in dropped for call in stones[c]):
            places.setdefault((message.get("role"), message.get("id")), []).append(c)
    return places


def _first_from(places: list[int], cursor: int) -> int | None:
    """The first of the ascending ``places`` at or after ``cursor``; None when there is none."""
    at = bisect_left(places, cursor)
    return places[at] if at < len(places) else None


def _scan(
    i: int,
    archived: Message,
    current: list[Message],
    stones: list[list[str]],
    cursor: int,
    dropped: set[_Key],
) -> int:
    """The first current message from ``cursor`` on that archived message ``i`` derives to.

    Raises ``ValueError`` when there is none: the message is out of order, or not there at all.
    """
    kept = _kept(archived, dropped)
    for c in range(cursor, len(current)):
        if _derives_from(archived, kept, current[c], stones[c], dropped):
            return c
    label = f"archived message {i}" + (f" ({archived['id']!r})" if "id" in archived else "")
    if any(_derives_from(archived, kept, current[c], stones[c], dropped) for c in range(cursor)):
        raise FieldValueError(f"current history reorders {label}")
    raise FieldValueError(f"cannot align {label} with the current history")


def _align(archived: list[Message], current: list[Message], dropped: set[_Key]) -> dict[int, int]:
    """Map archived message indexes to current ones; messages the planner removed stay unmapped.

    Matched by position and content, never by id alone: hosts reuse ids (tau-bench reuses its
    tool-call ids as message ids). Archived message ``i`` maps to the first current message after
    the previous match that has its role, its id (or lack of one) and its surviving blocks in
    order; current messages skipped on the way are ones the host inserted, kept where they are.
    A message goes only when every one of its blocks was dropped, and only such a message may be
    missing.
    """
    stones = [_stones(message) for message in current]
    places = _stone_places(current, stones, dropped)
    mapping: dict[int, int] = {}
    cursor = 0
    for i, message in enumerate(archived):
        if _all_dropped(message, dropped):
            # Looked up, not scanned for: a message that went would otherwise read the whole rest
            # of ``current`` in vain, once per message that went.
            c = _first_from(places.get((message.get("role"), message.get("id")), []), cursor)
            if c is None:
                continue  # every block was dropped and no tombstone marks the place: the message went
        else:
            # A scan that finds its message moves the cursor past every message it read, and one
            # that does not raises: each current message is read once.
            c = _scan(i, message, current, stones, cursor, dropped)
        mapping[i] = c
        cursor = c + 1
    return mapping


def _merge(archived: Message, current: Message, dropped: set[_Key], restore: set[_Key]) -> Message:
    """``current`` with the chosen dropped blocks of ``archived`` back in their original places."""
    content: list[Block] = []
    stones = {call: b for b in current["content"] if (call := tombstone_call_id(b)) is not None}
    kept = iter([b for b in current["content"] if tombstone_call_id(b) is None])
    for block in archived["content"]:
        key = tool_key(block)
        if key is not None and key in dropped:
            if key in restore:
                content.append(block)  # the pair is back: its tombstone goes
                stones.pop(key[1], None)
            elif key[0] == "tool_call" and key[1] in stones:
                content.append(stones.pop(key[1]))  # still dropped: its tombstone stays in place
        else:
            surviving = next(kept, None)
            if surviving is not None:
                content.append(surviving)
    content.extend(kept)  # blocks added to the message since it was archived
    return {**current, "content": content}


def rehydrate(
    current: Sequence[Message], archived: Sequence[Message], call_ids: Iterable[str] | None = None
) -> list[Message]:
    """A new history: ``current`` with the full results of ``call_ids`` (None: all) taken from ``archived``.

    ``archived`` is the history saved before compaction; ``current`` is what the agent holds now
    (the compacted history plus anything appended since). Shortened results get their original
    block back; dropped pairs are re-inserted where they were: into the surviving message that held
    them, or as that message again right after the message that preceded it. Messages added since
    are left as they are. Neither input is mutated. Raises `CallNotFoundError` for a chosen id the
    archived history does not hold, `SnapshotError` for malformed input, and ``ValueError`` when
    ``current`` does not derive from ``archived``.
    """
    now = validate_messages(current)
    before = validate_messages(archived)
    originals = _unique_tool_blocks(before)
    if call_ids is None:
        chosen = {call_id for _, call_id in originals}
    else:
        chosen = {call_ids} if isinstance(call_ids, str) else set(call_ids)
        known = {k[1] for message in before for b in message["content"] if (k := tool_key(b)) is not None}
        unknown = sorted(chosen - known)
        if unknown:
            raise CallNotFoundError(f"the archived history has no tool call {unknown[0]!r}")

    for message in now:
        content = message["content"]
        for j, block in enumerate(content):
            key = tool_key(block)
            if key is None or key[0] != "tool_result" or key[1] not in chosen or not is_shortened(block):
                continue
            original = originals.get(key)
            if original is not None and not is_shortened(original):
                content[j] = original

    present = {key for message in now for b in message["content"] if (key := tool_key(b)) is not None}
    dropped = {key for key in originals if key not in present}
    restore = {key for key in dropped if key[1] in chosen}
    if not restore:
        return now
    mapping = _align(before, now, dropped)

    result: list[Message] = []
    cursor = 0
    for i, message in enumerate(before):
        c = mapping.get(i)
        if c is not None:
            result.extend(now[cursor:c])
            result.append(_merge(message, now[c], dropped, restore))
            cursor = c + 1
            continue
        blocks = [b for b in message["content"] if tool_key(b) in restore]
        if blocks:
            result.append({**message, "content": blocks})
    result.extend(now[cursor:])
    return result
