"""Converters between neutral messages and Continue sessions (``~/.continue/sessions/<id>.json``).

Shape, from Continue's ``core/index.d.ts`` (``Session``, ``ChatHistoryItem``, ``ToolCallState``) as its
CLI (``cn``) and IDE extensions save it: ``{"sessionId", "title", "workspaceDirectory", "history": [...],
"usage"}``. Each history item is ``{"message": {"role", "content", ...}, "contextItems": [...], ...}``.
An assistant message's ``toolCalls`` are answered inside the same item: its ``toolCallStates`` hold each
call's ``status`` and ``output`` (context items ``{"content", "name", "description"}``), which Continue
sends after the assistant message as one ``tool`` message per state, the items' contents joined. A
user item's ``contextItems`` are sent before its text; ``thinking`` items as assistant text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._json import strict_loads
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried

FORMAT = "continue"
_ITEM = "item"
"""Format metadata of a message read from an item: the item as read, its text (and calls) left out."""
_STATES = "states"
"""Format metadata of an assistant item's message: its ``toolCallStates`` as read, each single output's
content left out (the result block holds it)."""
_UNMATCHED = "unmatched"
"""Format metadata of an assistant item's message: states whose call its message does not hold."""
_TOOL = "tool"
"""Format metadata marking a message read from a ``tool`` item (older sessions kept each result so)."""
_RESULTS = "results"
"""Format metadata marking the message that holds an assistant item's results."""
OBSERVING_TOOLS = (
    # the CLI's
    "Read",
    "List",
    "Bash",
    "Fetch",
    "Write",
    "Edit",
    "MultiEdit",
    # the IDE extensions'
    "read_file",
    "read_file_range",
    "read_currently_open_file",
    "ls",
    "view_subdirectory",
    "view_repo_map",
    "view_diff",
    "run_terminal_command",
    "grep_search",
    "file_glob_search",
    "codebase",
    "search_web",
    "fetch_url_content",
    "create_new_file",
    "edit_existing_file",
    "single_find_and_replace",
    "multi_edit",
)
"""Continue's built-in tools whose results are observations: what tracetrim judges by default. Its
question, checklist, skill and rule tools are left alone (what they return is the user's or the rules')."""
_NEW_OUTPUT = {"name": "Tool Result", "description": "Tool execution result"}
"""The context item Continue's CLI makes of a tool's output (content aside)."""


def is_continue_item(item: Any) -> bool:
    """Whether ``item`` is a Continue history item: a ``message`` object with a string ``role`` and a
    list of ``contextItems``."""
    return (
        isinstance(item, dict)
        and isinstance(item.get("message"), dict)
        and isinstance(item["message"].get("role"), str)
        and isinstance(item.get("contextItems"), list)
    )


def is_continue_history(items: Sequence[Any]) -> bool:
    """Whether ``items`` (a session's ``history``) are Continue history items, and at least one."""
    return bool(items) and all(is_continue_item(item) for item in items)


def _item_shape(item: Mapping[str, Any], message: Mapping[str, Any], *fields: str) -> dict[str, Any]:
    """An item as kept in metadata: its message's ``content`` and the item's ``fields`` left out (what a
    plan may change, which the neutral message holds)."""
    return {**common.shape_of(item, "message", *fields), "message": common.shape_of(message, "content")}


def _text_blocks(content: Any, i: int, meta: dict[str, Any]) -> list[Block]:
    """A message's ``content`` (a string or a list of parts) as neutral blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        meta["parts"] = True
        return common.text_parts(content, FORMAT)
    raise SnapshotError("content must be a string or a list of parts", message=i, field="content")


def _call(call: Any, i: int) -> Block:
    """One of a message's ``toolCalls`` as a tool_call block (its arguments the JSON text sent)."""
    call = common.require_dict(call, "a tool call", message=i, field="toolCalls")
    function = common.require_dict(
        call.get("function"), "a tool call's function", message=i, field="toolCalls"
    )
    call_id = common.require_str(call.get("id"), "a tool call id", message=i, field="toolCalls")
    if not call_id:
        raise SnapshotError("a tool call id must not be empty", message=i, field="toolCalls")
    name = common.require_str(
        function.get("name"), "a tool call's function name", message=i, field="toolCalls"
    )
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        raise SnapshotError("a tool call's arguments must be a string", message=i, field="toolCalls")
    return {"type": "tool_call", "id": call_id, "name": name, "input": arguments, "state": "finished"}


def _single_text(output: Any, *, shape: bool = False) -> bool:
    """Whether a state's ``output`` is one context item of text: the result a plan may shorten (with
    ``shape``, one as kept in metadata, its text left out)."""
    return (
        isinstance(output, list)
        and len(output) == 1
        and isinstance(output[0], dict)
        and (shape or isinstance(output[0].get("content"), str))
    )


def _result(state: dict[str, Any], name: str) -> tuple[Block, dict[str, Any]]:
    """A state's result block, and the state as kept in metadata (a single output's text left out)."""
    output = state.get("output")
    failed = state.get("status") == "errored"
    block: Block = {"type": "tool_result", "id": state["toolCallId"], "name": name}
    block["state"] = "error" if failed else "success"
    if isinstance(output, list) and _single_text(output):
        block["output"] = output[0]["content"]
        kept = {**common.shape_of(state, "output"), "output": [common.shape_of(output[0], "content")]}
        return block, kept
    # several items, images, a cancelled call's missing output: sent as they are, never shortened
    block["output"] = [common.raw_block(FORMAT, common.copied(output))]
    return block, common.copied(state)


def _assistant(
    item: dict[str, Any], message: dict[str, Any], i: int, seen: dict[str, int], answered: set[str]
) -> tuple[list[Message], dict[str, str]]:
    """An assistant item as its turn (text and calls) and, when it has results, their message; and the
    names of its calls (``answered`` gains those its states answer)."""
    meta: dict[str, Any] = {}
    blocks = _text_blocks(message.get("content", ""), i, meta)
    calls = message.get("toolCalls")
    if calls is not None and not isinstance(calls, list):
        raise SnapshotError("toolCalls must be a list", message=i, field="toolCalls")
    names: dict[str, str] = {}
    for call in calls or ():
        block = _call(call, i)
        names[block["id"]] = block["name"]
        blocks.append(block)
    states = item.get("toolCallStates")
    if states is not None and not isinstance(states, list):
        raise SnapshotError("toolCallStates must be a list", message=i, field="toolCallStates")
    results: list[Block] = []
    kept: list[dict[str, Any]] = []
    unmatched: list[Any] = []
    for state in states or ():
        state = common.require_dict(state, "a tool call state", message=i, field="toolCallStates")
        call_id = state.get("toolCallId")
        if isinstance(call_id, str) and call_id in names:
            block, shape = _result(state, names[call_id])
            answered.add(call_id)
            results.append(block)
            kept.append(shape)
        else:  # a state whose call is not in the message: Continue sends none of it; kept as it is
            unmatched.append(common.copied(state))
    meta[_ITEM] = _item_shape(item, message, "toolCallStates")
    meta[_STATES] = kept
    if unmatched:
        meta[_UNMATCHED] = unmatched
    turn = common.attach_meta(
        {"id": common.message_id("ct-", item, seen, i), "role": "assistant", "content": blocks}, FORMAT, meta
    )
    if not results:
        return [turn], names
    answers: Message = {"id": f"{turn['id']}-results", "role": "assistant", "content": results}
    return [turn, common.attach_meta(answers, FORMAT, {_RESULTS: True})], names


def _tool(item: dict[str, Any], message: dict[str, Any], i: int, seen: dict[str, int], name: str) -> Message:
    """A ``tool`` item (how older sessions kept a result) as a message holding its result."""
    call_id = message["toolCallId"]
    output = common.result_output(message.get("content"), FORMAT, "a tool item", message=i)
    block: Block = {"type": "tool_result", "id": call_id, "name": name, "output": output, "state": "success"}
    meta = {
        _TOOL: True,
        _ITEM: _item_shape(item, message),
    }
    neutral: Message = {
        "id": common.message_id("ct-", item, seen, i),
        "role": "assistant",
        "content": [block],
    }
    return common.attach_meta(neutral, FORMAT, meta)


def from_continue(items: Sequence[Any]) -> list[Message]:
    """Convert a Continue session's ``history`` to neutral messages.

    A user or system item is one message (its ``contextItems`` and other fields ride along); an
    assistant item is its turn (text and ``toolCalls``) followed, when its calls have states, by a
    message of their results (each state's output; one context item of text is the result a plan may
    shorten, any other output is kept as it is). A ``tool`` item answering a call no state answered (how
    older sessions kept results) is a message holding that result. Thinking items, and items of a role
    Continue adds later, are carried in place, never judged. Ids are derived from each item's content.
    """
    common.require_sequence(items, "a Continue session's history", "items")
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    names: dict[str, str] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        item = common.require_dict(item, "a history item", message=i)
        message = common.require_dict(item.get("message"), "an item's message", message=i, field="message")
        role = message.get("role")
        call_id = message.get("toolCallId")
        if role == "assistant":
            turn, called = _assistant(item, message, i, seen, answered)
            names.update(called)
            for neutral in turn:
                run.add(neutral)
        elif role == "tool" and isinstance(call_id, str) and call_id in names and call_id not in answered:
            answered.add(call_id)
            run.add(_tool(item, message, i, seen, names[call_id]))
        elif role in ("user", "system"):
            meta: dict[str, Any] = {}
            blocks = _text_blocks(message.get("content", ""), i, meta)
            meta[_ITEM] = _item_shape(item, message)
            plain: Message = {"id": common.message_id("ct-", item, seen, i), "role": role, "content": blocks}
            run.add(common.attach_meta(plain, FORMAT, meta))
        else:
            run.hold(common.copied(item))
    return common.mark_pending(run.messages())


def _content(blocks: Sequence[Block], meta: Mapping[str, Any], i: int) -> Any:
    """An item's ``content`` from its text and raw blocks: a string (texts joined by a blank line) unless
    it was read as parts or holds more than text."""
    if meta.get("parts") or any(b["type"] != "text" for b in blocks):
        return [common.written_part(b, FORMAT, "Continue", i, j) for j, b in enumerate(blocks)]
    return "\n\n".join(b["text"] for b in blocks)


def _filled(shape: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """``shape`` (copied) with ``fields`` in their places; a field None leaves its key out."""
    out = {k: (fields[k] if k in fields else common.copied(v)) for k, v in shape.items()}
    out.update({k: v for k, v in fields.items() if k not in out})
    return {k: v for k, v in out.items() if not (k in fields and fields[k] is None)}


def _new_state(block: Block, call: Block | None, output: Any) -> dict[str, Any]:
    """The state Continue's CLI keeps for a call and its result (a history read elsewhere)."""
    arguments = call["input"] if call is not None else "{}"
    try:
        parsed: Any = strict_loads(arguments)  # Continue keeps the arguments parsed, or as sent
    except ValueError:
        parsed = arguments
    function = {"name": block["name"], "arguments": arguments}
    return {
        "toolCallId": block["id"],
        "toolCall": {"id": block["id"], "type": "function", "function": function},
        "status": "errored" if block.get("state") == "error" else "done",
        "parsedArgs": parsed,
        "output": output,
    }


class _Turn:
    """An assistant item being written: its text, its calls and the states of their results."""

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self.meta = meta
        self.texts: list[Block] = []
        self.calls: list[Block] = []
        self.states: dict[str, dict[str, Any]] = {}
        self.read = {s.get("toolCallId"): s for s in meta.get(_STATES, ())}

    def answer(self, block: Block, i: int, j: int) -> None:
        """Record a result as its state: as read, its output shortened where the plan shortened it."""
        output: Any
        value = block["output"]
        read = self.read.get(block["id"])
        if isinstance(value, list) and len(value) == 1 and common.is_raw(value[0], FORMAT):
            output = common.copied(value[0]["value"])
        else:
            first = (
                read["output"][0]
                if read is not None and _single_text(read.get("output"), shape=True)
                else None
            )
            output = [_filled(first or _NEW_OUTPUT, content=common.output_text(block, "Continue", i, j))]
        if read is not None:
            self.states[block["id"]] = _filled(read, output=output)
        else:
            call = next((c for c in self.calls if c["id"] == block["id"]), None)
            self.states[block["id"]] = _new_state(block, call, output)

    def item(self, i: int) -> dict[str, Any] | None:
        """The item, or None when a plan left a turn that held calls with nothing to send."""
        shape = self.meta.get(_ITEM)
        message_shape = shape["message"] if shape is not None else {"role": "assistant"}
        had_calls = bool(message_shape.get("toolCalls"))
        said = any(b["type"] != "text" or b["text"].strip() for b in self.texts)
        if had_calls and not self.calls and not said:
            return None
        read_calls = {c.get("id"): c for c in message_shape.get("toolCalls") or () if isinstance(c, dict)}
        calls = [
            common.copied(read_calls[c["id"]])
            if c["id"] in read_calls
            else {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["input"]}}
            for c in self.calls
        ]
        states = [self.states[c["id"]] for c in self.calls if c["id"] in self.states]
        states += common.copied(self.meta.get(_UNMATCHED, []))
        message = _filled(message_shape, content=_content(self.texts, self.meta, i), toolCalls=calls or None)
        if shape is None:
            return _filled(
                {"message": None, "contextItems": []}, message=message, toolCallStates=states or None
            )
        single = shape.get("toolCallState")  # older sessions' one state a turn goes with its call
        gone = isinstance(single, dict) and single.get("toolCallId") not in {c["id"] for c in self.calls}
        dropped: dict[str, Any] = {"toolCallState": None} if gone else {}
        return _filled(shape, message=message, toolCallStates=states or None, **dropped)


def _tool_item(shape: Mapping[str, Any], blocks: Sequence[Block], i: int) -> dict[str, Any]:
    """A ``tool`` item as read, holding its result's output as the plan left it."""
    if len(blocks) != 1 or blocks[0]["type"] != "tool_result":
        raise SnapshotError("a tool item holds its one result and nothing else", message=i)
    output = blocks[0]["output"]
    content = (
        output
        if isinstance(output, str)
        else [common.written_part(b, FORMAT, "Continue", i, 0) for b in output]
    )
    return _filled(shape, message=_filled(shape["message"], content=content))


def to_continue(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages to a Continue session's ``history`` (the inverse of `from_continue`).

    Each message read from an item is written back as that item, its text, calls and states changed
    as the plan changed them: a dropped call leaves its item's ``toolCalls`` with its state, a shortened
    result is its state's one output item with the shortened text, and a turn that held calls and was
    left with neither a call nor text goes. Carried items come back where they were; messages from
    elsewhere become items as Continue's CLI makes them.
    """
    out: list[Any] = []
    turn: _Turn | None = None
    turn_at = 0

    def close() -> None:
        nonlocal turn
        if turn is not None:
            item = turn.item(turn_at)
            if item is not None:
                out.append(item)
            turn = None

    for i, message in enumerate(common.neutral_input(messages)):
        values = carried(message, FORMAT)
        if values is not None:
            close()
            out.extend(values)
            continue
        meta = common.format_meta(message, FORMAT)
        blocks = message["content"]
        if meta.get(_TOOL):
            close()
            out.append(_tool_item(meta[_ITEM], blocks, i))
            continue
        if message["role"] != "assistant":
            close()
            shape = meta.get(_ITEM)
            content = _content(blocks, meta, i)
            if shape is None:
                out.append({"message": {"role": message["role"], "content": content}, "contextItems": []})
            else:
                out.append(_filled(shape, message=_filled(shape["message"], content=content)))
            continue
        answers_only = meta.get(_RESULTS) or (blocks and all(b["type"] == "tool_result" for b in blocks))
        if turn is None or not answers_only:
            close()
            turn, turn_at = _Turn(meta), i
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind == "tool_call":
                turn.calls.append(block)
            elif kind == "tool_result":
                turn.answer(block, i, j)
            elif kind == "text" or common.is_raw(block, FORMAT):
                turn.texts.append(block)
            elif kind != "thinking":
                raise common.unsupported("Continue", block, i, j)
    close()
    return out
