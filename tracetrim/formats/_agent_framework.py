"""Converters between the neutral snapshot and Microsoft Agent Framework messages (``Message.to_dict()``).

Shape, from ``agent_framework``'s ``Message`` and ``Content``: ``{"type": "message", "role": "system" |
"user" | "assistant" | "tool", "contents": [...], "message_id", "author_name", "additional_properties"}``.
An assistant message's ``function_call`` contents (``call_id``, ``name``, ``arguments`` as an object or
its JSON text) are answered by ``function_result`` contents in a following ``tool`` message: ``result``
is the text of the result's ``items`` (the tool's output as content items), ``exception`` says it failed.
``text_reasoning`` contents are the model's reasoning, which the Responses API sends as ``reasoning``
items that must stand right before the item they led to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._json import digest
from tracetrim._marker import is_tombstone
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._layout import results_apart

FORMAT = "agent_framework"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding what writing it back takes: its place in its message, the marks it
was read with, and its content as sent (a call's or reasoning's whole; a text's or result's without the
text a plan may shorten, which the block itself holds)."""
_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "assistant"}
EXCLUDED_KEY = "_excluded"
"""Agent Framework's mark (in a message's ``additional_properties``) of a message its compaction left out."""
GROUP_KEY = "_group"
"""Agent Framework's compaction annotation of a message: its group, and its token count."""
_MESSAGE = "\x00tracetrim.message"
"""Where an entry's neutral message stood, while turns are joined (a key no message holds)."""
_OWN_FIELDS = frozenset({"type", "additional_properties"})
"""Fields every content may carry besides what makes it the content it is."""


def is_agent_framework_message(message: Any) -> bool:
    """Whether ``message`` is an Agent Framework message dict: a ``role`` and a list of ``contents``
    (the providers' messages have ``content``)."""
    return (
        isinstance(message, dict)
        and isinstance(message.get("contents"), list)
        and isinstance(message.get("role"), str)
        and "content" not in message
    )


SESSION_HISTORY = "in_memory"
"""The ``state`` key of the history Agent Framework keeps by default (``InMemoryHistoryProvider``)."""


def _session_histories(document: Mapping[str, Any]) -> list[str]:
    """The ``state`` keys of a serialized ``AgentSession`` that hold a message history (``{"messages":
    [...]}``, what an ``InMemoryHistoryProvider`` of that source id keeps)."""
    state = document.get("state")
    if document.get("type") != "session" or not isinstance(state, dict):
        return []
    return [
        key
        for key, value in state.items()
        if isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and all(is_agent_framework_message(m) for m in value["messages"])
    ]


def is_agent_framework_session(document: Any) -> bool:
    """Whether ``document`` is an ``AgentSession.to_dict()`` holding a history of Agent Framework messages."""
    return isinstance(document, dict) and bool(_session_histories(document))


def session_path(document: Mapping[str, Any]) -> tuple[str, ...]:
    """Where a serialized ``AgentSession`` keeps the object holding its ``messages``: ``("state",
    "in_memory")`` by default, or the one history provider's key; ``()`` for anything else (the file
    is the object). A session with several histories and none the default one names them."""
    keys = _session_histories(document)
    if not keys:
        return ()
    if SESSION_HISTORY in keys or len(keys) == 1:
        return ("state", SESSION_HISTORY if SESSION_HISTORY in keys else keys[0])
    named = ", ".join(map(repr, keys))
    raise SnapshotError(
        f"an Agent Framework session with {len(keys)} message histories (state keys {named}) and none "
        f"under {SESSION_HISTORY!r}: pass the one to compact as its own file"
    )


def _text_items(items: Any) -> bool:
    """Whether a result's ``items`` are all plain text items (the usual tool output)."""
    return isinstance(items, list) and all(
        isinstance(item, dict)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
        and set(item) <= _OWN_FIELDS | {"text"}
        for item in items
    )


def _block_metadata(content: Mapping[str, Any]) -> dict[str, Any] | None:
    """The neutral block metadata a writer left in a content's ``additional_properties``."""
    extra = content.get("additional_properties")
    metadata = extra.get(common.BLOCK_METADATA) if isinstance(extra, dict) else None
    return common.copied(metadata) if isinstance(metadata, dict) else None


def _items_shape(items: Any, result: str) -> dict[str, Any]:
    """How a result's text items are written back: absent, one item around the result's text, or (any
    other text items) the items as sent while the result is unchanged."""
    if items is None:
        return {"absent": True}
    if len(items) == 1 and items[0]["text"] == result:
        return {"one": common.shape_of(items[0], "text")}
    return {"many": common.copied(items)}


def _content(content: Any, i: int, j: int, names: dict[str, str]) -> Block:
    """One content as a neutral block; what the neutral form has no block for is carried raw."""
    content = common.require_dict(content, "a content", message=i, block=j)
    kind = content.get("type")
    block: Block
    extras: dict[str, Any] = {"at": j}
    if kind == "text" and isinstance(content.get("text"), str):
        block = {"type": "text", "text": content["text"]}
        extras["shape"] = common.shape_of(content, "text")
    elif kind == "text_reasoning":
        text = content.get("text")
        block = {"type": "thinking", "thinking": text if isinstance(text, str) else ""}
        extras["sent"] = common.copied(content)  # never changed: written back as it came
    elif kind == "function_call" and isinstance(content.get("call_id"), str) and content["call_id"]:
        name = common.require_str(content.get("name"), "a name", message=i, block=j, field="name")
        arguments = content.get("arguments")
        text = arguments if isinstance(arguments, str) else common.dump_input(arguments or {})
        names[content["call_id"]] = name
        block = {"type": "tool_call", "id": content["call_id"], "name": name, "input": text}
        block["state"] = "finished"
        extras["sent"] = common.copied(content)  # never changed: written back as it came
    elif kind == "function_result" and isinstance(content.get("call_id"), str):
        call_id = content["call_id"]
        result = content.get("result")
        items = content.get("items")
        output: str | list[Block]
        if isinstance(result, str) and (items is None or _text_items(items)):
            output = result
            extras["shape"] = common.shape_of(content, "result", "items")
            extras["items"] = _items_shape(items, result)
        else:  # images or data among the items: never shortened, written back as sent
            output = [common.raw_block(FORMAT, common.copied(content))]
        failed = content.get("exception") is not None or content.get("status") == "error"
        block = {
            "type": "tool_result",
            "id": call_id,
            "name": names.get(call_id, ""),
            "output": output,
            "state": "error" if failed else "success",
        }
    else:
        return common.raw_block(FORMAT, common.copied(content))
    metadata = _block_metadata(content)
    if metadata is not None:
        block["metadata"] = metadata
    block[BLOCK_EXTRAS] = extras
    return block


def _excluded(message: Mapping[str, Any]) -> bool:
    """Whether Agent Framework's own compaction left ``message`` out of what it sends."""
    extra = message.get("additional_properties")
    return isinstance(extra, dict) and extra.get(EXCLUDED_KEY) is True


def from_agent_framework(messages: Sequence[Any]) -> list[Message]:
    """Convert Agent Framework message dicts to neutral messages, one each.

    A message's id is its ``message_id`` (when it has one no earlier message took), else one derived
    from its content; a ``tool`` message becomes an assistant message of results (AgentScope keeps
    results on the assistant side); every field the neutral form has no place for rides along. A
    message Agent Framework's own compaction excluded (``additional_properties["_excluded"]``) is not
    sent, so it is kept in place, not judged.
    """
    common.require_sequence(messages, "messages", "message objects")
    names: dict[str, str] = {}
    seen: dict[str, int] = {}
    used: set[str] = set()
    run = CarrierRun(FORMAT, seen)
    live = 0
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        contents = message.get("contents")
        if not isinstance(contents, list):
            raise SnapshotError("contents must be a list of contents", message=i, field="contents")
        if _excluded(message):
            run.hold(common.copied(message))
            continue
        blocks = [_content(content, i, j, names) for j, content in enumerate(contents)]
        common.mark_reasoning(blocks)
        for block in blocks:  # what a plan changes, it marks: a block whose marks are these is as read
            if "metadata" in block and BLOCK_EXTRAS in block:
                block[BLOCK_EXTRAS]["marked"] = common.copied(block["metadata"])
        meta: dict[str, Any] = {
            common.POSITION: live,  # where it stood among the messages sent
            "role": role,
            "message": _shell(message),
            "count": len(contents),
        }
        live += 1
        own = message.get("message_id")
        if isinstance(own, str) and own and own not in used:
            message_id = own
        else:
            message_id = common.message_id("af-", message, seen, i)
        used.add(message_id)
        run.add(common.attach_meta({"id": message_id, "role": _ROLES[role], "content": blocks}, FORMAT, meta))
    return common.mark_pending(run.messages())


def _shell(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message's fields as sent, in order, its contents left out (their key kept in its place)."""
    return {key: None if key == "contents" else common.copied(value) for key, value in message.items()}


def _with_metadata(content: dict[str, Any], block: Block) -> dict[str, Any]:
    """``content`` carrying ``block``'s neutral metadata (tracetrim's marks) in its
    ``additional_properties``, which Agent Framework never sends to a model."""
    metadata = block.get("metadata")
    if not metadata:
        return content
    extra = content.get("additional_properties")
    extra = dict(extra) if isinstance(extra, dict) else {}
    extra[common.BLOCK_METADATA] = common.copied(metadata)
    return {**content, "additional_properties": extra}


def _as_read(block: Block) -> bool:
    """Whether ``block`` is as it was read (a plan marks what it changes; a tombstone is a new block)."""
    extras = common.recorded(block, BLOCK_EXTRAS)
    return "at" in extras and block.get("metadata") == extras.get("marked")


def _filled(shape: Any, **fields: Any) -> dict[str, Any]:
    """``shape`` (`_shape`) with ``fields`` in their places."""
    return {key: fields.get(key, value) for key, value in shape.items()} if isinstance(shape, dict) else {}


def _write_content(block: Block, i: int, j: int) -> dict[str, Any]:
    """The content a neutral block stands for: the one it was read from while unchanged."""
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    extras = common.recorded(block, BLOCK_EXTRAS)
    kind = block["type"]
    sent = extras.get("sent")
    if kind in ("thinking", "tool_call") and isinstance(sent, dict):
        return dict(common.copied(sent))
    if kind == "text":
        content = _filled(extras.get("shape"), text=block["text"]) or {"type": "text", "text": block["text"]}
        return content if _as_read(block) else _with_metadata(content, block)
    if kind == "thinking":
        return {"type": "text_reasoning", "text": block["thinking"]}
    if kind == "tool_call":
        arguments = common.parse_input(block, i, j)
        return {
            "type": "function_call",
            "call_id": block["id"],
            "name": block["name"],
            "arguments": arguments,
        }
    if kind == "tool_result":
        return _result(block, extras, i, j)
    raise common.unsupported("Agent Framework messages", block, i, j)


def _result(block: Block, extras: Mapping[str, Any], i: int, j: int) -> dict[str, Any]:
    output = block["output"]
    if not isinstance(output, str):
        if len(output) != 1 or not common.is_raw(output[0], FORMAT):
            raise common.unsupported("Agent Framework function results", block, i, j)
        return common.raw_value(output[0])
    items = extras.get("items")
    items = items if isinstance(items, dict) else {"one": {"type": "text", "text": None}}
    written: list[dict[str, Any]] | None
    if "many" in items:
        written = common.copied(items["many"]) if _as_read(block) else [{"type": "text", "text": output}]
    else:
        written = None if "absent" in items else [_filled(items.get("one"), text=output)]
    content = _filled(extras.get("shape"), result=output, items=written) or {
        "type": "function_result",
        "call_id": block["id"],
        "result": output,
        "items": written,
    }
    if written is None:
        content.pop("items", None)
    if _as_read(block):
        return content
    if block.get("state") in ("error", "interrupted", "denied") and content.get("exception") is None:
        content["exception"] = "error"
    return _with_metadata(content, block)


def _unchanged(blocks: Sequence[Block], contents: Sequence[dict[str, Any]], meta: Mapping[str, Any]) -> bool:
    """Whether ``contents`` are the message's contents as read, every one in its place."""
    return meta.get("count") == len(contents) == len(blocks) and all(
        common.is_raw(block, FORMAT) or (_as_read(block) and common.recorded(block, BLOCK_EXTRAS)["at"] == j)
        for j, block in enumerate(blocks)
    )


def _renewed(entry: dict[str, Any]) -> None:
    """``entry``, whose contents changed, under an id of its own and without Agent Framework's
    compaction annotation (its group and token count are for the contents it no longer holds)."""
    old = entry.get("message_id")
    if isinstance(old, str):
        entry["message_id"] = f"{old.split('~tt', 1)[0]}~tt{digest(entry['contents'])[:8]}"
    extra = entry.get("additional_properties")
    if isinstance(extra, dict) and GROUP_KEY in extra:
        entry["additional_properties"] = {k: v for k, v in extra.items() if k != GROUP_KEY}


def _entry(message: Message, i: int) -> tuple[dict[str, Any], bool] | None:
    """The message dict a live neutral message stands for, and whether its contents are the ones read
    (None: a plan left it with no content)."""
    meta = common.format_meta(message, FORMAT)
    shell = meta.get("message")
    shell = shell if isinstance(shell, dict) else {}
    blocks = common.reasoning_with_its_call(message["content"])
    if message["content"] and not blocks:
        return None
    contents = [_write_content(block, i, j) for j, block in enumerate(blocks)]
    results = any(b["type"] == "tool_result" for b in blocks)
    role = meta.get("role")
    entry = common.copied(shell) if shell else {"role": None, "contents": None}
    entry["role"] = role if isinstance(role, str) else ("tool" if results else message["role"])
    entry["contents"] = contents
    return entry, _unchanged(blocks, contents, meta)


def _is_tombstone(content: Mapping[str, Any]) -> bool:
    """Whether a written content is a tombstone (by the mark it carries, or its text)."""
    extra = content.get("additional_properties")
    metadata = extra.get(common.BLOCK_METADATA) if isinstance(extra, dict) else None
    return content.get("type") == "text" and is_tombstone(
        {"type": "text", "text": content.get("text"), **({"metadata": metadata} if metadata else {})}
    )


def _notes_first(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``contents`` with each tombstone after the first call moved before the call and the reasoning
    that led to it: Agent Framework's chat-completions client makes text after a call a message of its
    own, which would stand between the call and its result."""
    first = next((k for k, c in enumerate(contents) if c.get("type") == "function_call"), None)
    if first is None or not any(_is_tombstone(c) for c in contents[first:]):
        return contents
    start = first
    while start and contents[start - 1].get("type") == "text_reasoning":
        start -= 1
    after = contents[first:]
    notes = [c for c in after if _is_tombstone(c)]
    return contents[:start] + notes + contents[start:first] + [c for c in after if not _is_tombstone(c)]


def to_agent_framework(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages to Agent Framework message dicts: ``{"messages": [...]}``.

    Results go to a ``tool`` message; a kept content is written as it was read; a reasoning content
    goes with the content it stood before; a message a plan left with no content goes (one read
    without any stays), and turns of one role that a removal brought together are joined, as the
    providers behind Agent Framework want alternating turns; a tombstone stands before the calls of its
    message, never after one (`_notes_first`). A message whose contents changed gets a
    ``message_id`` of its own (``<id>~tt<hash>``) and loses Agent Framework's compaction annotation
    (its group and token count, which Agent Framework makes again): Agent Framework names its groups
    after message ids, and the message read under the old id still stands in the session it came from.
    Excluded messages come back where they were.
    """
    neutral = results_apart(common.neutral_input(messages), only_results=True)
    values = [carried(message, FORMAT) for message in neutral]
    entries: list[dict[str, Any]] = []
    positions: list[int | None] = []
    changed: set[int] = set()
    for i, message in enumerate(neutral):
        if values[i] is not None:
            continue
        written = _entry(message, i)
        if written is not None:
            entry, unchanged = written
            if not unchanged:
                changed.add(i)
            entries.append({**entry, _MESSAGE: i})  # a joined entry keeps its first message's place
            positions.append(common.position_of(common.format_meta(message, FORMAT)))
    counts = {entry[_MESSAGE]: len(entry["contents"]) for entry in entries}
    at = {entry.pop(_MESSAGE): entry for entry in common.join_turns(entries, positions, "contents")}
    out: list[Any] = []
    for i, value in enumerate(values):
        if value is not None:
            out.extend(value)
        elif i in at:
            if i in changed or len(at[i]["contents"]) != counts[i]:  # changed, or joined to the next
                at[i]["contents"] = _notes_first(at[i]["contents"])
                _renewed(at[i])
            out.append(at[i])
    return {"messages": out}
