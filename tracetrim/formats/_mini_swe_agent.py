"""Converters between neutral messages and mini-swe-agent trajectories.

A trajectory's messages are in its model's protocol: THOUGHT and one fenced command a turn (1.x's
```` ```bash ````, 2.x's text-based models' ```` ```mswea_bash_command ````), or, with 2.x's default
tool-calling models, OpenAI chat messages whose ``bash`` calls the ``tool`` messages answer. 2.x ends
a run with a ``{"role": "exit"}`` message of its own, which no model is sent: it is kept in place,
not judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tracetrim._json import strict_loads
from tracetrim._marker import is_tombstone, prose_action_metadata
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import carried, carrier, in_place
from tracetrim.formats._common import ValidatedHistory
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses, to_openai_responses

FORMAT = "mini_swe_agent"
TOOL_NAME = "bash"
"""The name of the one tool a mini-swe-agent calls."""

ACTION_REGEX = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
"""mini-swe-agent's ``action_regex`` (the 1.x and the 2.x text-based defaults): an assistant turn is a
command if it matches once."""

_ROLES = frozenset({"system", "user", "assistant"})
EXIT_ROLE = "exit"
"""The role of the message mini-swe-agent 2.x ends a run with (its exit status and submission)."""
_OPEN = "```bash\n"
_CLOSE = "\n```"


def _fence_meta(content: str, match: re.Match[str]) -> tuple[str, dict[str, str]]:
    """The command of a bash block (stripped, as mini-swe-agent runs it) and what else the fence held."""
    raw = match.group(1)
    command = raw.strip()
    lead = raw[: len(raw) - len(raw.lstrip())] if command else raw
    trail = raw[len(raw.rstrip()) :] if command else ""
    fence: dict[str, str] = {}
    opening = content[match.start() : match.start(1)]
    if opening != _OPEN:
        fence["open"] = opening
    if lead:
        fence["lead"] = lead
    if trail:
        fence["trail"] = trail
    return command, fence


def _call_message(content: str, match: re.Match[str], i: int, meta: dict[str, Any]) -> Message:
    """An assistant turn holding one command: THOUGHT text, the bash tool call, any text after the fence."""
    command, fence = _fence_meta(content, match)
    if fence:
        meta["fence"] = fence
    blocks: list[Block] = []
    before, after = content[: match.start()], content[match.end() :]
    if before:
        blocks.append({"type": "text", "text": before})
    blocks.append(
        {
            "type": "tool_call",
            "id": f"mswe-{i}",
            "name": TOOL_NAME,
            "input": common.dump_input({"command": command}),
            "state": "finished",
            "metadata": prose_action_metadata(),
        }
    )
    if after:
        blocks.append({"type": "text", "text": after})
    return {"id": f"m{i}", "role": "assistant", "content": blocks}


def from_mini_swe_agent(messages: Sequence[Any]) -> list[Message]:
    """Convert the ``messages`` of a mini-swe-agent trajectory to neutral messages (ids ``m<index>``).

    An assistant message with exactly one bash block (mini-swe-agent's ``action_regex``) becomes the text
    before the fence, a ``bash`` tool call (id ``mswe-<index>``, input ``{"command": ...}`` with the command
    stripped as mini-swe-agent runs it) and the text after the fence, if any. The user message right after
    it is what the agent saw for that command (``<returncode>...``, a timeout notice, or the final
    submission): like `from_swe_agent_history`'s synthesized observations it becomes an assistant message
    holding one ``tool_result`` (state ``success``; a non-zero return code is part of the text) with
    ``observation_of`` set in ``metadata["tracetrim.mini_swe_agent"]``. Everything else (system prompt, task,
    format-error messages, turns without exactly one bash block) is a plain text message. Extra keys of a
    message (``extra``) and any unusual fence spacing are kept in that metadata, so `to_mini_swe_agent`
    rebuilds the input exactly. A call with no user message after it is left ``pending``.
    """
    common.require_sequence(messages, "messages", "message objects")
    if any(isinstance(m, dict) and (m.get("object") == "response" or "type" in m) for m in messages):
        return _from_responses(messages)
    if is_tool_calling(messages):
        return _from_chat(messages)
    out: list[Message] = []
    pending: str | None = None
    seen: dict[str, int] = {}
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        if message.get("role") == EXIT_ROLE:
            out.append(carrier(FORMAT, [message], seen))
            continue
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        content = common.require_str(message.get("content"), "content", message=i, field="content")
        meta: dict[str, Any] = {}
        extra = common.extras(message, ("role", "content"))
        if extra:
            meta["extra"] = common.copied(extra)
        call_id, pending = pending, None
        neutral: Message
        if role == "user" and call_id is not None:
            meta["observation_of"] = call_id
            result = {
                "type": "tool_result",
                "id": call_id,
                "name": TOOL_NAME,
                "output": content,
                "state": "success",
            }
            neutral = {"id": f"m{i}", "role": "assistant", "content": [result]}
        else:
            matches = list(ACTION_REGEX.finditer(content)) if role == "assistant" else []
            if len(matches) == 1:
                neutral = _call_message(content, matches[0], i, meta)
                pending = f"mswe-{i}"
            else:
                text = [{"type": "text", "text": content}] if content else []
                neutral = {"id": f"m{i}", "role": role, "content": text}
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _fence(block: Block, fence: dict[str, Any], i: int, j: int) -> str:
    command = common.parse_input(block, i, j).get("command")
    if not isinstance(command, str):
        raise SnapshotError(
            "a tool call needs a string 'command' in its input for mini-swe-agent",
            message=i,
            block=j,
            field="input",
        )
    opening = fence.get("open", _OPEN)
    return f"{opening}{fence.get('lead', '')}{command}{fence.get('trail', '')}{_CLOSE}"


def _convert(message: Message, i: int) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    fence = meta.get("fence")
    fence = fence if isinstance(fence, dict) else {}
    out: list[dict[str, Any]] = []
    role = "user" if "observation_of" in meta else message["role"]
    parts: list[str] | None = None

    def close() -> None:
        nonlocal parts
        if parts is not None:
            out.append({"role": role, "content": "".join(parts)})
        parts = None

    for j, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "tool_result":
            close()
            text = common.output_text(block, "mini-swe-agent", i, j)
            out.append({"role": "user", "content": text})
            continue
        if kind == "thinking":
            continue
        if parts is None:
            parts = []
        if kind == "text":
            # what was read joins as it was split; a tombstone, or the text of a message from
            # elsewhere, is a paragraph of its own
            apart = parts and (not meta or is_tombstone(block))
            parts.append("\n\n" + block["text"] if apart else block["text"])
        elif kind == "tool_call":
            parts.append(_fence(block, fence, i, j))
        else:
            raise common.unsupported("mini-swe-agent", block, i, j)
    close()
    if not out:
        out.append({"role": role, "content": ""})
    extra = meta.get("extra")
    if isinstance(extra, dict):
        out[0].update(common.copied(extra))
    return out


def to_mini_swe_agent(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to mini-swe-agent ``{"role", "content": str}`` messages.

    The inverse of `from_mini_swe_agent`. Text blocks are joined as they are; a tool call is written as a
    bash block of its input's ``command``; each tool result becomes a ``user`` message of its output text
    (so a neutral message holding calls and results is split in block order). mini-swe-agent has no ids
    and no thinking: those are dropped. Other block types raise `SnapshotError`.
    """
    neutral = common.neutral_input(messages)
    flavours = {common.format_meta(m, FORMAT).get("flavour") for m in neutral}
    if "responses" in flavours:
        return _regrouped(_runs(neutral, to_openai_responses))
    if "chat" in flavours:
        return _runs(neutral, to_openai_chat)
    return in_place(neutral, FORMAT, _convert)


def is_tool_calling(messages: Sequence[Any]) -> bool:
    """Whether a trajectory's messages are a 2.x tool-calling model's (OpenAI chat ``tool_calls`` and
    ``tool`` messages) rather than the text protocol."""
    return any(isinstance(m, dict) and ("tool_calls" in m or m.get("role") == "tool") for m in messages)


_GROUP = "tracetrim.response"
"""The key on an output item of a Responses model's run naming the response it came in (its index) and
that response's other fields, so the writer puts each item back into its response."""


def _read_runs(
    messages: Sequence[Any], read: Callable[[list[Any]], list[Message]], flavour: str
) -> list[Message]:
    """A model-protocol trajectory: each run of its messages through ``read``, each message marked with
    ``flavour``, and its ``exit`` messages in carriers where they stand."""
    out: list[Message] = []
    run: list[Any] = []
    seen: dict[str, int] = {}

    def flush() -> None:
        for message in read(run) if run else []:
            meta = common.format_meta(message, FORMAT)
            out.append(common.attach_meta(message, FORMAT, {**meta, "flavour": flavour}))
        run.clear()

    for message in messages:
        if isinstance(message, dict) and message.get("role") == EXIT_ROLE:
            flush()
            out.append(carrier(FORMAT, [message], seen))
        else:
            run.append(message)
    flush()
    return out


def _runs(messages: Sequence[Message], write: Callable[[Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The inverse of `_read_runs`: each run of messages through ``write``, carriers in place."""
    out: list[dict[str, Any]] = []
    run: list[Message] = []
    for message in [*messages, None]:
        value = carried(message, FORMAT) if message is not None else None
        if message is not None and value is None:
            run.append(message)
            continue
        out.extend(write(ValidatedHistory(run)) if run else [])
        run = []
        out.extend(value or [])
    return out


def _from_chat(messages: Sequence[Any]) -> list[Message]:
    """A tool-calling model's run: OpenAI chat messages (`from_openai_chat`)."""
    return _read_runs(messages, from_openai_chat, "chat")


def _from_responses(messages: Sequence[Any]) -> list[Message]:
    """A Responses model's run: input items, and each response the model gave kept whole as one
    message; its output items are read as Responses items (`from_openai_responses`), each naming its
    response (`_GROUP`)."""
    flat: list[Any] = []
    for k, message in enumerate(messages):
        if isinstance(message, dict) and message.get("object") == "response":
            output = message.get("output")
            if not isinstance(output, list):
                raise SnapshotError("a response's output must be a list of items", message=k, field="output")
            shell = {key: (None if key == "output" else value) for key, value in message.items()}
            flat.extend(
                {**common.require_dict(item, "an output item", message=k), _GROUP: {"at": k, "shell": shell}}
                for item in output
            )
        else:
            flat.append(message)
    return _read_runs(flat, from_openai_responses, "responses")


def _regrouped(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Written Responses items with each run of one response's output items put back into it."""
    out: list[dict[str, Any]] = []
    at: Any = None
    for item in items:
        group = item.get(_GROUP) if isinstance(item, dict) else None
        if not isinstance(group, dict) or not isinstance(group.get("shell"), dict):
            out.append(item)
            at = None
            continue
        bare = {k: v for k, v in item.items() if k != _GROUP}
        if at is not None and group.get("at") == at:
            out[-1]["output"].append(bare)
            continue
        at = group.get("at")
        out.append({k: ([bare] if k == "output" else common.copied(v)) for k, v in group["shell"].items()})
    return out


def load_mini_swe_agent_traj(path: str | Path) -> list[Message]:
    """Read a mini-swe-agent ``.traj.json`` file and convert its ``messages`` with `from_mini_swe_agent`."""
    try:
        data = strict_loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SnapshotError(f"{path}: not a JSON file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise SnapshotError(
            f"{path}: a mini-swe-agent .traj.json file is a JSON object with a 'messages' list"
        )
    return from_mini_swe_agent(data["messages"])
