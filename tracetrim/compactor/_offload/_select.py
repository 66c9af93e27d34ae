"""What the offload strategy acts on: results over the limit, message groups, and with a target, the
oldest of them that get the history there (tokens counted as the planner's budget counts them)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tracetrim._render import block_text
from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, message_tokens
from tracetrim.compactor._outcome import Action
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages
from tracetrim.compactor._rebuild import Rebuilt


def offload_pairs(
    messages: Sequence[Message],
    *,
    keep_recent: int,
    protected_ids: Collection[str],
    pinned_ids: Collection[str],
    protected_call_ids: Collection[str],
    exempt_tools: Collection[str],
    max_result_tokens: int,
    count: TokenCounter,
) -> tuple[list[Pair], set[str]]:
    """Every pair (with the planner's pairing and protection rules) and the keys of those to offload.

    A pair is offloaded when the planner would let a model judge it and its result text is above
    ``max_result_tokens``. Every tool is eligible except ``exempt_tools``.
    """
    protected = protected_messages(
        messages, preserve_recent=keep_recent, protected_ids=protected_ids, pinned_ids=pinned_ids
    )
    tools = {b["name"] for m in messages for b in m["content"] if b["type"] == "tool_call"}
    pairs = find_pairs(
        messages,
        eligible_tools=tools - set(exempt_tools),
        protected=protected,
        protected_call_ids=protected_call_ids,
    )
    chosen = {
        pair.key
        for pair in pairs
        if pair.candidate and pair.result_text is not None and count(pair.result_text) > max_result_tokens
    }
    return pairs, chosen


def _span_nodes(spans: dict[str, tuple[int, int]], leaves: int) -> dict[int, list[str]]:
    """Segment-tree nodes (numbered as a heap over ``leaves`` leaves) to the ids whose span covers
    them whole: the ids whose span holds message ``i`` are those at the nodes from leaf ``i`` up."""
    nodes: dict[int, list[str]] = {}
    for tool_id, (low, high) in spans.items():
        left, right = low + leaves, high + 1 + leaves
        while left < right:
            if left & 1:
                nodes.setdefault(left, []).append(tool_id)
                left += 1
            if right & 1:
                right -= 1
                nodes.setdefault(right, []).append(tool_id)
            left, right = left // 2, right // 2
    return nodes


def _settle_free(free: list[bool], where: dict[str, set[int]], incomplete: set[str]) -> None:
    """Take out of ``free`` every message of a tool id that cannot be summarised, in place.

    An id cannot be when it is incomplete, or when a message between its first and last is not free
    (one of its own, or one between them: they would not share a run of free messages). Taking an
    id's messages out can rule out the ids whose spans hold them, and so on. Each message taken out
    is followed once to the ids whose span holds it, through a segment tree whose nodes are emptied
    as they are read, rather than re-checking every id each time a message goes: that took a pass
    per link of a chain of ids. What is left is the largest set of free messages that no id rules
    out, the same set those passes reached.
    """
    leaves = 1
    while leaves < len(free):
        leaves *= 2
    nodes = _span_nodes({tool_id: (min(at), max(at)) for tool_id, at in where.items()}, leaves)
    ruled_out: set[str] = set()
    taken = [i for i, is_free in enumerate(free) if not is_free]

    def rule_out(tool_id: str) -> None:
        ruled_out.add(tool_id)
        for i in where[tool_id]:
            if free[i]:
                free[i] = False
                taken.append(i)

    for tool_id in incomplete:
        rule_out(tool_id)
    while taken:
        node = taken.pop() + leaves
        while node:
            for tool_id in nodes.pop(node, ()):
                if tool_id not in ruled_out:
                    rule_out(tool_id)
            node //= 2


def compress_groups(
    messages: Sequence[Message],
    *,
    keep_recent: int,
    protected_ids: Collection[str],
    pinned_ids: Collection[str],
    protected_call_ids: Collection[str],
    max_group_tokens: int,
    count: TokenCounter,
) -> list[range]:
    """Ranges of consecutive messages to summarise, one per group, oldest first.

    Free messages are those outside the recent window and not protected (first, system, protected,
    pinned, holding a protected call id). A tool id's messages go into one group or none: an id with
    a missing call or result, or whose messages are not all free and adjacent, keeps them out.
    Groups are cut only where no pair spans the cut, as soon as the next message would take the
    group over ``max_group_tokens``; a message above the threshold forms its own group.
    """
    protected = protected_messages(
        messages, preserve_recent=keep_recent, protected_ids=protected_ids, pinned_ids=pinned_ids
    )
    free = [i not in protected for i in range(len(messages))]
    where: dict[str, set[int]] = {}
    kinds: dict[str, list[str]] = {}
    for i, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] in ("tool_call", "tool_result"):
                where.setdefault(block["id"], set()).add(i)
                kinds.setdefault(block["id"], []).append(block["type"])
    incomplete = {tid for tid, seen in kinds.items() if sorted(seen) != ["tool_call", "tool_result"]}
    incomplete.update(set(protected_call_ids) & set(kinds))  # kept verbatim, so never summarised
    _settle_free(free, where, incomplete)

    # blocked[b]: a pair spans the cut between message b - 1 and message b.
    blocked = [0] * (len(messages) + 1)
    for at in where.values():
        low, high = min(at), max(at)
        if high > low:
            blocked[low + 1] += 1
            blocked[high + 1] -= 1
    spanning = 0
    cut_ok = []
    for b in range(len(messages)):
        spanning += blocked[b]
        cut_ok.append(spanning == 0)

    groups: list[range] = []
    start: int | None = None
    tokens = 0
    for i in range(len(messages) + 1):
        if i == len(messages) or not free[i]:
            if start is not None:
                groups.append(range(start, i))
            start, tokens = None, 0
            continue
        size = message_tokens(messages[i], count)
        if start is None:
            start, tokens = i, size
            continue
        if cut_ok[i] and tokens + size > max_group_tokens:
            groups.append(range(start, i))
            start, tokens = i, size
        else:
            tokens += size
    return groups


def oldest_within_target(
    messages: Sequence[Message],
    pairs: Sequence[Pair],
    trial: Rebuilt,
    count: TokenCounter,
    *,
    tokens: int,
    target: int,
) -> set[str]:
    """Of the results ``trial`` shortened, the keys of the oldest whose shortening brings the history
    (``tokens`` now) to ``target`` or below; all of them when together they do not."""
    chosen: set[str] = set()
    remaining = tokens
    for pair in pairs:
        if remaining <= target:
            break
        if trial.applied.get(pair.key, (Action.KEEP, ""))[0] is not Action.DROP_RESULT:
            continue
        assert pair.result_at is not None
        i, j = pair.result_at
        before = count(block_text(messages[i]["content"][j]))
        remaining -= before - count(block_text(trial.messages[i]["content"][j]))
        chosen.add(pair.key)
    return chosen


def oldest_groups(groups: Sequence[range], tokens: Sequence[int], excess: int) -> list[range]:
    """The oldest of ``groups`` whose messages (``tokens`` each) hold at least ``excess`` tokens together
    (all of them when they do not): what summarising has to take away to reach a target."""
    kept: list[range] = []
    held = 0
    for group in groups:
        if held >= excess:
            break
        kept.append(group)
        held += sum(tokens[group.start : group.stop])
    return kept
