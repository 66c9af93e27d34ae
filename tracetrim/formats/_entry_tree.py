"""What the session files of linked entries share (pi's ``id``/``parentId``, Qwen Code's ``uuid``/
``parentUuid``): the tree as read, kept whole where a drop took entries out, and tombstoned turns joined
across the entries between them that the agent does not send."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import carried


class EntryTree:
    """The tree as read (each entry's parent, in file order) and as written, to keep every parent
    named where a drop took an entry out."""

    def __init__(self, parents: Mapping[str, Any]) -> None:
        self.parents = {k: v for k, v in parents.items() if isinstance(k, str)}
        self.order = {k: n for n, k in enumerate(self.parents)}
        self._kept: dict[str, Any] = {}  # an entry that went to its nearest ancestor written

    def path_from(self, last: Any) -> set[str]:
        """The ids of the path from entry ``last`` to the root (what the agent resumes from)."""
        path: set[str] = set()
        while isinstance(last, str) and last not in path:
            path.add(last)
            last = self.parents.get(last)
        return path

    def kept_ancestor(self, entry_id: Any, present: set[str]) -> Any:
        """``entry_id``, or its nearest ancestor still written (None when none is). Each entry that
        went is walked past once, however many branches start from it."""
        gone: list[str] = []
        while isinstance(entry_id, str) and entry_id not in present and entry_id not in self._kept:
            if len(gone) > len(self.parents):  # a cycle, which no agent would have written
                entry_id = None
                break
            gone.append(entry_id)
            entry_id = self.parents.get(entry_id)
        if isinstance(entry_id, str) and entry_id in self._kept:
            entry_id = self._kept[entry_id]
        found = entry_id if isinstance(entry_id, str) and entry_id in present else None
        self._kept.update(dict.fromkeys(gone, found))
        return found

    def next_kept(self, entry_id: Any, written: Sequence[str], path: set[str]) -> Any:
        """The first entry of ``path`` written after where ``entry_id`` stood (a compaction's first kept
        entry that a drop took out: what the agent sends from there on still starts where it did)."""
        at = self.order.get(entry_id)
        if at is None:
            return entry_id
        return next((e for e in written if e in path and self.order.get(e, -1) > at), entry_id)


def join_bared(
    messages: Sequence[Message],
    fmt: str,
    sends_nothing: Callable[[Message], bool],
    position: Callable[[Message], int | None],
    role: Callable[[Message], Any] = lambda message: message["role"],
) -> list[Message]:
    """``messages`` with each assistant turn a drop left with no call (its text and tombstones, or its
    text alone where tombstones are off) joined to the assistant turn the agent sends next, its entry
    gone.

    Agents that keep one entry a turn (pi, Qwen Code) pass two assistant turns in a row on as they are,
    and Bedrock Converse and Gemini refuse them; the later turn keeps its entry and fields, the earlier
    one's parts first. Carriers of ``fmt`` for which ``sends_nothing`` holds (a label, a telemetry
    record, an entry of another branch) stand between the two without keeping them apart. Turns that
    the agent sent side by side when read (``position`` gives where each stood among the turns sent:
    consecutive numbers; None for a turn from elsewhere, which joins only where a tombstone tells of
    a drop) are not joined: only a drop brings two together. ``role`` gives the role a message is
    sent with (a neutral assistant message of results a user turn holds, where the provider answers
    calls in a user turn, is no assistant turn).
    """
    out: list[Message] = []
    waiting: Message | None = None  # a turn with no call, and the carriers after it that send nothing
    between: list[Message] = []
    for message in messages:
        if waiting is not None:
            if sends_nothing(message):
                between.append(message)
                continue
            if _joins(waiting, message, fmt, position, role):
                message = {**message, "content": [*waiting["content"], *message["content"]]}
            else:
                out.append(waiting)
            out += between
            waiting, between = None, []
        if _may_join(message, fmt, role):
            waiting = message
        else:
            out.append(message)
    if waiting is not None:
        out += [waiting, *between]
    return out


def _may_join(message: Message, fmt: str, role: Callable[[Message], Any]) -> bool:
    """Whether ``message`` is an assistant turn with no call or result (a turn a drop may have bared)."""
    return (
        role(message) == "assistant"
        and carried(message, fmt, copied=False) is None
        and not any(b["type"] in ("tool_call", "tool_result") for b in message["content"])
    )


def _joins(
    first: Message,
    second: Message,
    fmt: str,
    position: Callable[[Message], int | None],
    role: Callable[[Message], Any],
) -> bool:
    """Whether ``second``, sent next after the bare turn ``first``, is an assistant turn a drop brought
    up to it."""
    if role(second) != "assistant" or carried(second, fmt, copied=False) is not None:
        return False
    if second["content"] and second["content"][0]["type"] == "tool_result":
        return False
    at, then = position(first), position(second)
    if at is None or then is None:  # a turn written from elsewhere: only a tombstone tells of a drop
        return common.is_bared(first)
    return common.is_bared(first) or then != at + 1
