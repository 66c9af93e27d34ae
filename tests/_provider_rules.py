"""The providers' own rules for a request's history, checked the way each provider checks them.

Each ``check_*`` raises `AssertionError` naming the message and the rule. Structure is checked with the
providers' SDK request types (pydantic over the ``openai`` and ``anthropic`` TypedDicts); the pairing
rules those types cannot express are written here from the providers' API references and the errors
they answer (Anthropic: "tool_use ids were found without tool_result blocks immediately after";
OpenAI chat: "An assistant message with 'tool_calls' must be followed by tool messages responding to each
'tool_call_id'"; Responses: "No tool output found for function call", "reasoning was provided without its
required following item").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic


def _consume(value: Any) -> None:
    """Walk a validated value: pydantic validates iterables of TypedDicts lazily, as they are read."""
    if isinstance(value, Mapping):
        for item in value.values():
            _consume(item)
    elif isinstance(value, (str, bytes)):
        return
    elif isinstance(value, Iterable):
        for item in value:
            _consume(item)


def _sdk_check(adapter: pydantic.TypeAdapter[Any], value: Any, what: str) -> None:
    try:
        _consume(adapter.validate_python(value))
    except pydantic.ValidationError as exc:
        raise AssertionError(f"not a valid {what} per the SDK's request types: {exc}") from None


def check_anthropic(body: Mapping[str, Any]) -> None:
    """A Messages API request: SDK types, user first, every ``tool_use`` answered first thing in the next
    user turn, every ``tool_result`` answering the turn before, no empty turn or text block."""
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    _sdk_check(pydantic.TypeAdapter(MessageCreateParamsNonStreaming), body, "Anthropic request")
    messages = body["messages"]
    assert messages and messages[0]["role"] == "user", "the first message must be a user turn"
    seen: set[str] = set()
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        last = i == len(messages) - 1
        assert blocks or (last and message["role"] == "assistant"), f"message {i}: empty content"
        for block in blocks:
            if block["type"] == "text":
                assert block["text"], f"message {i}: an empty text block"
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert not seen & set(uses), f"message {i}: a tool_use id used twice"
        seen.update(uses)
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if results:
            assert message["role"] == "user", f"message {i}: tool_result outside a user turn"
            leading = 0
            while leading < len(blocks) and blocks[leading]["type"] == "tool_result":
                leading += 1
            assert leading == len(results), f"message {i}: tool_result blocks must come first"
            previous = messages[i - 1] if i else None
            asked = (
                {b["id"] for b in previous["content"] if isinstance(b, dict) and b["type"] == "tool_use"}
                if previous is not None
                and previous["role"] == "assistant"
                and isinstance(previous["content"], list)
                else set()
            )
            stray = set(results) - asked
            assert not stray, f"message {i}: tool_result for {sorted(stray)} without a tool_use just before"
        if uses and not (last and message["role"] == "assistant"):
            following = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {
                    b["tool_use_id"]
                    for b in following["content"]
                    if isinstance(b, dict) and b["type"] == "tool_result"
                }
                if following is not None and isinstance(following["content"], list)
                else set()
            )
            missing = set(uses) - answered
            assert not missing, (
                f"message {i}: tool_use {sorted(missing)} without a tool_result immediately after"
            )


def check_openai_chat(messages: Sequence[Mapping[str, Any]]) -> None:
    """Chat-completions messages: SDK types; ``tool_calls`` never empty and each answered by a ``tool``
    message before the next other message; every ``tool`` message answering such a call; an assistant
    message has content or calls."""
    from openai.types.chat import ChatCompletionMessageParam

    _sdk_check(pydantic.TypeAdapter(list[ChatCompletionMessageParam]), messages, "chat request")
    open_calls: set[str] = set()
    asked: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            assert call_id in open_calls, f"message {i}: tool message for {call_id!r} answers no open call"
            open_calls.discard(call_id)
            continue
        assert not open_calls, f"message {i}: tool_calls {sorted(open_calls)} not answered before it"
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None:
                assert calls, f"message {i}: 'tool_calls' is an empty list"
                ids = [c["id"] for c in calls]
                assert not asked & set(ids), f"message {i}: a tool call id used twice"
                asked.update(ids)
                open_calls = set(ids)
            else:
                assert message.get("content") is not None, (
                    f"message {i}: an assistant message with no content"
                )
    assert not open_calls, f"tool_calls {sorted(open_calls)} never answered"


_OUTPUT_ITEMS = frozenset(
    {"function_call", "message", "custom_tool_call", "web_search_call", "file_search_call"}
)


def check_responses(items: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """Responses input items: SDK types; every ``function_call`` answered by a later output with its
    ``call_id`` and every output answering an earlier call; a ``reasoning`` item followed by the item that
    followed it when it was sent (its required following item)."""
    from openai.types.responses import ResponseInputItemParam

    _sdk_check(pydantic.TypeAdapter(list[ResponseInputItemParam]), items, "Responses input")
    follows = {
        item["id"]: _identity(sent[k + 1])
        for k, item in enumerate(sent)
        if item.get("type") == "reasoning" and k + 1 < len(sent)
    }
    called: set[str] = set()
    answered: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            called.add(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in called, f"item {k}: output for {item['call_id']!r} before any call"
            answered.add(item["call_id"])
        elif kind == "reasoning":
            after = items[k + 1] if k + 1 < len(items) else None
            assert after is not None and after.get("type", "message") in (_OUTPUT_ITEMS | {"reasoning"}), (
                f"item {k}: reasoning {item.get('id')!r} without its required following item"
            )
            if item.get("id") in follows:
                assert _identity(after) == follows[item["id"]], (
                    f"item {k}: reasoning {item['id']!r} no longer precedes the item it was sent before"
                )
    missing = called - answered
    assert not missing, f"no tool output found for function call {sorted(missing)}"


def _identity(item: Mapping[str, Any]) -> Any:
    return item.get("id") or item.get("call_id") or (item.get("type"), item.get("role"))


def check_langchain_for_anthropic(messages: Sequence[Any]) -> None:
    """LangChain messages as langchain-anthropic sends them (its own formatter), then Anthropic's rules;
    and each ``AIMessage``'s ``tool_use`` content blocks agree with its ``tool_calls``."""
    from langchain_anthropic.chat_models import _format_messages
    from langchain_core.messages import AIMessage

    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and isinstance(message.content, list):
            blocks = {b["id"] for b in message.content if isinstance(b, dict) and b.get("type") == "tool_use"}
            calls = {c["id"] for c in message.tool_calls}
            assert blocks <= calls, (
                f"message {i}: tool_use blocks {sorted(blocks - calls)} with no tool_calls entry"
            )
    system, formatted = _format_messages(list(messages), model="claude-sonnet-4-5")
    body: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": formatted}
    if system:
        body["system"] = system
    check_anthropic(body)


def check_langchain_for_openai(messages: Sequence[Any]) -> None:
    """LangChain messages as langchain-openai sends them (its own converter), then chat's rules."""
    from langchain_openai.chat_models.base import _convert_message_to_dict

    check_openai_chat([_convert_message_to_dict(m) for m in messages])


def check_swe_agent(history: Sequence[Mapping[str, Any]]) -> None:
    """A text-protocol SWE-agent history: every assistant turn with an ``action`` is followed by its
    observation (a user message) before the next assistant turn."""
    waiting: int | None = None
    for i, entry in enumerate(history):
        if entry["role"] == "assistant":
            assert waiting is None, f"message {waiting}: its action has no observation"
            if isinstance(entry.get("action"), str) and entry["action"].strip():
                waiting = i
        elif entry["role"] == "user":
            waiting = None


_BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def check_mini_swe_agent(messages: Sequence[Mapping[str, Any]]) -> None:
    """A mini-swe-agent history: every assistant turn holding one bash block is followed by its output."""
    waiting: int | None = None
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            assert waiting is None, f"message {waiting}: its command has no output after it"
            if len(_BASH.findall(message["content"])) == 1:
                waiting = i
        elif message["role"] == "user":
            waiting = None
