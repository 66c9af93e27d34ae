"""Converters between neutral messages and SWE-agent trajectories (the ``history`` of a ``.traj``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetrim._json import strict_loads
from tracetrim._marker import prose_action_metadata
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._openai_chat import FORMAT as CHAT_FORMAT
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat

FORMAT = "swe_agent"
_KEYS = ("agent", "message_type", "thought", "action", "is_demo", "tool_call_ids")


def from_swe_agent_history(history: Sequence[Any], *, synthesize_calls: bool = True) -> list[Message]:
    """Convert a SWE-agent ``history`` (an OpenAI-chat variant) to neutral messages (`to_swe_agent_history`
    writes them back).

    Function-calling histories map like OpenAI chat, a ``tool`` message's ``tool_call_ids`` giving one
    result per id. Older histories are plain text: with ``synthesize_calls`` each assistant ``action``
    becomes a tool call (named by the command's first word, input ``{"command": action}``, id
    ``swe-<message index>``) and the next user message (the observation) its result, so the history has
    tool pairs to compact. SWE-agent's own keys go in ``metadata["tracetrim.swe_agent"]``.
    """
    common.require_sequence(history, "history", "message objects")
    chat: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for i, entry in enumerate(history):
        entry = common.require_dict(entry, "a message", message=i)
        message = {k: common.copied(v) for k, v in entry.items() if k not in _KEYS}
        ids = entry.get("tool_call_ids")
        if entry.get("role") == "tool":
            if not (isinstance(ids, list) and ids and all(isinstance(x, str) for x in ids)):
                raise SnapshotError(
                    "a tool message needs a non-empty list of tool_call_ids", message=i, field="tool_call_ids"
                )
            message["tool_call_id"] = ids[0]
        chat.append(message)
        kept.append({k: common.copied(entry[k]) for k in _KEYS if k in entry})
    neutral = from_openai_chat(chat)
    out: list[Message] = []
    has_calls = any(m.get("role") == "tool" for m in chat)
    pending: tuple[str, str] | None = None
    for i, (message, extra) in enumerate(zip(neutral, kept, strict=True)):
        ids = extra.get("tool_call_ids")
        if isinstance(ids, list) and len(ids) > 1:
            # One observation answered several calls: give each its own result block with the same output.
            first = message["content"][0]
            message["content"].extend({**common.copied(first), "id": other} for other in ids[1:])
        chat_meta = common.format_meta(message, CHAT_FORMAT)
        if chat_meta.get("extra"):
            # SWE-agent's own extra keys travel with its metadata, so an OpenAI-chat writer never sends them
            extra = {**extra, "chat_extra": chat_meta.pop("extra")}
        if synthesize_calls and not has_calls and not extra.get("is_demo"):
            action = extra.get("action")
            if message["role"] == "assistant" and isinstance(action, str) and action.strip():
                call_id = f"swe-{i}"
                name = action.split()[0]
                message["content"].append(
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": name,
                        "input": common.dump_input({"command": action}),
                        "state": "finished",
                        "metadata": prose_action_metadata(),
                    }
                )
                pending = (call_id, name)
                extra = {**extra, "synthesized_call": call_id}
            elif message["role"] == "user" and pending is not None:
                text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
                message = {
                    **message,
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_result",
                            "id": pending[0],
                            "name": pending[1],
                            "output": text,
                            "state": "success",
                        }
                    ],
                }
                extra = {**extra, "observation_of": pending[0]}
                pending = None
        out.append(common.attach_meta(message, FORMAT, extra))
    return common.mark_pending(out)


def load_swe_agent_traj(path: str | Path, *, synthesize_calls: bool = True) -> list[Message]:
    """Read a SWE-agent ``.traj`` file and convert its ``history`` with `from_swe_agent_history`."""
    data = strict_loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "history" not in data:
        raise SnapshotError(f"{path}: a .traj file is a JSON object with a 'history' list")
    return from_swe_agent_history(data["history"], synthesize_calls=synthesize_calls)


def _observation_text(message: Message, i: int) -> list[Any]:
    """The text blocks a synthesized observation came from: its result's output (maybe shortened)."""
    texts: list[str] = []
    for j, block in enumerate(message["content"]):
        if block["type"] == "text":
            texts.append(block["text"])
        elif block["type"] == "tool_result":
            text = common.output_text(block, "SWE-agent", i, j, what="an observation")
            texts.append(text)
    text = "".join(texts)
    return [{"type": "text", "text": text}] if text else []


def _history_entries(message: Message, i: int) -> list[dict[str, Any]]:
    meta = common.format_meta(message, FORMAT)
    synthesized = meta.get("synthesized_call")
    if "observation_of" in meta:
        message = {**message, "role": "user", "content": _observation_text(message, i)}
    elif isinstance(synthesized, str):
        kept = [b for b in message["content"] if not (b["type"] == "tool_call" and b["id"] == synthesized)]
        message = {**message, "content": kept}
    try:
        chat = to_openai_chat(common.ValidatedHistory([message]))  # checked by to_swe_agent_history
    except SnapshotError as exc:
        raise exc.at_message(i) from None
    tools = [m for m in chat if m["role"] == "tool"]
    ids = [m.pop("tool_call_id") for m in tools]
    if tools and isinstance(meta.get("tool_call_ids"), list) and len(meta["tool_call_ids"]) > 1:
        # one SWE-agent observation answered several calls: the reader gave each its own copy
        chat = [m for m in chat if m["role"] != "tool" or m is tools[0]]
        tools[0]["tool_call_ids"] = ids
    else:
        for tool, call_id in zip(tools, ids, strict=True):
            tool["tool_call_ids"] = [call_id]
    own = {k: common.copied(v) for k, v in meta.items() if k in _KEYS and k != "tool_call_ids"}
    chat_extra = meta.get("chat_extra")
    for entry in chat:
        if isinstance(chat_extra, dict):
            entry.update(common.copied(chat_extra))
        entry.update(own)
    return chat


def to_swe_agent_history(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to a SWE-agent ``history``: the inverse of `from_swe_agent_history`.

    Messages map as in `to_openai_chat`, a ``tool`` message naming its calls in ``tool_call_ids``, and
    SWE-agent's own keys (``agent``, ``thought``, ``action``, ...) come back from the metadata. Calls the
    reader synthesized from a plain-text ``action`` are dropped again and their observation is the user
    message it was, with the result's text (shortened, if compaction shortened it).
    """
    out: list[dict[str, Any]] = []
    for i, message in enumerate(common.neutral_input(messages)):
        out.extend(_history_entries(message, i))
    return out
