"""The one table of history formats: each one's reader, writer and file shape, and telling them apart."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from tracetrim._errors import TracetrimError
from tracetrim._gc_pause import gc_paused
from tracetrim._snapshot import Message, SnapshotError, check_messages
from tracetrim.formats._adk import from_adk, is_adk_event, is_adk_session, to_adk
from tracetrim.formats._agent_framework import (
    from_agent_framework,
    is_agent_framework_message,
    is_agent_framework_session,
    session_path,
    to_agent_framework,
)
from tracetrim.formats._ai_sdk import from_ai_sdk, is_ai_sdk_part, to_ai_sdk
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._atif import from_atif, is_atif_step, to_atif
from tracetrim.formats._bedrock import from_bedrock, is_bedrock_block, to_bedrock
from tracetrim.formats._claude_code import from_claude_code, is_claude_code_entry, to_claude_code
from tracetrim.formats._cline import OBSERVING_TOOLS as CLINE_TOOLS
from tracetrim.formats._cline import from_cline, is_cline_history, to_cline
from tracetrim.formats._codex import from_codex, is_codex_rollout, to_codex
from tracetrim.formats._common import ValidatedHistory, require_sequence, tag
from tracetrim.formats._continue import OBSERVING_TOOLS as CONTINUE_TOOLS
from tracetrim.formats._continue import from_continue, is_continue_history, to_continue
from tracetrim.formats._copilot_cli import OBSERVING_TOOLS as COPILOT_TOOLS
from tracetrim.formats._copilot_cli import from_copilot_cli, is_copilot_cli_session, to_copilot_cli
from tracetrim.formats._gemini import GEMINI_SYSTEM, from_gemini, is_gemini_content, to_gemini
from tracetrim.formats._gemini_cli import (
    from_gemini_cli,
    is_gemini_cli_log,
    is_gemini_cli_record,
    to_gemini_cli,
)
from tracetrim.formats._inspect import (
    INSPECT_BEFORE_MESSAGES,
    from_inspect,
    is_inspect_log,
    is_inspect_message,
    is_inspect_sample,
    to_inspect,
)
from tracetrim.formats._kimi_cli import from_kimi_cli, is_kimi_cli_context, to_kimi_cli
from tracetrim.formats._langchain_json import from_langchain_json, is_langchain_json, to_langchain_json
from tracetrim.formats._mini_swe_agent import ACTION_REGEX, EXIT_ROLE, from_mini_swe_agent, to_mini_swe_agent
from tracetrim.formats._ollama import from_ollama, is_ollama_message, to_ollama
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses, to_openai_responses
from tracetrim.formats._opencode import from_opencode, is_opencode_message, to_opencode
from tracetrim.formats._openhands import from_openhands, is_openhands_event, to_openhands
from tracetrim.formats._openhands_v0 import from_openhands_v0, is_openhands_v0_event, to_openhands_v0
from tracetrim.formats._pi import from_pi, is_pi_session, to_pi
from tracetrim.formats._pydantic_ai import from_pydantic_ai_json, is_pydantic_ai_message, to_pydantic_ai_json
from tracetrim.formats._qwen_code import from_qwen_code, is_qwen_code_session, to_qwen_code
from tracetrim.formats._request_body import read_request, write_request
from tracetrim.formats._roo_code import VERSION as ROO_CODE_VERSION
from tracetrim.formats._roo_code import from_roo_code, is_roo_code_history, to_roo_code
from tracetrim.formats._shape import JsonLines, describe
from tracetrim.formats._swe_agent import from_swe_agent_history, to_swe_agent_history
from tracetrim.formats._tau2 import TAU2_BEFORE_MESSAGES, from_tau2, is_tau2_message, to_tau2

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
    require_sequence(messages, "messages", "message objects")
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
    checked_on_read: bool = True
    """Whether `read` has the writer check what was read; off for the neutral format, which reads and
    writes messages as they are and whose runner reports an invalid history as an outcome."""
    provider_fields: tuple[str, ...] = ()
    """Top-level keys the format uses for itself where tracetrim reads a request field of the same
    name (an Ollama body's ``options``): kept with the file, never read as tracetrim's."""
    locate: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.is_callable())
    )
    """The keys leading from a file object down to the object that holds ``messages_key``, where that
    is not the file itself (an Agent Framework session's ``("state", "in_memory")``)."""

    def holder(self, document: Mapping[str, Any]) -> Mapping[str, Any]:
        """The object of a file that holds its ``messages_key`` list and the history's other fields: the
        file itself, or what `locate` leads to. Raises `SnapshotError` for a file it cannot place."""
        for key in self.locate(document) if self.locate is not None else ():
            document = document[key]
        return document

    def split(self, document: Any) -> tuple[list[Any], dict[str, Any]]:
        """A file's message list (the file itself when it is a list) and the history's other fields (the
        `holder`'s other keys), as `read` takes them. Raises `SnapshotError` naming what is missing."""
        if isinstance(document, list):
            return document, {}
        holder = self.holder(document) if isinstance(document, Mapping) else None
        if not isinstance(holder, Mapping) or not isinstance(holder.get(self.messages_key), list):
            raise SnapshotError(
                f"expected a list of {self.name} messages or an object with a {self.messages_key!r} list"
            )
        return holder[self.messages_key], {k: v for k, v in holder.items() if k != self.messages_key}

    def with_holder(self, document: Mapping[str, Any], holder: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` with the object `holder` found replaced by ``holder``; every other key stays, in
        its order and with its value."""
        path = self.locate(document) if self.locate is not None else ()
        return _replaced(document, path, holder)

    def read(self, messages: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
        """``messages`` in this format as neutral messages; ``fields`` are the file's other keys (Anthropic's
        ``system``). Bad input raises `SnapshotError` naming the place; ``neutral`` is checked later.

        What this format's writer could not give back (a Bedrock ``toolUse`` in a user turn, which
        Bedrock refuses too) is refused here, so no file is taken in that no answer could be written
        for: whatever a plan keeps of it, every kept message is writable."""
        with gc_paused():  # pure conversion, as a plan's stages: new objects that hold no cycles
            neutral = self.reader(messages, fields or {})
            if not self.checked_on_read:
                return neutral
            # Checked for shape only and written as it is: validating and copying would encode the whole
            # history once more, and the caller validates what it goes on with. Writers leave it unchanged.
            check_messages(neutral)
            self.writer(ValidatedHistory(neutral))
        return neutral

    def write(self, messages: Sequence[Any]) -> dict[str, Any]:
        """Neutral ``messages`` as this format's fields: ``{"messages": [...]}``, plus ``system`` for
        Anthropic when the history has one."""
        with gc_paused():
            return self.writer(messages)

    def write_document(self, messages: Sequence[Any]) -> dict[str, Any]:
        """What `write` gives with the list under this format's ``messages_key`` (in its place): the
        whole file object, as in ``{"model", "input", ...}`` or an ATIF trajectory."""
        return {(self.messages_key if k == "messages" else k): v for k, v in self.write(messages).items()}

    def write_messages(self, messages: Sequence[Any]) -> Any:
        """What `write` gives, as one JSON value: the message list alone where that is all there is."""
        fields = self.write(messages)
        return fields["messages"] if set(fields) == {"messages"} else fields


def _replaced(document: Mapping[str, Any], path: Sequence[str], value: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with the object at ``path`` replaced by ``value``, the objects on the way copied."""
    if not path:
        return dict(value)
    head, *rest = path
    return {k: _replaced(v, rest, value) if k == head else v for k, v in document.items()}


def _one_arg(read: Callable[[Sequence[Any]], list[Message]]) -> _Reader:
    return lambda messages, fields: read(messages)


_BEFORE_MESSAGES = ("model", "max_tokens", "system", "instructions")
"""Request fields that usually come before the message list (the place it goes back when the file's
own place for it is not known)."""


def _body(
    read: _Reader, *, key: str = "messages", own: Sequence[str] = (), after: Sequence[str] = ()
) -> _Reader:
    """``read``, keeping a request body's (or file's) other fields (``model``, ``tools``, ...) for the
    writer."""
    return lambda messages, fields: read_request(messages, fields, read, key=key, own=own, after=after)


def _body_writer(write: _Writer) -> _Writer:
    return lambda messages: write_request(messages, write)


def _anthropic_reader(messages: Sequence[Any], fields: Mapping[str, Any]) -> list[Message]:
    return from_anthropic(messages, system=_check_system(fields))


def _bedrock_reader(messages: Sequence[Any], fields: Mapping[str, Any]) -> list[Message]:
    return from_bedrock(messages, system=fields.get("system"))


_TABLE = (
    HistoryFormat(
        "neutral",
        "tracetrim's neutral snapshot (AgentScope 2.x messages with content blocks)",
        _neutral,
        _messages_only(list),
        checked_on_read=False,
    ),
    HistoryFormat(
        "openai",
        "OpenAI chat-completions messages or request body (tool_calls, tool messages; model, tools kept)",
        _body(_one_arg(from_openai_chat), own=("system",), after=_BEFORE_MESSAGES),
        _body_writer(_messages_only(to_openai_chat)),
    ),
    HistoryFormat(
        "responses",
        "OpenAI Responses input items (message, function_call, function_call_output, reasoning)",
        _one_arg(from_openai_responses),
        _messages_only(to_openai_responses),
    ),
    HistoryFormat(
        "anthropic",
        "Anthropic Messages or request body (tool_use / tool_result blocks; system, model, tools kept)",
        _body(_anthropic_reader, own=("system",), after=_BEFORE_MESSAGES),
        _body_writer(to_anthropic),
    ),
    HistoryFormat(
        "bedrock",
        "AWS Bedrock Converse messages or request body (toolUse / toolResult blocks; modelId, system, "
        "inferenceConfig, toolConfig kept)",
        _body(_bedrock_reader, own=("system",), after=("modelId",)),
        _body_writer(to_bedrock),
    ),
    HistoryFormat(
        "gemini",
        "Gemini contents or a generateContent request body (functionCall / functionResponse parts; "
        "systemInstruction, tools kept)",
        _body(from_gemini, key="contents", own=GEMINI_SYSTEM, after=("model",)),
        _body_writer(to_gemini),
        messages_key="contents",
    ),
    HistoryFormat(
        "ollama",
        "Ollama chat messages or an /api/chat request body (tool_calls with object arguments and no "
        "ids, tool messages answering in order; model, tools, options kept)",
        _body(_one_arg(from_ollama), after=("model",)),
        _body_writer(_messages_only(to_ollama)),
        provider_fields=("options",),
    ),
    HistoryFormat(
        "ai-sdk",
        "Vercel AI SDK messages (ModelMessage / v4 CoreMessage: tool-call parts, tool messages of "
        "tool-result parts)",
        _one_arg(from_ai_sdk),
        to_ai_sdk,
    ),
    HistoryFormat(
        "agent-framework",
        "Microsoft Agent Framework messages (Message.to_dict(): contents of function_call and "
        "function_result; what its own compaction excluded kept in place)",
        _one_arg(from_agent_framework),
        to_agent_framework,
        locate=session_path,
    ),
    HistoryFormat(
        "pydantic-ai",
        "pydantic-ai messages as JSON (ModelMessagesTypeAdapter.dump_json: requests and responses of parts)",
        _one_arg(from_pydantic_ai_json),
        _messages_only(to_pydantic_ai_json),
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
    HistoryFormat(
        "responses-request",
        "an OpenAI Responses request body ({model, input: [items], ...}; every other field kept)",
        _body(_one_arg(from_openai_responses), key="input", after=_BEFORE_MESSAGES),
        _body_writer(_messages_only(to_openai_responses)),
        messages_key="input",
    ),
    HistoryFormat(
        "tau2",
        "a tau2-bench simulation (simulations[N] of a results file: tool_calls with name/arguments)",
        _body(_one_arg(from_tau2), after=TAU2_BEFORE_MESSAGES),
        _body_writer(_messages_only(to_tau2)),
    ),
    HistoryFormat(
        "inspect",
        "an Inspect AI eval sample (samples[N] of a log, .json or .eval: tool_calls naming their "
        "function, tool messages; the sample's other fields kept)",
        _body(_one_arg(from_inspect), after=INSPECT_BEFORE_MESSAGES),
        _body_writer(_messages_only(to_inspect)),
    ),
    HistoryFormat(
        "claude-code",
        "a Claude Code session JSONL (after its last compact_boundary; other entries kept in place)",
        _one_arg(from_claude_code),
        _messages_only(to_claude_code),
    ),
    HistoryFormat(
        "codex",
        "an OpenAI Codex CLI rollout JSONL (response_item lines after its last compacted line)",
        _one_arg(from_codex),
        _messages_only(to_codex),
    ),
    HistoryFormat(
        "gemini-cli",
        "a Gemini CLI session (~/.gemini/tmp/*/chats/*.json: user and gemini records, toolCalls with "
        "their results)",
        _one_arg(from_gemini_cli),
        _messages_only(to_gemini_cli),
    ),
    HistoryFormat(
        "adk",
        "a Google ADK session (adk run --save_session: events with Gemini contents; other events and "
        "what ADK compacted kept in place)",
        _body(_one_arg(from_adk), key="events", after=("state",)),
        _body_writer(_messages_only(to_adk)),
        messages_key="events",
    ),
    HistoryFormat(
        "openhands",
        "an OpenHands SDK event list (ActionEvent / ObservationEvent / MessageEvent ...)",
        _one_arg(from_openhands),
        _messages_only(to_openhands),
    ),
    HistoryFormat(
        "openhands-v0",
        "an OpenHands V0 event history (openhands-ai < 1.0: a trajectory file's events, or an "
        "evaluation output line's history)",
        _one_arg(from_openhands_v0),
        _messages_only(to_openhands_v0),
        messages_key="history",
    ),
    HistoryFormat(
        "opencode",
        "an OpenCode session (opencode export: messages of parts, a tool part a call and its result; "
        "what its own compaction hid kept in place)",
        _body(_one_arg(from_opencode), after=("info",)),
        _body_writer(_messages_only(to_opencode)),
    ),
    HistoryFormat(
        "atif",
        "an ATIF trajectory (Harbor's agent trajectory format: steps with tool_calls and observations)",
        lambda steps, fields: from_atif(steps, fields),
        to_atif,
        messages_key="steps",
    ),
    HistoryFormat(
        "pi",
        "a pi coding agent session JSONL (the path pi resumes from, after its last compaction; other "
        "entries and branches kept in place)",
        _one_arg(from_pi),
        _messages_only(to_pi),
    ),
    HistoryFormat(
        "qwen-code",
        "a Qwen Code session JSONL (the records Qwen Code resumes from, after its last compression; "
        "system records and other branches kept in place)",
        _one_arg(from_qwen_code),
        _messages_only(to_qwen_code),
    ),
    HistoryFormat(
        "kimi-cli",
        "a Kimi CLI context JSONL (~/.kimi/sessions/*/*/context.jsonl: chat messages; its system prompt, "
        "checkpoint and usage records kept in place)",
        _one_arg(from_kimi_cli),
        _messages_only(to_kimi_cli),
    ),
    HistoryFormat(
        "roo-code",
        "a Roo Code task history (api_conversation_history.json: Anthropic messages, or AI SDK messages "
        "under version 2; what its own condensing and truncation replaced kept in place)",
        _body(from_roo_code, after=("version",)),
        _body_writer(_messages_only(to_roo_code)),
    ),
    HistoryFormat(
        "cline",
        "a Cline task history (api_conversation_history.json: Anthropic messages that Cline names by "
        "index elsewhere, so every message and block keeps its place; a dropped call leaves a stub result)",
        from_cline,
        _messages_only(to_cline),
        default_tools=CLINE_TOOLS,
    ),
    HistoryFormat(
        "continue",
        "a Continue session (~/.continue/sessions/<id>.json, as its CLI and IDE extensions save it: history "
        "items whose assistant messages hold their calls' results in toolCallStates)",
        _body(_one_arg(from_continue), key="history", after=("workspaceDirectory",)),
        _body_writer(_messages_only(to_continue)),
        messages_key="history",
        default_tools=CONTINUE_TOOLS,
    ),
    HistoryFormat(
        "copilot-cli",
        "a GitHub Copilot CLI session (~/.copilot/session-state/<id>/events.jsonl: events; only what "
        "follows its last compaction, clear or truncation is judged, every other event kept in place)",
        _one_arg(from_copilot_cli),
        _messages_only(to_copilot_cli),
        default_tools=COPILOT_TOOLS,
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
_REQUEST_FIELDS = frozenset({"system", "model", "max_tokens"})
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
    messages = [m for m in messages if not (isinstance(m, dict) and m.get("role") == EXIT_ROLE)]
    if not all(isinstance(m, dict) and m.get("role") in ("system", "user", "assistant") for m in messages):
        return False
    if not all(isinstance(m.get("content"), str) for m in messages):
        return False
    turns = [m["content"] for m in messages if m["role"] == "assistant"]
    return bool(turns) and any(len(ACTION_REGEX.findall(text)) == 1 for text in turns)


def _ai_sdk_tool_message(message: dict[str, Any]) -> bool:
    """A tool message of parts with no ``tool_call_id``: the AI SDK's, which names its calls in its
    parts (OpenAI chat puts an id on every tool message; Ollama's hold text), told so even when a drop
    left it no part."""
    return (
        message.get("role") == "tool"
        and "tool_call_id" not in message
        and isinstance(message.get("content"), list)
    )


def detect_messages(messages: Sequence[Any]) -> str:
    """The format of a bare message list, told by shape (`detect_format` for whole files)."""
    items = [m for m in messages if isinstance(m, dict)]
    if not items:
        return "neutral"
    if len(items) == len(messages) and is_roo_code_history(items):
        return "roo-code"
    if len(items) == len(messages) and is_cline_history(items):
        return "cline"
    if any(is_langchain_json(m) for m in items):
        return "langchain"
    if any(is_agent_framework_message(m) for m in items):
        return "agent-framework"
    if any(is_pydantic_ai_message(m) for m in items):
        return "pydantic-ai"
    if any(is_gemini_content(m) for m in items):
        return "gemini"
    if any(tag(m.get("type")) in _RESPONSES_TYPES for m in items):
        return "responses"
    if any(is_tau2_message(m) for m in items):
        return "tau2"
    if any(is_inspect_message(m) for m in items):
        return "inspect"
    if any(is_ollama_message(m) for m in items):
        return "ollama"
    if any(is_ai_sdk_part(b) for b in _blocks(items)) or any(_ai_sdk_tool_message(m) for m in items):
        return "ai-sdk"
    if any(m.get("role") == "tool" or "tool_calls" in m for m in items):
        return "openai"
    blocks = _blocks(items)
    if any(is_bedrock_block(b) for b in blocks):  # Converse blocks have one key and no "type"
        return "bedrock"
    kinds = {tag(b.get("type")) for b in blocks}
    if kinds & _ANTHROPIC_BLOCKS or any("tool_use_id" in b for b in blocks):
        return "anthropic"
    if kinds & _NEUTRAL_BLOCKS - {"thinking"}:
        return "neutral"
    if "thinking" in kinds:  # both have thinking blocks; neutral messages carry ids, Anthropic's do not
        return "neutral" if all("id" in m for m in items) else "anthropic"
    if _is_mini_swe_agent(items):
        return "mini-swe-agent"
    if any(isinstance(m.get("content"), str) or tag(m.get("role")) in _CHAT_ONLY_ROLES for m in items):
        return "openai"
    if kinds & _CHAT_PARTS:
        return "openai"
    # text-only block lists: neutral messages carry ids, Anthropic messages do not
    return "neutral" if all("id" in m for m in items) else "anthropic"


def _whole_list(data: Sequence[Any]) -> str | None:
    """The format of a list that is a whole file of entries or events rather than messages."""
    items = [item for item in data if isinstance(item, dict)]
    if not items or len(items) != len(data):
        return None
    if is_codex_rollout(items):
        return "codex"
    if is_pi_session(items):
        return "pi"
    if is_qwen_code_session(items):
        return "qwen-code"
    if is_kimi_cli_context(items):
        return "kimi-cli"
    if is_copilot_cli_session(items):
        return "copilot-cli"
    if all(is_gemini_cli_record(item) for item in items) or is_gemini_cli_log(items):
        return "gemini-cli"
    if all(is_openhands_event(item) for item in items):
        return "openhands"
    if all(is_openhands_v0_event(item) for item in items):
        return "openhands-v0"
    if all(is_adk_event(item) for item in items):
        return "adk"
    if all(is_atif_step(item) for item in items):
        return "atif"
    if all(is_opencode_message(item) for item in items):
        return "opencode"
    if any(is_claude_code_entry(item) for item in items) and not any("role" in item for item in items):
        return "claude-code"
    return None


def _is_message(item: Any) -> bool:
    """Whether ``item`` is told to be a message (or item) of a format whose history is a list of them."""
    if not isinstance(item, dict):
        return False
    return (
        "role" in item
        or tag(item.get("type")) in _RESPONSES_TYPES
        or is_langchain_json(item)
        or is_pydantic_ai_message(item)
        or is_gemini_content(item)
    )


def _messages_a_line(lines: Sequence[Any]) -> bool:
    """Whether JSON Lines are a message list, one message a line: some are told to be messages and
    every one is shaped like one (Responses items of other types, ``web_search_call`` say, too)."""
    shaped = all(
        isinstance(item, dict) and ("role" in item or isinstance(item.get("type"), str) or "kind" in item)
        for item in lines
    )
    return shaped and any(_is_message(item) for item in lines)


def _unsupported(data: Any) -> FormatError:
    return FormatError(
        f"{describe(data)}: not a history format tracetrim reads ({', '.join(HISTORY_FORMATS)})"
    )


def _keyed_runs(data: Any) -> list[Any] | None:
    """The runs of a results file that holds them under a key: a tau2-bench results file's
    ``simulations`` (``{"info", "tasks", "simulations"}``) or an Inspect eval log's ``samples``; else None."""
    if is_inspect_log(data):
        samples: list[Any] = data["samples"]
        return samples
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list) or "messages" in data:
        return None
    simulations: list[Any] = data["simulations"]
    return simulations


def trajectory_items(data: Any) -> list[Any]:
    """The trajectories of a file that holds several (`trajectory_list` names their format): the list
    itself, a tau2-bench results file's ``simulations`` or an Inspect eval log's ``samples``."""
    simulations = _keyed_runs(data)
    if simulations is not None:
        return simulations
    return list(data) if isinstance(data, list) else [data]


def _history_kind(history: list[Any]) -> str | None:
    """Whose ``history`` a file holds: an OpenHands V0 evaluation line's events, or a SWE-agent
    ``.traj``'s messages (which carry a ``role``), or a Continue session's items (a ``message`` and
    ``contextItems`` each); None for another tool's ``history``, which no format here reads."""
    if history and all(is_openhands_v0_event(e) for e in history):
        return "openhands-v0"
    if is_continue_history(history):
        return "continue"
    if not history or any(isinstance(e, dict) and "role" in e for e in history):
        return "swe-agent"
    return None


def _trajectory_kind(item: Any) -> str | None:
    """The format of one item of a list, when the item is a whole trajectory rather than a message."""
    if not isinstance(item, dict) or "role" in item or is_langchain_json(item):
        return None
    if isinstance(item.get("traj"), list):
        return "tau-bench"
    if isinstance(item.get("messages"), list) and "task_id" in item:
        return "tau2"
    if is_inspect_sample(item):
        return "inspect"
    if isinstance(item.get("history"), list):
        return _history_kind(item["history"])
    if isinstance(item.get("messages"), list):
        return detect_format(item)
    return None


def trajectory_list(data: Any) -> str | None:
    """The format of each trajectory when ``data`` is a list of whole trajectories (or a tau2-bench
    results file, `trajectory_items`), else None."""
    simulations = _keyed_runs(data)
    if simulations is not None:
        data = simulations
    if not isinstance(data, list) or not data:  # JSONL of whole trajectories too (an eval's output.jsonl)
        return None
    kinds = {_trajectory_kind(item) for item in data}
    if None in kinds or len(kinds) != 1:
        return None
    return kinds.pop()


def _chat_only(messages: Sequence[Any]) -> bool:
    """Whether a message list holds what only chat-completions has: system/tool roles, ``tool_calls``."""
    return any(
        isinstance(m, dict) and (m.get("role") in (*_CHAT_ONLY_ROLES, "tool") or "tool_calls" in m)
        for m in messages
    )


def detect_format(data: Any) -> str:
    """The format of a parsed history file (a message list or an object holding one), told by shape.

    A SWE-agent ``.traj`` has ``history`` (a Continue session too, of items that hold messages); a
    tau-bench item ``traj``; a mini-swe-agent file string messages with bash blocks; a top-level
    ``system`` beside ``messages`` means Anthropic; ``input`` without ``messages`` a Responses request,
    ``contents`` a Gemini one; ``steps`` with ``schema_version`` ATIF; ``task_id`` beside ``messages`` a
    tau2 simulation; ``type: "session"`` with a ``state`` history an Agent Framework session. A list of
    Codex rollout lines, OpenHands events, ATIF steps or Claude Code entries is told by those shapes
    (which stay when compaction drops every tool pair); any other list by its messages
    (`detect_messages`).
    A list of whole trajectories (or a tau2 results file) raises `TrajectoryListError`, since one
    history is wanted. What no format reads raises `FormatError` saying what it looks like and what
    is supported.
    """
    kind = trajectory_list(data)
    if kind is not None:
        raise TrajectoryListError(len(trajectory_items(data)), kind)
    if isinstance(data, dict):
        if isinstance(data.get("history"), list):
            # a Continue session with nothing in it yet is told by its own keys
            empty_session = not data["history"] and "sessionId" in data
            kind = "continue" if empty_session else _history_kind(data["history"])
            if kind is None:
                raise _unsupported(data)
            return kind
        if isinstance(data.get("traj"), list):
            return "tau-bench"
        if str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
            return "mini-swe-agent"
        if isinstance(data.get("steps"), list) and (
            "schema_version" in data or isinstance(data.get("agent"), dict)
        ):
            return "atif"
        if is_agent_framework_session(data):
            return "agent-framework"
        messages = data.get("messages")
        if not isinstance(messages, list) and is_adk_session(data):
            return "adk"
        if not isinstance(messages, list) and isinstance(data.get("contents"), list):
            return "gemini"
        if not isinstance(messages, list) and isinstance(data.get("input"), list):
            return "responses-request"
        if "messages" in data and not isinstance(messages, list):
            raise FormatError(f"expected a list of messages under 'messages', got {type(messages).__name__}")
        if not isinstance(messages, list):
            raise _unsupported(data)
        if messages and all(is_gemini_cli_record(m) for m in messages):
            return "gemini-cli"
        if data.get("version") == ROO_CODE_VERSION and is_roo_code_history(messages, versioned=True):
            return "roo-code"
        if messages and all(is_opencode_message(m) for m in messages):
            return "opencode"
        if "task_id" in data or any(is_tau2_message(m) for m in messages):
            return "tau2"
        if is_inspect_sample(data):
            return "inspect"
        found = detect_messages(messages)
        if found == "cline" and not _REQUEST_FIELDS.isdisjoint(data):
            return "anthropic"  # a request Cline sent (a proxy's log), not the file it indexes
        if "system" in data and found in ("neutral", "openai"):
            ids = all(isinstance(m, dict) and "id" in m for m in messages)
            return "anthropic" if found == "openai" or not ids else found
        if found == "openai" and "max_tokens" in data and not _chat_only(messages):
            # Anthropic requires max_tokens; a chat request that has it is told by its roles and calls
            return "anthropic"
        return found
    if isinstance(data, list):
        whole = _whole_list(data)
        if whole is not None:
            return whole
        if isinstance(data, JsonLines) and not _messages_a_line(data):
            raise _unsupported(data)
        return detect_messages(data)
    raise _unsupported(data)
