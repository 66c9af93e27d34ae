"""Converters between neutral messages and mini-swe-agent trajectories (THOUGHT + one bash block)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetrim._json import strict_loads
from tracetrim._marker import prose_action_metadata
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common

FORMAT = "mini_swe_agent"
TOOL_NAME = "bash"
"""The name of the one tool a mini-swe-agent calls."""

ACTION_REGEX = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
"""mini-swe-agent's ``action_regex`` (1.x default): an assistant turn is a command if it matches once."""

_ROLES = frozenset({"system", "user", "assistant"})
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
    out: list[Message] = []
    pending: str | None = None
    for i, message in enumerate(messages):
        message = common.require_dict(message, "a message", message=i)
        role = common.require_choice(message.get("role"), _ROLES, message=i, field="role")
        content = common.require_str(message.get("content"), "content", message=i, field="content")
        meta: dict[str, Any] = {}
        extra = common.extras(message, ("role", "content"))
        if extra:
            meta["extra"] = copy.deepcopy(extra)
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
            parts.append(block["text"])
        elif kind == "tool_call":
            parts.append(_fence(block, fence, i, j))
        else:
            raise common.unsupported("mini-swe-agent", block, i, j)
    close()
    if not out:
        out.append({"role": role, "content": ""})
    extra = meta.get("extra")
    if isinstance(extra, dict):
        out[0].update(copy.deepcopy(extra))
    return out


def to_mini_swe_agent(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to mini-swe-agent ``{"role", "content": str}`` messages.

    The inverse of `from_mini_swe_agent`. Text blocks are joined as they are; a tool call is written as a
    bash block of its input's ``command``; each tool result becomes a ``user`` message of its output text
    (so a neutral message holding calls and results is split in block order). mini-swe-agent has no ids
    and no thinking: those are dropped. Other block types raise `SnapshotError`.
    """
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        out.extend(_convert(message, i))
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
