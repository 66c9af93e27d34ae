"""Cline's text-protocol tool calls (XML in the assistant's text) and their results as neutral pairs.

Without native tool calling Cline's model writes a call as XML in its text (``<read_file><path>a.py</path>
</read_file>``) and Cline answers in the next user turn with a text block headed by the tool's description
(``[read_file for 'a.py'] Result:``): the result after the header in the same block, or, in older
versions, in the text block after a block holding the header alone (``ToolResultUtils.pushToolResult``,
one result per turn). Read here, the call becomes a tool_call appended to the assistant turn (in its prose,
so it keeps its place: `tracetrim._marker.prose_action_metadata`) and the result's text block a
tool_result where it stood; written back, the call goes (its text is still there) and the result is text
again, under its header.
"""

from __future__ import annotations

import re
from typing import Any

from tracetrim._marker import PROSE_ACTION_KEY, fixed_call_metadata, prose_action_metadata
from tracetrim._snapshot import Block, Message
from tracetrim.formats import _common as common
from tracetrim.formats._anthropic import BLOCK_EXTRAS
from tracetrim.formats._anthropic import FORMAT as ANTHROPIC_FORMAT

_HEADER = re.compile(r"\[(?P<name>[a-z][a-z0-9_]*)(?: for .*?)?\] Result:", re.DOTALL)
_TAG = re.compile(r"<(/?)([a-z][a-z0-9_]*)>")
_KEY = common.meta_key("cline")
"""The key on a neutral tool_result block holding how its text is written back (its header, and whether
the header shares its block)."""


def _header(block: Block) -> tuple[str, str, bool] | None:
    """The tool name, header and whether the result shares the header's block, for a text block that
    opens with a tool result's header; None for any other block."""
    if block["type"] != "text":
        return None
    found = _HEADER.match(block["text"])
    if found is None:
        return None
    header = found.group(0)
    rest = block["text"][len(header) :]
    if rest and not rest.startswith("\n"):
        return None
    return found.group("name"), header, bool(rest)


def _input(text: str, name: str) -> dict[str, str]:
    """The parameters of the last ``<name>`` call in the assistant's ``text``, trimmed as Cline's parser
    trims them; empty when no whole call is there. One pass over the tags: a parameter runs to the first
    closing tag of its name, and the tags inside it (a diff's HTML, say) are its text."""
    start = text.rfind(f"<{name}>")
    end = text.find(f"</{name}>", start)
    if start < 0 or end < 0:
        return {}
    params: dict[str, str] = {}
    inside: str | None = None
    since = 0
    for tag in _TAG.finditer(text, start + len(name) + 2, end):
        closing, key = tag.group(1), tag.group(2)
        if inside is None and not closing:
            inside, since = key, tag.end()
        elif inside == key and closing:
            params[key] = text[since : tag.start()].strip()
            inside = None
    return params


def _calls_in(message: Message, name: str) -> str | None:
    """The assistant ``message``'s text when it holds a ``<name>`` call and no native tool call."""
    if message["role"] != "assistant" or any(b["type"] == "tool_call" for b in message["content"]):
        return None
    text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
    return text if f"<{name}>" in text else None


def read_text_tools(messages: list[Message], start: int = 0) -> None:
    """Turn each text-protocol call and its result in ``messages`` (read by `from_anthropic`; turns that
    stood in a row, the first at ``start`` in the file) into a neutral call and result, in place: the
    call's id is ``cline-<where the result's turn stands in the file>``."""
    for i in range(1, len(messages)):
        message = messages[i]
        if message["role"] != "user":
            continue
        for j, block in enumerate(message["content"]):
            head = _header(block)
            if head is None:
                continue
            name, header, joined = head
            text = _calls_in(messages[i - 1], name)
            if text is None:
                break
            if not joined:
                j += 1
                if j >= len(message["content"]) or message["content"][j]["type"] != "text":
                    break
            _pair(messages, i, j, f"cline-{start + i}", (name, header, joined), _input(text, name))
            break  # one result a turn, as Cline answers


def _pair(
    messages: list[Message],
    i: int,
    j: int,
    call_id: str,
    head: tuple[str, str, bool],
    params: dict[str, str],
) -> None:
    name, header, joined = head
    block = messages[i]["content"][j]
    output = block["text"][len(header) + 1 :] if joined else block["text"]
    result: Block = {"type": "tool_result", "id": call_id, "name": name, "output": output, "state": "success"}
    result[_KEY] = {"header": header, "joined": joined}
    if BLOCK_EXTRAS in block:
        result[BLOCK_EXTRAS] = block[BLOCK_EXTRAS]
    call: Block = {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "input": common.dump_input(params),
        "state": "finished",
        "metadata": {**prose_action_metadata(), **fixed_call_metadata()},
    }
    messages[i - 1]["content"] = [*messages[i - 1]["content"], call]
    content = list(messages[i]["content"])
    content[j] = result
    # a turn holding a result is on the assistant side, as `from_anthropic` puts a tool_result's turn
    meta = {**common.format_meta(messages[i], ANTHROPIC_FORMAT), "role": "user"}
    turn = {**messages[i], "role": "assistant", "content": content}
    messages[i] = common.attach_meta(turn, ANTHROPIC_FORMAT, meta)


def write_text_tools(message: Message) -> Message:
    """``message`` with its text-protocol calls taken out (their text is the assistant's) and its results
    written as text under their headers again: what `to_anthropic` writes as Cline's turn."""
    content: list[Block] = []
    changed = False
    for block in message["content"]:
        written = _text_of(block)
        changed = changed or written is not block
        if written is not None:
            content.append(written)
    return {**message, "content": content} if changed else message


def _text_of(block: Block) -> Block | None:
    """The block as Cline holds it: None for a text-protocol call, a text block for its result."""
    if block["type"] == "tool_call" and (block.get("metadata") or {}).get(PROSE_ACTION_KEY) is True:
        return None
    how = block.get(_KEY)
    if block["type"] != "tool_result" or not isinstance(how, dict):
        return block
    output = block["output"]
    text = output if isinstance(output, str) else "".join(str(b.get("text", "")) for b in output)
    written: Block = {"type": "text", "text": f"{how['header']}\n{text}" if how.get("joined") else text}
    extras: Any = block.get(BLOCK_EXTRAS)
    if extras is not None:
        written[BLOCK_EXTRAS] = extras
    return written
