"""Converters between the neutral snapshot and Gemini ``contents`` (``generateContent`` turns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._json import spaced_json
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._layout import results_apart
from tracetrim.formats._open_calls import OpenCalls
from tracetrim.formats._order import reorder

FORMAT = "gemini"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding what its Gemini part carries besides the mapped fields (a
``thoughtSignature``, a call's ``id``, the spelling it came in): it travels with the block."""
_ROLES = frozenset({"user", "model", "function"})
_ERROR_STATES = frozenset({"error", "interrupted", "denied"})
# The REST API speaks camelCase; the Python SDK's model_dump writes snake_case, and the API takes both.
_CALL = ("functionCall", "function_call")
_RESPONSE = ("functionResponse", "function_response")
_SIGNATURE = ("thoughtSignature", "thought_signature")


def is_gemini_content(item: Any) -> bool:
    """Whether ``item`` looks like one Gemini ``Content``: ``parts`` (a list of objects without a
    ``type``) and a role of ``user``, ``model`` or none; pydantic-ai's messages (``kind``) are not."""
    if not isinstance(item, dict) or not isinstance(item.get("parts"), list) or "kind" in item:
        return False
    if "content" in item or common.tag(item.get("role", "user")) not in _ROLES:
        return False
    return all(isinstance(p, dict) and "type" not in p and "part_kind" not in p for p in item["parts"])


def _key(part: Mapping[str, Any], spellings: tuple[str, str]) -> str | None:
    return next((k for k in spellings if k in part), None)


def _response_output(response: Any, i: int, j: int) -> tuple[str, dict[str, Any], str]:
    """A function response's object as the neutral output, what rebuilding it takes, and its state.

    ``{"output": text}`` (the documented key) or any one-key object whose value is text gives that text;
    ``{"error": ...}`` is an error; any other object is carried as its JSON text.
    """
    response = common.require_dict(
        response, "a functionResponse's response", message=i, block=j, field="response"
    )
    if len(response) == 1:
        ((name, value),) = response.items()
        if isinstance(value, str):
            return value, {"response_key": name}, "error" if name == "error" else "success"
    state = "error" if "error" in response else "success"
    return spaced_json(response), {"response": common.copied(response)}, state


class _Calls:
    """The calls read so far, to pair a ``functionResponse`` that has no ``id`` with its call: the
    earliest unanswered call of that name (Gemini answers a turn's calls in order)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.open = OpenCalls()
        self.seen: dict[str, int] = {}

    def call(self, part: Mapping[str, Any], name: str, args: Any) -> tuple[str, bool]:
        """The id of a ``functionCall`` (its own, or one invented from its content) and whether it was
        invented; the call waits for its response."""
        given = part.get("id")
        call_id = given if isinstance(given, str) and given else None
        invented = call_id is None
        if call_id is None:
            call_id = common.content_id("gemini-", {"name": name, "args": args}, self.seen)
        self.names[call_id] = name
        self.open.add(call_id, name)
        return call_id, invented

    def answer(self, part: Mapping[str, Any], name: str) -> tuple[str, bool]:
        """The id of the call a ``functionResponse`` answers (by id, else the earliest open call of its
        name; an orphan gets an id of its own) and whether it was invented."""
        given = part.get("id")
        if isinstance(given, str) and given:
            self.open.close_id(given)
            return given, False
        found = self.open.take_name(name)
        if found is not None:
            return found[0], True
        return common.content_id("gemini-orphan-", {"name": name}, self.seen), True


def _note_order(
    extra: dict[str, Any], part: Mapping[str, Any], inner: Mapping[str, Any], mapped: Sequence[str]
) -> None:
    """Record the key order of a part and its call or response (`reorder`'s form) where the writer's
    own would differ, so a history written back unchanged keeps its bytes."""
    key = extra["key"]
    own = [k for k in mapped if k in inner] + [k for k in inner if k not in mapped]
    if next(iter(part)) != key or list(inner) != own:
        extra["order"] = ["d", [[k, ["d", [[n, None] for n in inner]] if k == key else None] for k in part]]


def _notes(
    part: dict[str, Any], key: str, inner: dict[str, Any], mapped: Sequence[str], invented: bool
) -> dict[str, Any]:
    """What writing back a call or response part takes: its spelling, the part's and the inner object's
    other fields, whether its id was invented or its ``args`` / ``response`` absent, its key order."""
    extra: dict[str, Any] = {
        "key": key,
        "part": common.copied(common.extras(part, (key,))),
        "call": common.copied(common.extras(inner, mapped)),
    }
    if invented:
        extra["no_id"] = True
    if mapped[1] not in inner:
        extra[f"no_{mapped[1]}"] = True
    _note_order(extra, part, inner, mapped)
    return extra


def _block_from(part: Any, i: int, j: int, calls: _Calls) -> Block:
    part = common.require_dict(part, "a part", message=i, block=j)
    call_key, response_key = _key(part, _CALL), _key(part, _RESPONSE)
    if "text" in part and call_key is None and response_key is None:
        text = common.require_str(part["text"], "a part's text", message=i, block=j, field="text")
        extra = common.copied(common.extras(part, ("text", "thought")))
        thought = part.get("thought") is True
        if "thought" in part and not thought:
            extra["thought"] = part["thought"]
        block: Block = {"type": "thinking", "thinking": text} if thought else {"type": "text", "text": text}
        if extra:
            block[BLOCK_EXTRAS] = extra
        return block
    if call_key is not None:
        call = common.require_dict(part[call_key], f"a {call_key}", message=i, block=j, field=call_key)
        name = common.require_str(call.get("name"), "a call's name", message=i, block=j, field="name")
        args = call.get("args", {})
        args = common.require_dict(args, "a call's args", message=i, block=j, field="args")
        call_id, invented = calls.call(call, name, args)
        extra = _notes(part, call_key, call, ("name", "args", "id"), invented)
        return {
            "type": "tool_call",
            "id": call_id,
            "name": name,
            "input": common.dump_input(args),
            "state": "finished",
            BLOCK_EXTRAS: extra,
        }
    if response_key is not None:
        answer = common.require_dict(
            part[response_key], f"a {response_key}", message=i, block=j, field=response_key
        )
        name = common.require_str(answer.get("name"), "a response's name", message=i, block=j, field="name")
        output, rebuild, state = _response_output(answer.get("response", {}), i, j)
        call_id, invented = calls.answer(answer, name)
        extra = {**_notes(part, response_key, answer, ("name", "response", "id"), invented), **rebuild}
        return {
            "type": "tool_result",
            "id": call_id,
            "name": name,
            "output": output,
            "state": state,
            BLOCK_EXTRAS: extra,
        }
    return common.raw_block(FORMAT, common.copied(part))


def _first_signature(parts: Sequence[Any]) -> dict[str, Any] | None:
    """The signature on a turn's first functionCall part, with its spelling, when it has one."""
    for part in parts:
        if isinstance(part, dict) and _key(part, _CALL) is not None:
            spelling = _key(part, _SIGNATURE)
            return None if spelling is None else {spelling: part[spelling]}
    return None


GEMINI_SYSTEM = ("systemInstruction", "system_instruction")
"""The request field holding the system instruction, in both spellings the API takes."""


def _system_message(fields: Mapping[str, Any], seen: dict[str, int]) -> Message | None:
    """A request's ``systemInstruction`` (a Content, or text) as a neutral system message."""
    key = _key(fields, GEMINI_SYSTEM)
    if key is None or fields[key] is None:
        return None
    system = fields[key]
    meta: dict[str, Any] = {"system": key}
    if isinstance(system, str):
        blocks: list[Block] = [{"type": "text", "text": system}]
        meta["text"] = True
    elif isinstance(system, dict) and isinstance(system.get("parts"), list):
        blocks = [_block_from(part, 0, j, _Calls()) for j, part in enumerate(system["parts"])]
        if any(b["type"] not in ("text", common.RAW) for b in blocks):
            raise SnapshotError(f"{key} holds text parts only", field=key)
        extra = common.extras(system, ("parts",))
        if extra:
            meta["extra"] = common.copied(extra)
    else:
        raise SnapshotError(f"{key} must be a Content with parts, or text", field=key)
    message = {"id": common.message_id("gm-", {key: system}, seen, 0), "role": "system", "content": blocks}
    return common.attach_meta(message, FORMAT, meta)


def from_gemini(contents: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
    """Convert Gemini ``contents`` (and a request's ``systemInstruction`` among ``fields``) to neutral
    messages, one message a turn, the system instruction first as a system message.

    ``functionCall`` parts become tool calls and ``functionResponse`` parts their results (paired by
    ``id``, or in order by name where Gemini sent none; invented ids are not written back). A result's
    ``{"output": text}`` becomes its text; other response objects are carried as their JSON text. Thought
    parts become thinking; signatures, ids and unknown parts ride along unchanged. A turn holding
    function responses becomes an assistant message (AgentScope keeps results on the assistant side).
    """
    common.require_sequence(contents, "contents", "Content objects")
    seen: dict[str, int] = {}
    calls = _Calls()
    system = _system_message(fields or {}, seen)
    out: list[Message] = [] if system is None else [system]
    for i, content in enumerate(contents):
        content = common.require_dict(content, "a content", message=i)
        role = content.get("role", "user")
        if common.tag(role) not in _ROLES:
            raise SnapshotError(f"role must be 'user' or 'model', got {role!r}", message=i, field="role")
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise SnapshotError("parts must be a list of parts", message=i, field="parts")
        blocks = [_block_from(part, i, j, calls) for j, part in enumerate(parts)]
        meta: dict[str, Any] = {common.POSITION: i, "role": role}
        if "role" not in content:
            meta["no_role"] = True
        signature = _first_signature(parts)
        if signature is not None:
            meta["signature"] = common.copied(signature)
        extra = common.extras(content, ("role", "parts"))
        if extra:
            meta["extra"] = common.copied(extra)
        answers = any(b["type"] == "tool_result" for b in blocks)
        neutral_role = "assistant" if role == "model" or answers else "user"
        message = {"id": common.message_id("gm-", content, seen, i), "role": neutral_role, "content": blocks}
        out.append(common.attach_meta(message, FORMAT, meta))
    return common.mark_pending(out)


def _function_part(block: Block, extra: Mapping[str, Any], key: str, body: dict[str, Any]) -> dict[str, Any]:
    """A ``functionCall`` / ``functionResponse`` part from its ``body`` (``args`` or ``response``): the
    name, the id unless it was invented, the fields and spelling it came with, in its key order."""
    inner: dict[str, Any] = {"name": block["name"], **body}
    if not extra.get("no_id"):
        inner["id"] = block["id"]
    inner.update(common.copied(extra.get("call", {})))
    part = {str(extra.get("key", key)): inner, **common.copied(extra.get("part", {}))}
    ordered: dict[str, Any] = reorder(part, extra.get("order"))
    return ordered


def _response(block: Block, extra: Mapping[str, Any], i: int, j: int) -> dict[str, Any]:
    output = block["output"]
    if not isinstance(output, str):
        raise common.unsupported("Gemini function responses", block, i, j)
    original = extra.get("response")
    if isinstance(original, dict) and spaced_json(original) == output:
        return dict(common.copied(original))
    if block.get("state", "success") in _ERROR_STATES:
        return {"error": output}
    key = extra.get("response_key", "output")
    return {"output" if key == "error" else str(key): output}


def _part(block: Block, i: int, j: int) -> dict[str, Any]:
    extra = common.recorded(block, BLOCK_EXTRAS)
    kind = block["type"]
    if common.is_raw(block, FORMAT):
        return common.raw_value(block)
    if kind in ("text", "thinking"):
        part: dict[str, Any] = {"text": block["text" if kind == "text" else "thinking"]}
        if kind == "thinking":
            part["thought"] = True
        part.update(common.copied(extra))
        return part
    if kind == "tool_call":
        args = {} if extra.get("no_args") else {"args": common.parse_input(block, i, j)}
        return _function_part(block, extra, _CALL[0], args)
    if kind == "tool_result":
        absent = extra.get("no_response") and block["output"] == ""
        response = {} if absent else {"response": _response(block, extra, i, j)}
        return _function_part(block, extra, _RESPONSE[0], response)
    raise common.unsupported("Gemini contents", block, i, j)


def _keep_signature(parts: list[dict[str, Any]], signature: Any) -> None:
    """Gemini refuses a turn whose first functionCall lost the thought signature the turn was sent with,
    so when the signed call went, the signature moves to the first call that is left."""
    if not isinstance(signature, dict):
        return
    first = next((p for p in parts if _key(p, _CALL) is not None), None)
    if first is not None and _key(first, _SIGNATURE) is None:
        first.update(common.copied(signature))


def _system_field(messages: Sequence[Message]) -> dict[str, Any]:
    """Leading system messages as the request's ``systemInstruction`` (in the spelling it came in)."""
    if not messages:
        return {}
    meta = common.format_meta(messages[-1], FORMAT)
    parts = [_part(b, i, j) for i, m in enumerate(messages) for j, b in enumerate(m["content"])]
    if meta.get("text") and len(messages) == 1 and len(parts) == 1 and set(parts[0]) == {"text"}:
        return {str(meta["system"]): parts[0]["text"]}
    return {
        str(meta.get("system", GEMINI_SYSTEM[0])): {"parts": parts, **common.copied(meta.get("extra", {}))}
    }


def to_gemini(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages to Gemini request fields: ``{"systemInstruction": ..., "messages":
    [Content, ...]}`` (``systemInstruction`` only when the history starts with system messages).

    Each message becomes one turn (its role as read; ``model`` for assistant text, ``user`` for results and
    user text). Turns of one role that a removal brought together are joined (Gemini refuses two in a
    row), and a turn's first call keeps the signature the turn had.
    """
    neutral = results_apart(common.neutral_input(messages))  # a result beside its call: a turn of its own
    start = 0
    while start < len(neutral) and neutral[start]["role"] == "system":
        start += 1
    entries: list[dict[str, Any]] = []
    positions: list[int | None] = []
    for i, message in enumerate(neutral[start:], start):
        if message["role"] == "system":
            raise SnapshotError(
                "Gemini carries system text in systemInstruction, before the contents",
                message=i,
                field="role",
            )
        meta = common.format_meta(message, FORMAT)
        parts = [_part(block, i, j) for j, block in enumerate(message["content"])]
        results = any(b["type"] == "tool_result" for b in message["content"])
        role = meta.get("role") or ("user" if message["role"] == "user" or results else "model")
        _keep_signature(parts, meta.get("signature"))
        entry: dict[str, Any] = {} if meta.get("no_role") else {"role": role}
        entry["parts"] = parts
        entry.update(common.copied(meta.get("extra", {})))
        entries.append(entry)
        positions.append(common.position_of(meta))
    joined = common.join_turns(entries, positions, "parts", role_of=turn_role)
    return {**_system_field(neutral[:start]), "messages": joined}


def turn_role(content: Mapping[str, Any]) -> str:
    """A content's role (Gemini reads one without a role as the user's)."""
    return str(content.get("role", "user"))
