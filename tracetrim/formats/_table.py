"""The one table of history formats: each one's reader, writer and file shape, and telling them apart."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from tracetrim._errors import TracetrimError
from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._langchain_json import from_langchain_json, is_langchain_json, to_langchain_json
from tracetrim.formats._mini_swe_agent import ACTION_REGEX, from_mini_swe_agent, to_mini_swe_agent
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses, to_openai_responses
from tracetrim.formats._swe_agent import from_swe_agent_history, to_swe_agent_history

_Reader = Callable[[Sequence[Any], Mapping[str, Any]], list[Message]]
_Writer = Callable[[Sequence[Any]], dict[str, Any]]


class FormatError(TracetrimError, ValueError):
    """A history whose format cannot be told, or a file holding several histories where one was wanted."""


class TrajectoryListError(FormatError):
    """A file that is a list of trajectories: pick one by index, or take them all."""

    def __init__(self, count: int, fmt: str) -> None:
        self.count = count
        self.format = fmt
        super().__init__(
            f"a list of {count} {fmt} trajectories, not one history: pick one with --item N "
            f"(0..{count - 1}) or compact each with --all"
        )


def _check_system(fields: Mapping[str, Any]) -> str | list[Any] | None:
    system = fields.get("system")
    if system is None or isinstance(system, (str, list)):
        return system
    raise SnapshotError(f"'system' must be a string or a list of blocks, got {type(system).__name__}")


def _messages_only(write: Callable[[Sequence[Any]], list[Any]]) -> _Writer:
    return lambda messages: {"messages": write(messages)}


def _neutral(messages: Sequence[Any], fields: Mapping[str, Any]) -> list[Message]:
    return list(messages)


@attrs.frozen
class HistoryFormat:
    """One format a history can arrive in: how to read it to neutral messages and write it back.

    ``messages_key`` names the list in the format's file object (``history`` for a SWE-agent ``.traj``,
    ``traj`` for a tau-bench item); ``default_tools`` are the eligible tools when nothing names any.
    """

    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    description: str = attrs.field(validator=attrs.validators.instance_of(str))
    reader: _Reader = attrs.field(validator=attrs.validators.is_callable())
    writer: _Writer = attrs.field(validator=attrs.validators.is_callable())
    messages_key: str = "messages"
    default_tools: tuple[str, ...] = ()

    def read(self, messages: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
        """``messages`` in this format as neutral messages; ``fields`` are the file's other keys (Anthropic's
        ``system``). Bad input raises `SnapshotError` naming the place; ``neutral`` is checked later."""
        return self.reader(messages, fields or {})

    def write(self, messages: Sequence[Any]) -> dict[str, Any]:
        """Neutral ``messages`` as this format's fields: ``{"messages": [...]}``, plus ``system`` for
        Anthropic when the history has one."""
        return self.writer(messages)

    def write_messages(self, messages: Sequence[Any]) -> Any:
        """What `write` gives, as one JSON value: the message list alone where that is all there is."""
        fields = self.write(messages)
        return fields["messages"] if set(fields) == {"messages"} else fields


def _one_arg(read: Callable[[Sequence[Any]], list[Message]]) -> _Reader:
    return lambda messages, fields: read(messages)


_TABLE = (
    HistoryFormat(
        "neutral",
        "tracetrim's neutral snapshot (AgentScope 2.x messages with content blocks)",
        _neutral,
        _messages_only(list),
    ),
    HistoryFormat(
        "openai",
        "OpenAI chat-completions messages (tool_calls, tool messages)",
        _one_arg(from_openai_chat),
        _messages_only(to_openai_chat),
    ),
    HistoryFormat(
        "responses",
        "OpenAI Responses input items (message, function_call, function_call_output, reasoning)",
        _one_arg(from_openai_responses),
        _messages_only(to_openai_responses),
    ),
    HistoryFormat(
        "anthropic",
        "Anthropic Messages (tool_use / tool_result blocks; a top-level system kept)",
        lambda messages, fields: from_anthropic(messages, system=_check_system(fields)),
        to_anthropic,
    ),
    HistoryFormat(
        "langchain",
        "LangChain messages as JSON (messages_to_dict or dumpd form)",
        _one_arg(from_langchain_json),
        _messages_only(to_langchain_json),
    ),
    HistoryFormat(
        "swe-agent",
        "a SWE-agent .traj (its history; plain-text actions become calls)",
        _one_arg(from_swe_agent_history),
        _messages_only(to_swe_agent_history),
        messages_key="history",
    ),
    HistoryFormat(
        "mini-swe-agent",
        "a mini-swe-agent .traj.json (THOUGHT + one bash block a turn; the next message its output)",
        _one_arg(from_mini_swe_agent),
        _messages_only(to_mini_swe_agent),
        default_tools=("bash",),
    ),
    HistoryFormat(
        "tau-bench",
        "a tau-bench trajectory (OpenAI chat messages under traj)",
        _one_arg(from_openai_chat),
        _messages_only(to_openai_chat),
        messages_key="traj",
    ),
)

HISTORY_FORMATS: Mapping[str, HistoryFormat] = MappingProxyType({f.name: f for f in _TABLE})
"""Every history format by name, in the order help texts list them."""


def history_format(name: str) -> HistoryFormat:
    """The format called ``name``; `FormatError` listing the names otherwise."""
    try:
        return HISTORY_FORMATS[name]
    except (KeyError, TypeError):
        raise FormatError(f"unknown format {name!r}; use one of {', '.join(HISTORY_FORMATS)}") from None


_RESPONSES_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
_NEUTRAL_BLOCKS = frozenset({"tool_call", "tool_result", "thinking", "data", "hint"})
_CHAT_ONLY_ROLES = frozenset({"system", "developer"})  # Anthropic keeps system at the top level
_CHAT_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "redacted_thinking", "image", "document", "server_tool_use"})


def _blocks(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        block
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict)
    ]


def _is_mini_swe_agent(messages: Sequence[Any]) -> bool:
    if not all(isinstance(m, dict) and m.get("role") in ("system", "user", "assistant") for m in messages):
        return False
    if not all(isinstance(m.get("content"), str) for m in messages):
        return False
    turns = [m["content"] for m in messages if m["role"] == "assistant"]
    return bool(turns) and any(len(ACTION_REGEX.findall(text)) == 1 for text in turns)


def detect_messages(messages: Sequence[Any]) -> str:
    """The format of a bare message list, told by shape (`detect_format` for whole files)."""
    items = [m for m in messages if isinstance(m, dict)]
    if not items:
        return "neutral"
    if any(is_langchain_json(m) for m in items):
        return "langchain"
    if any(m.get("type") in _RESPONSES_TYPES for m in items):
        return "responses"
    if any(m.get("role") == "tool" or "tool_calls" in m for m in items):
        return "openai"
    blocks = _blocks(items)
    kinds = {b.get("type") for b in blocks}
    if kinds & _ANTHROPIC_BLOCKS or any("tool_use_id" in b for b in blocks):
        return "anthropic"
    if kinds & _NEUTRAL_BLOCKS:
        return "neutral"
    if _is_mini_swe_agent(items):
        return "mini-swe-agent"
    if any(isinstance(m.get("content"), str) or m.get("role") in _CHAT_ONLY_ROLES for m in items):
        return "openai"
    if kinds & _CHAT_PARTS:
        return "openai"
    # text-only block lists: neutral messages carry ids, Anthropic messages do not
    return "neutral" if all("id" in m for m in items) else "anthropic"


def _trajectory_kind(item: Any) -> str | None:
    """The format of one item of a list, when the item is a whole trajectory rather than a message."""
    if not isinstance(item, dict) or "role" in item or is_langchain_json(item):
        return None
    if isinstance(item.get("traj"), list):
        return "tau-bench"
    if isinstance(item.get("history"), list):
        return "swe-agent"
    if isinstance(item.get("messages"), list):
        return detect_format(item)
    return None


def trajectory_list(data: Any) -> str | None:
    """The format of each trajectory when ``data`` is a list of whole trajectories, else None."""
    if not isinstance(data, list) or not data:
        return None
    kinds = {_trajectory_kind(item) for item in data}
    if None in kinds or len(kinds) != 1:
        return None
    return kinds.pop()


def detect_format(data: Any) -> str:
    """The format of a parsed history file (a message list or an object holding one), told by shape.

    A SWE-agent ``.traj`` has ``history``; a tau-bench item ``traj``; a mini-swe-agent file string
    messages with bash blocks; a top-level ``system`` beside ``messages`` means Anthropic. A bare list
    is told by its messages (`detect_messages`). A list of whole trajectories raises
    `TrajectoryListError`, since one history is wanted.
    """
    kind = trajectory_list(data)
    if kind is not None:
        raise TrajectoryListError(len(data), kind)
    if isinstance(data, dict):
        if isinstance(data.get("history"), list):
            return "swe-agent"
        if isinstance(data.get("traj"), list):
            return "tau-bench"
        messages = data.get("messages")
        if not isinstance(messages, list):
            raise FormatError("expected a list of messages or an object with 'messages', 'history' or 'traj'")
        found = detect_messages(messages)
        if "system" in data and found in ("neutral", "openai"):
            return "anthropic" if found == "openai" or not all("id" in m for m in messages) else found
        return found
    if isinstance(data, list):
        return detect_messages(data)
    raise FormatError(f"expected a JSON list or object, got {type(data).__name__}")
