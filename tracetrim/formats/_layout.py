"""Where a history keeps each tool result: in its call's message, or in a message of its own.

The neutral form allows both. AgentScope keeps a call and its result in one message; chat formats (and
the readers of them) put the result in a message after the call's. A writer whose format has one place
for results gets a history of the other layout when it writes what it did not read: `tracetrim restore
--format NAME` of a snapshot archived from another format. Two pure functions move the results
to where the writer's format keeps them; a message its format read already has them there, and comes
through unchanged. `one_result_each` cuts a results turn into one message a result, for formats that
keep each result in an entry of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracetrim._snapshot import Block, Message


def results_apart(messages: Sequence[Message], *, only_results: bool = False) -> list[Message]:
    """``messages`` with each run of tool results that follows other blocks of its message (a call's
    result kept beside the call) moved to a message of its own right after them.

    The part before a run keeps the message's id and metadata; each later part is a message of the same
    role with the id ``<id>~<n>``. A message that starts with results (a chat format's results turn,
    perhaps followed by the user's text) is left whole, unless ``only_results`` (for a format whose
    results message holds nothing else): then what follows its results is cut off too.
    """
    out: list[Message] = []
    for message in messages:
        parts = _parts(message["content"], only_results)
        if len(parts) == 1:
            out.append(message)
            continue
        out.append({**message, "content": parts[0]})
        base = {k: v for k, v in message.items() if k not in ("id", "content", "metadata")}
        for n, part in enumerate(parts[1:], 1):
            out.append({**base, "id": f"{message.get('id', '')}~{n}", "content": part})
    return out


def _parts(blocks: list[Block], only_results: bool) -> list[list[Block]]:
    """``blocks`` cut wherever results start or stop (unless ``only_results``, whole when the first block
    is a result)."""
    if not blocks or (blocks[0].get("type") == "tool_result" and not only_results):
        return [blocks]
    parts: list[list[Block]] = []
    for block in blocks:
        is_result = block.get("type") == "tool_result"
        if not parts or (parts[-1][-1].get("type") == "tool_result") != is_result:
            parts.append([])
        parts[-1].append(block)
    return parts


def results_beside(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each tool result that answers a call of an earlier message moved to the end of
    that call's message (in the order the results came); a message the move leaves empty goes."""
    home: dict[str, int] = {}
    for n, message in enumerate(messages):
        for block in message["content"]:
            if block.get("type") == "tool_call" and isinstance(block.get("id"), str):
                home.setdefault(block["id"], n)
    moved: dict[int, list[Block]] = {}
    kept: list[list[Block]] = []
    for n, message in enumerate(messages):
        blocks: list[Block] = []
        for block in message["content"]:
            at = home.get(block.get("id", "")) if block.get("type") == "tool_result" else None
            if at is not None and at < n:
                moved.setdefault(at, []).append(block)
            else:
                blocks.append(block)
        kept.append(blocks)
    if not moved:
        return list(messages)
    out: list[Message] = []
    for n, message in enumerate(messages):
        blocks = kept[n] + moved.get(n, [])
        if blocks or not message["content"]:
            out.append({**message, "content": blocks} if blocks != message["content"] else message)
    return out


def one_result_each(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each message of several tool results (a chat layout's results turn) cut into
    one message a result, for agents that keep each result in an entry of its own (pi, Qwen Code); the
    first keeps the message's id and metadata, each later one the id ``<id>~<n>``."""
    out: list[Message] = []
    for message in messages:
        blocks = message["content"]
        if len(blocks) < 2 or not all(b["type"] == "tool_result" for b in blocks):
            out.append(message)
            continue
        out.append({**message, "content": blocks[:1]})
        base = {k: v for k, v in message.items() if k not in ("id", "content", "metadata")}
        out += [{**base, "id": f"{message['id']}~{n}", "content": [b]} for n, b in enumerate(blocks[1:], 1)]
    return out
