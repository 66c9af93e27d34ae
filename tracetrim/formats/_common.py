"""Shared helpers for the format converters: metadata keys, invented ids, tool input parsing."""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from typing import Any

from tracetrim._json import digest, plain_copy, spaced_json, strict_loads
from tracetrim._marker import is_tombstone, mark_reasoned_call
from tracetrim._snapshot import Block, Message, SnapshotError, text_of_output, validate_messages

RAW = "raw"
"""Neutral block type wrapping a part a format has that the neutral form has no block for."""

BLOCK_METADATA = "tracetrim.block_metadata"
"""The key under a native tool result's own free-form metadata (a LangChain ``ToolMessage``'s
``response_metadata``) holding the neutral tool_result block's ``metadata`` (e.g. tracetrim's
shortened-result marker), so it survives neutral -> native -> neutral. Formats whose native metadata
field is the block's own (pydantic-ai ``ToolReturnPart.metadata``) need no key."""


class ValidatedHistory(list[Message]):
    """Neutral messages a runner validated and copied itself (a plan's history, an adopted one).

    The writers (`to_openai_chat`, `to_pydantic_ai`, ...) take them as they are, rather than validating
    and copying them again, which would encode the history once more. Only for a plan's own messages:
    whoever wraps them vouches that they are valid and that nothing else holds them.
    """


def neutral_input(messages: Any) -> list[Message]:
    """What a writer converts: ``messages`` validated and copied (`validate_messages`), or as they are
    when they are a `ValidatedHistory`."""
    if type(messages) is ValidatedHistory:
        return messages
    return validate_messages(messages)


def meta_key(fmt: str) -> str:
    """The key under a neutral message's ``metadata`` where format ``fmt`` keeps what it alone carries."""
    return f"tracetrim.{fmt}"


def format_meta(message: Message, fmt: str) -> dict[str, Any]:
    """The format-specific metadata of a neutral ``message`` (empty when absent)."""
    metadata = message.get("metadata")
    if isinstance(metadata, dict):
        value = metadata.get(meta_key(fmt))
        if isinstance(value, dict):
            return value
    return {}


def read_from(messages: Iterable[Message], fmt: str) -> bool:
    """Whether any of ``messages`` came from ``fmt``'s reader (a message or carrier with its metadata):
    a history that did not is from elsewhere, and a session format writes what its agent needs to load
    it."""
    return any(format_meta(message, fmt) for message in messages)


def attach_meta(message: Message, fmt: str, meta: dict[str, Any]) -> Message:
    """Store ``meta`` on ``message`` under the format's key, only when there is something to store."""
    if meta:
        message.setdefault("metadata", {})[meta_key(fmt)] = meta
    return message


def content_id(prefix: str, payload: Any, seen: dict[str, int]) -> str:
    """A deterministic id derived from ``payload``'s content, unique among ids handed out via ``seen``.

    Content rather than position keeps an id stable when earlier messages are removed by compaction.
    """
    base = f"{prefix}{digest(payload)[:16]}"
    count = seen.get(base, 0)
    seen[base] = count + 1
    return base if count == 0 else f"{base}-{count}"


def history_uuid(messages: Sequence[Message]) -> str:
    """A UUID derived from a history's ids and content: the session id a session file written from a
    history read elsewhere gets (the same each time it is written, a new one for another history)."""
    return str(uuid.UUID(hex=digest([[m.get("id"), m["content"]] for m in messages])[:32], version=4))


def derived_uuid(*parts: Any) -> str:
    """A UUID derived from ``parts`` (a session's id, a message's id and place): the id of an entry a
    writer makes for a message its format held none for."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(map(str, parts))))


def message_id(prefix: str, payload: Any, seen: dict[str, int], i: int) -> str:
    """`content_id` for the message at index ``i``; `SnapshotError` when it is not plain JSON."""
    try:
        return content_id(prefix, payload, seen)
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"not JSON-serialisable ({exc})", message=i) from None


def copied(value: Any) -> Any:
    """A private copy of a value read from a file: dicts and lists rebuilt, strings and numbers shared
    (`plain_copy`, several times faster than ``copy.deepcopy``); anything else deep-copied."""
    copy_ = plain_copy(value)
    return copy_ if copy_ is not None or value is None else copy.deepcopy(value)


def shape_of(value: Mapping[str, Any], *fields: str) -> dict[str, Any]:
    """``value`` as read, in its key order, its ``fields`` left as None (the parts a plan may change,
    which the neutral message holds): what a writer fills back in, so kept metadata carries no second
    copy of a text a plan shortened."""
    return {key: None if key in fields else copied(v) for key, v in value.items()}


def raw_block(fmt: str, value: Any) -> Block:
    """Wrap a part the neutral form cannot express so it survives a round trip through ``fmt``."""
    return {"type": RAW, "format": fmt, "value": value}


def text_parts(parts: list[Any], fmt: str) -> list[Block]:
    """Content parts as neutral blocks: a bare ``{"type": "text", "text": ...}`` part becomes a text
    block, anything else a raw block of ``fmt`` (copied) so it survives the round trip unchanged."""
    blocks: list[Block] = []
    for part in parts:
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and set(part) == {"type", "text"}
            and isinstance(part["text"], str)
        ):
            blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(raw_block(fmt, copied(part)))
    return blocks


def written_part(block: Block, fmt: str, provider: str, i: int, j: int) -> Any:
    """The content part a block of `text_parts` came from: a text block as a bare text part, a raw
    block of ``fmt`` as it was; anything else is `unsupported` by ``provider``."""
    if block["type"] == "text":
        return {"type": "text", "text": block["text"]}
    if is_raw(block, fmt):
        return copied(block["value"])
    raise unsupported(provider, block, i, j)


def result_output(
    content: Any, fmt: str, what: str, *, message: int, block: int | None = None
) -> str | list[Block]:
    """A tool result's content as the neutral output: its string, or its list of parts as blocks;
    `SnapshotError` naming ``what`` (its parts' kind: "blocks", "parts") for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_parts(content, fmt)
    raise SnapshotError(
        f"{what}'s content must be a string or a list of {'blocks' if block is not None else 'parts'}",
        message=message,
        block=block,
        field="content",
    )


def output_text(block: Block, fmt: str, i: int, j: int, *, what: str = "a tool result") -> str:
    """A tool_result block's output as the text a text-only format writes; `SnapshotError` naming the
    block when its output holds more than text (``fmt`` names the format in the message)."""
    text = text_of_output(block["output"])
    if text is None:
        raise SnapshotError(f"{what}'s output must be text for {fmt}", message=i, block=j, field="output")
    return text


def is_raw(block: Block, fmt: str) -> bool:
    """Whether ``block`` is a raw part that came from format ``fmt``."""
    return block.get("type") == RAW and block.get("format") == fmt


def dump_input(value: Any) -> str:
    """Encode a tool's arguments as the neutral JSON string (key order kept, non-ASCII kept)."""
    return spaced_json(value)


def parse_input(block: Block, i: int, j: int) -> dict[str, Any]:
    """The JSON object in a tool_call block's ``input``; `SnapshotError` when it is not one."""
    try:
        value = strict_loads(block["input"])
    except ValueError as exc:
        raise SnapshotError(
            f"tool call input is not valid JSON ({exc})", message=i, block=j, field="input"
        ) from None
    if not isinstance(value, dict):
        raise SnapshotError(
            "tool call input must be a JSON object for this format", message=i, block=j, field="input"
        )
    return value


def unsupported(fmt: str, block: Block, i: int, j: int) -> SnapshotError:
    """The error for a neutral block that format ``fmt`` cannot carry."""
    return SnapshotError(
        f"a {block.get('type')!r} block cannot be expressed in {fmt}", message=i, block=j, field="type"
    )


def extras(source: dict[str, Any], mapped: Iterable[str]) -> dict[str, Any]:
    """The fields of ``source`` a converter does not map itself, to keep in metadata."""
    skip = set(mapped)
    return {k: v for k, v in source.items() if k not in skip}


def require_sequence(value: Any, name: str, items: str) -> None:
    """A `SnapshotError` unless ``value`` is a list-like of ``items`` (a string is not)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise SnapshotError(f"{name} must be a list of {items}, got {type(value).__name__}")


def require_choice(value: Any, choices: Collection[str], *, message: int, field: str) -> str:
    """``value`` if it is one of ``choices``, else a `SnapshotError` naming the field and the choices."""
    if not isinstance(value, str) or value not in choices:
        raise SnapshotError(
            f"{field} must be one of {sorted(choices)}, got {value!r}", message=message, field=field
        )
    return value


def require_dict(
    value: Any, what: str, *, message: int, block: int | None = None, field: str | None = None
) -> dict[str, Any]:
    """``value`` if it is a dict, else a `SnapshotError` naming where it was."""
    if not isinstance(value, dict):
        raise SnapshotError(
            f"{what} must be an object, got {type(value).__name__}", message=message, block=block, field=field
        )
    return value


def require_str(
    value: Any, what: str, *, message: int, block: int | None = None, field: str | None = None
) -> str:
    """``value`` if it is a string, else a `SnapshotError` naming where it was."""
    if not isinstance(value, str):
        raise SnapshotError(
            f"{what} must be a string, got {type(value).__name__}", message=message, block=block, field=field
        )
    return value


def mark_pending(messages: list[Message]) -> list[Message]:
    """Set state ``pending`` on tool calls no later result answers (they have not run yet); in place."""
    answered: set[str] = set()
    for message in reversed(messages):
        for block in reversed(message["content"]):
            if block.get("type") == "tool_result":
                answered.add(block["id"])
            elif block.get("type") == "tool_call" and block["id"] not in answered:
                block["state"] = "pending"
    return messages


POSITION = "at"
"""The key in a message's format metadata holding where the message stood when it was read, for formats
whose provider refuses two turns of one role in a row (`join_turns`)."""


_HOST_ROLES = frozenset({"user", "tool"})


def sent_by_the_host(message: Message) -> bool:
    """Whether a reader kept that ``message``, an assistant message in the neutral form, was sent as a
    user or tool turn (``{"role": ...}`` under a ``tracetrim.*`` metadata key: an Anthropic or Bedrock
    user turn of tool results and text, say): the agent's host wrote it, not its model."""
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and any(
        key.startswith("tracetrim.") and isinstance(meta, dict) and meta.get("role") in _HOST_ROLES
        for key, meta in metadata.items()
    )


def position_of(meta: Mapping[str, Any]) -> int | None:
    """Where a message stood when read (its format metadata's `POSITION`), None when unknown."""
    position = meta.get(POSITION)
    return position if isinstance(position, int) else None


def join_turns(
    entries: list[dict[str, Any]],
    positions: Sequence[int | None],
    parts: str,
    role_of: Callable[[Mapping[str, Any]], Any] = lambda entry: entry.get("role"),
    as_parts: Callable[[Any], list[Any]] = list,
) -> list[dict[str, Any]]:
    """``entries`` (provider turns with a ``role``, in order) with same-role neighbours joined where
    something between them was removed.

    Gemini and Bedrock Converse refuse two turns of one role in a row, and a drop that empties the turn
    between two of them makes such a pair. ``positions`` says where each entry stood when read (None for
    one tracetrim added): neighbours that stood side by side stay apart, so a history written back
    unchanged is the history read. A joined turn holds both turns' ``parts`` in order and keeps the first
    turn's other fields (the second's fill in only what the first lacks). ``role_of`` reads a turn's
    role (Gemini's defaults to ``user``); ``as_parts`` a turn's parts as a list (the AI SDK's may be
    text). ``entries`` are joined in place.
    """
    out: list[dict[str, Any]] = []
    last: int | None = None
    owned = -1  # the entry of ``out`` whose parts list this function made: extended, never copied again
    for entry, position in zip(entries, positions, strict=True):
        adjacent = position is not None and last is not None and position == last + 1
        if out and role_of(out[-1]) == role_of(entry) and not adjacent:
            joined = out[-1]
            if owned != len(out) - 1:
                joined[parts] = list(as_parts(joined[parts]))
                owned = len(out) - 1
            joined[parts].extend(as_parts(entry[parts]))
            for key, value in entry.items():
                joined.setdefault(key, value)
        else:
            out.append(entry)
        last = position
    return out


def tag(value: Any) -> str | None:
    """``value`` when it is a string, else None: a ``type`` / ``role`` field to look up in a set of names,
    where a hostile file's list or object there must read as no name rather than fail the lookup."""
    return value if isinstance(value, str) else None


def listed(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one: a list field kept from a hostile file (an object
    or a number where the format has a list) reads as holding nothing rather than fail a loop."""
    return value if isinstance(value, list) else []


def recorded(block: Block, key: str) -> dict[str, Any]:
    """What a converter recorded on ``block`` under ``key`` (its format's block extras), else empty."""
    value = block.get(key)
    return value if isinstance(value, dict) else {}


def raw_value(block: Block) -> dict[str, Any]:
    """A copy of the native part a raw block carries (`raw_block`)."""
    value: dict[str, Any] = copied(block["value"])
    return value


def native_message(
    fmt: str,
    prefix: str,
    message: dict[str, Any],
    blocks: list[Block],
    meta: dict[str, Any],
    seen: dict[str, int],
    i: int,
) -> Message:
    """The neutral message for a native ``message`` (``role`` and ``content``) read as ``blocks``.

    A user turn holding tool results becomes an assistant message (AgentScope keeps results on the
    assistant side), its role kept in ``meta``; the message's other fields go in ``meta["extra"]``.
    """
    role = message["role"]
    if role == "user" and any(b["type"] == "tool_result" for b in blocks):
        role = "assistant"
        meta["role"] = "user"
    extra = extras(message, ("role", "content"))
    if extra:
        meta["extra"] = copied(extra)
    neutral = {"id": message_id(prefix, message, seen, i), "role": role, "content": blocks}
    return attach_meta(neutral, fmt, meta)


def user_and_assistant_turns(
    message: Message,
    meta: Mapping[str, Any],
    i: int,
    parts_of: Callable[[Block, int, int], list[dict[str, Any]]],
) -> list[tuple[str, list[dict[str, Any]]]]:
    """A neutral message as the turns of a provider that answers calls in a user turn (Anthropic,
    Bedrock Converse): each block's native parts (``parts_of``) in order, tool results and whatever a
    user turn sent in a ``user`` turn, the rest in an ``assistant`` turn; a tool call outside an assistant
    message is a `SnapshotError`."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_call" and message["role"] != "assistant":
            raise SnapshotError(
                "only assistant messages can hold tool calls", message=i, block=j, field="type"
            )
        user = meta.get("role") == "user" or message["role"] == "user" or block["type"] == "tool_result"
        role = "user" if user else "assistant"
        parts = parts_of(block, i, j)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, list(parts)))
    return turns


_PAIRED = ("tool_call", "tool_result")


PRECEDES_KEY = "tracetrim.precedes"
"""The ``metadata`` key of a thinking block sent right before a call (the call's id), in a turn whose
reasoning a provider receives as items of their own (OpenAI Responses reasoning items)."""


def is_thinking(block: Block) -> bool:
    """Whether ``block`` is reasoning the neutral form holds as such (a thinking block)."""
    return bool(block["type"] == "thinking")


def _next_call(blocks: Sequence[Block], k: int, reasoning: Callable[[Block], bool]) -> Block | None:
    """The block after the run of reasoning blocks at ``k`` when it is a call, else None."""
    after = next((b for b in blocks[k:] if not reasoning(b)), None)
    return after if after is not None and after["type"] == "tool_call" else None


def model_output(block: Block) -> bool:
    """Whether a block of an assistant turn is output its model wrote after its reasoning (not a tool
    result, not reasoning)."""
    return block["type"] not in ("tool_result", "thinking")


def mark_reasoning(
    blocks: Sequence[Block],
    output: Callable[[Block], bool] = model_output,
    reasoning: Callable[[Block], bool] = is_thinking,
) -> None:
    """Mark what one turn's reasoning was sent before (``blocks``, in order; the reader's own): each
    reasoning block before a call names it (`PRECEDES_KEY`, read by `reasoning_with_its_call`), and a
    call reasoning was sent right before while more of the turn's ``output`` follows is marked
    (`mark_reasoned_call`: it goes only with all the reasoning led to, the calls after it when calls
    are all there is). OpenAI refuses a reasoning item without the item it was sent before, and the
    items that followed it without it. ``output`` says which blocks the model wrote and a provider is
    sent, ``reasoning`` which blocks are its reasoning (a format that keeps its own parts raw says so)."""
    for k, block in enumerate(blocks):
        if not reasoning(block):
            continue
        call = _next_call(blocks, k, reasoning)
        if call is not None:
            block.setdefault("metadata", {})[PRECEDES_KEY] = call["id"]
    for k in range(1, len(blocks) - 1):
        if not reasoning(blocks[k - 1]) or blocks[k]["type"] != "tool_call":
            continue
        turn = itertools.takewhile(lambda b: not reasoning(b), blocks[k:])
        led = [b for b in turn if output(b)]
        if len(led) > 1:
            mark_reasoned_call(blocks[k], led)


def reasoning_with_its_call(
    blocks: Sequence[Block], reasoning: Callable[[Block], bool] = is_thinking
) -> list[Block]:
    """``blocks`` less each reasoning block whose call (`PRECEDES_KEY`) no longer follows it: reasoning
    goes with the call it was sent before."""
    out: list[Block] = []
    for k, block in enumerate(blocks):
        metadata = block.get("metadata") if reasoning(block) else None
        call = metadata.get(PRECEDES_KEY) if isinstance(metadata, dict) else None
        if call is not None:
            after = _next_call(blocks, k, reasoning)
            if after is None or after["id"] != call:
                continue
        out.append(block)
    return out


def holds_reasoning_alone(message: Message, fmt: str) -> bool:
    """Whether a drop left an assistant turn that held calls (its ``fmt`` metadata says ``called``) with
    nothing sent as its output: no call and no text, its reasoning, thinking and signatures alone.
    Reasoning goes with the output it led to: OpenAI refuses a reasoning item without its following
    item, Anthropic an empty turn, and chat servers an assistant message with neither content nor calls."""
    if message["role"] != "assistant" or not format_meta(message, fmt).get("called"):
        return False
    return not any(
        b["type"] in _PAIRED or (b["type"] == "text" and b["text"].strip()) for b in message["content"]
    )


def is_bared(message: Message) -> bool:
    """Whether a drop left ``message`` an assistant turn of text and tombstones, with no calls: a turn a
    writer joins to the next where its provider refuses two assistant turns in a row."""
    blocks = message["content"]
    return (
        message["role"] == "assistant"
        and not any(b["type"] in _PAIRED for b in blocks)
        and any(is_tombstone(b) for b in blocks)
    )


def join_bared(
    messages: Sequence[Message], called: Set[str], neighbours: Set[tuple[str, str]] | None = None
) -> list[Message]:
    """``messages`` with each assistant message that holds no tool call or result joined with the next
    message when that one is an assistant turn too, and they did not stand so when read: the first
    held tool calls then (its id in ``called``), or the two were not neighbours (their ids not a pair
    of ``neighbours``; None: every pair was).

    A dropped pair's call message keeps its text and tombstone, and the results' message goes, so two
    model turns stand side by side. Gemini refuses that ("Please ensure that multiturn requests alternate
    between user and model"), and the frameworks' Gemini mappings pass it on as it is
    (langchain-google-genai, pydantic-ai's Google model), so the second turn's blocks move to the end of
    the first and its message goes. The joined message keeps the first's id and metadata; each block
    keeps what it carries itself. A message that starts with tool results (a ``ToolMessage``, a request
    of tool returns) is not a model turn and is never joined, nor is one of another role; an AgentScope
    turn holding its calls and then their results is.
    """
    out: list[Message] = []
    paired = False  # whether the last of ``out`` holds a call or a result
    owned = False  # whether the last of ``out`` is a copy made here: a run of joins extends it in place
    for message in messages:
        previous = out[-1] if out else None
        holds_pair = any(b.get("type") in _PAIRED for b in message.get("content", ()))
        if (
            previous is not None
            and previous["role"] == "assistant"
            and not paired
            and message["role"] == "assistant"
            and message.get("content")
            and message["content"][0].get("type") != "tool_result"
            and (
                previous["id"] in called
                or (neighbours is not None and (previous["id"], message["id"]) not in neighbours)
            )
        ):
            if not owned:
                out[-1] = {**previous, "content": list(previous["content"])}
                owned = True
            out[-1]["content"].extend(message["content"])
            paired = holds_pair
            continue
        out.append(message)
        paired, owned = holds_pair, False
    return out
