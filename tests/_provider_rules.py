"""The providers' own rules for a request's history, checked the way each provider checks them.

Each ``check_*`` raises `AssertionError` naming the message and the rule. Structure is checked with the
providers' SDK request types (pydantic over the ``openai`` and ``anthropic`` TypedDicts); the pairing
rules those types cannot express are written here from the providers' API references and the errors
they answer (Anthropic: "tool_use ids were found without tool_result blocks immediately after";
OpenAI chat: "An assistant message with 'tool_calls' must be followed by tool messages responding to each
'tool_call_id'"; Responses: "No tool output found for function call", "reasoning was provided without its
required following item"; Gemini: "Please ensure that multiturn requests alternate between user and model",
"the number of function response parts is equal to the number of function call parts"; Bedrock: "The number
of toolResult blocks ... exceeds the number of toolUse blocks of previous turn", "A conversation must
alternate between user and assistant roles"). Gemini turns are checked with google-genai's ``Content``
type, Bedrock requests with botocore's Converse input shape.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
    {
        "function_call",
        "message",
        "custom_tool_call",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "image_generation_call",
        "code_interpreter_call",
    }
)
"""The items a model outputs: what a ``reasoning`` item may precede."""
_CALL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
    }
)
"""Calls the client runs: each one's ``<type>_output`` must follow ("No tool output found for ...")."""


def check_responses(
    items: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]], *, types: bool = True
) -> None:
    """Responses input items: SDK types (``types=False`` for items a client writes without the ids the
    SDK's types ask of replayed output, as Inspect does for turns no Responses model wrote); every call
    the client runs (``function_call``, ``custom_tool_call``, ...) answered by a later output of its kind
    and every output answering an earlier call; a ``reasoning`` item followed by the item that followed
    it when it was sent (its required following item)."""
    from openai.types.responses import ResponseInputItemParam

    if types:
        _sdk_check(pydantic.TypeAdapter(list[ResponseInputItemParam]), items, "Responses input")
    follows = {
        item["id"]: _identity(sent[k + 1])
        for k, item in enumerate(sent)
        if item.get("type") == "reasoning" and "id" in item and k + 1 < len(sent)
    }
    reasoned = _reasoning_turns(sent)
    present = {item["id"] for item in items if item.get("type") == "reasoning" and "id" in item}
    for k, item in enumerate(items):
        needed = reasoned.get(_identity(item))
        assert needed is None or needed in present, (
            f"item {k}: {item.get('type', 'message')} {_identity(item)!r} provided without its required "
            f"'reasoning' item {needed!r}"
        )
    called: set[tuple[str, str]] = set()
    answered: set[tuple[str, str]] = set()
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind in _CALL_ITEMS:
            called.add((kind, item["call_id"]))
        elif kind.endswith("_output") and kind.removesuffix("_output") in _CALL_ITEMS:
            # a local shell call's output names its call by ``id``, the others by ``call_id``
            call = (kind.removesuffix("_output"), item.get("call_id") or item["id"])
            assert call in called, f"item {k}: {kind} for {call[1]!r} before any call"
            answered.add(call)
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
    assert not missing, f"no tool output found for {sorted(missing)}"


def _reasoning_turns(sent: Sequence[Mapping[str, Any]]) -> dict[Any, str]:
    """Each output item with an id (the server's record of it) sent after a reasoning item of its turn
    (the items the model output after it, up to the next input item or reasoning), by identity, to that
    reasoning's id: the server refuses the item without it."""
    turns: dict[Any, str] = {}
    leading: str | None = None
    for item in sent:
        kind = item.get("type", "message")
        if kind == "reasoning":
            leading = item.get("id")
        elif leading is not None and kind in _OUTPUT_ITEMS and item.get("role", "assistant") == "assistant":
            if item.get("id"):
                turns[_identity(item)] = leading
        else:
            leading = None
    return turns


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


def _gemini_key(part: Mapping[str, Any], camel: str, snake: str) -> Any:
    return part.get(camel, part.get(snake))


def check_gemini(body: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
    """A ``generateContent`` request: the SDK's ``Content`` type for every turn; turns alternate user and
    model ("Please ensure that multiturn requests alternate between user and model"); no turn without
    parts; a turn's calls answered by exactly as many ``functionResponse`` parts in the very next turn,
    a user turn ("the number of function response parts is equal to the number of function call parts of
    the function call turn"), by name in order or by id; a turn whose first call was sent signed still
    has a signed first call (Gemini 3 refuses an unsigned one)."""
    from google.genai import types

    contents = body["contents"]
    for i, content in enumerate(contents):
        try:
            types.Content.model_validate(content)
        except pydantic.ValidationError as exc:
            raise AssertionError(f"content {i}: not a Content per google-genai: {exc}") from None
        assert content["parts"], f"content {i}: a turn without parts"
        if i:
            assert content.get("role", "user") != contents[i - 1].get("role", "user"), (
                f"content {i}: two {content.get('role', 'user')} turns in a row"
            )

    def calls_of(content: Mapping[str, Any]) -> list[Any]:
        found = (_gemini_key(p, "functionCall", "function_call") for p in content["parts"])
        return [c for c in found if c is not None]

    def first_call(content: Mapping[str, Any]) -> Any:
        return next((p for p in content["parts"] if _gemini_key(p, "functionCall", "function_call")), None)

    signed = {  # every call of a turn sent with its first call signed
        repr(call)
        for content in sent["contents"]
        if (first_call(content) or {}).keys() & {"thoughtSignature", "thought_signature"}
        for call in calls_of(content)
    }
    for i, content in enumerate(contents):
        calls = calls_of(content)
        answers = [_gemini_key(p, "functionResponse", "function_response") for p in content["parts"]]
        answers = [a for a in answers if a is not None]
        if answers:
            previous = contents[i - 1] if i else {"parts": []}
            asked = calls_of(previous)
            assert content.get("role", "user") == "user", (
                f"content {i}: function responses outside a user turn"
            )
            assert [a["name"] for a in answers] == [c["name"] for c in asked], (
                f"content {i}: {len(answers)} function responses for {len(asked)} calls just before"
            )
            assert [a.get("id") for a in answers] == [c.get("id") for c in asked], f"content {i}: ids differ"
        if calls and i + 1 < len(contents):
            following = contents[i + 1]["parts"]
            assert any(_gemini_key(p, "functionResponse", "function_response") for p in following), (
                f"content {i}: calls without function responses in the next turn"
            )
        first = first_call(content)
        if first is not None and any(repr(call) in signed for call in calls):
            assert first.keys() & {"thoughtSignature", "thought_signature"}, (
                f"content {i}: the first call lost the turn's thought signature"
            )


def _block_identity(block: Mapping[str, Any] | None) -> str:
    """What a block is, whatever was dropped around it or shortened in it."""
    if block is None:
        return "nothing"
    kind, value = next(iter(block.items()))
    if kind in ("toolUse", "toolResult"):
        return f"{kind}:{value['toolUseId']}"
    return json.dumps(block, sort_keys=True)


def _cached(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The blocks a cache point follows, by what they are."""
    return {
        _block_identity(message["content"][k - 1] if k else None)
        for message in messages
        for k, block in enumerate(message["content"])
        if "cachePoint" in block
    }


def check_bedrock(messages: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """Bedrock's ValidationException rules for ``messages``, as sent as ``sent``: turns alternate from a
    user turn; no empty content; one key a block; an assistant turn's toolUse ids are exactly the
    toolResult ids of the next turn, a user turn; cache points follow the blocks they followed."""
    assert messages and messages[0]["role"] == "user", "the first message must be a user turn"
    for i, message in enumerate(messages):
        assert message["role"] in ("user", "assistant"), f"message {i}: role {message['role']!r}"
        assert i == 0 or message["role"] != messages[i - 1]["role"], (
            f"message {i}: two {message['role']} turns"
        )
        assert message["content"], f"message {i}: empty content"
        for block in message["content"]:
            assert len(block) == 1, f"message {i}: a block with keys {sorted(block)}"
            for item in block.get("toolResult", {}).get("content", []):
                assert len(item) == 1, f"message {i}: a toolResult item with keys {sorted(item)}"
        uses = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        following = messages[i + 1] if i + 1 < len(messages) else None
        answers = (
            [b["toolResult"]["toolUseId"] for b in following["content"] if "toolResult" in b]
            if following is not None
            else []
        )
        if uses:
            assert message["role"] == "assistant", f"message {i}: toolUse outside an assistant turn"
            assert following is not None and following["role"] == "user", f"message {i}: no user turn after"
            assert sorted(answers) == sorted(uses), f"message {i}: toolUse {uses} answered by {answers}"
        elif following is not None:
            assert not answers, f"message {i + 1}: toolResult {answers} without a toolUse just before"
    moved = _cached(messages) - _cached(sent)
    assert not moved, f"a cache point moved after {sorted(moved)}"


def gemini_cli_resumed(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``generateContent`` history the Gemini CLI sends when it resumes a session (as its resume code
    converts records, gemini-cli-core 0.61 ``convertSessionToClientHistory``): a user record is a user
    turn; a gemini record a model turn of its text and ``functionCall`` parts (its content alone where
    that holds calls or thoughts: a record the CLI synced from its history), then a user turn of its
    calls' result parts; info, error and warning records are not sent. Turns of one role in a row are
    then joined, as the CLI joins them before it sends (``coalesceConsecutiveRoles``, "to prevent 400
    Bad Request errors"): a user record after a record's results is one user turn with them."""
    contents: list[dict[str, Any]] = []
    for record in records:
        text = record["content"] if isinstance(record["content"], str) else None
        parts: list[Any] = [{"text": text}] if text else list(record["content"] if text is None else [])
        if record["type"] == "user":
            contents.append({"role": "user", "parts": parts})
        elif record["type"] == "gemini":
            calls = record.get("toolCalls", [])
            if not any("functionCall" in p or p.get("thought") for p in parts):
                parts += [
                    {"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}} for c in calls
                ]
            if parts:
                contents.append({"role": "model", "parts": parts})
            answers = [part for c in calls for part in c.get("result") or []]
            if answers:
                contents.append({"role": "user", "parts": answers})
    joined: list[dict[str, Any]] = []
    for content in contents:
        if joined and joined[-1]["role"] == content["role"]:
            joined[-1] = {**joined[-1], "parts": [*joined[-1]["parts"], *content["parts"]]}
        else:
            joined.append(content)
    return {"contents": joined}


def check_gemini_cli(records: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """A Gemini CLI session's records: every call sent with a result still carries one, every record the
    model never sees is where it was, and the history the CLI sends on resume keeps Gemini's rules
    (`check_gemini`)."""
    answered = {c["id"] for r in sent for c in r.get("toolCalls", []) if c.get("result")}
    for i, record in enumerate(records):
        for call in record.get("toolCalls", []):
            assert call.get("result") or call["id"] not in answered, (
                f"record {i}: call {call['id']} lost its result"
            )
    shown = [r for r in sent if r["type"] not in ("user", "gemini")]
    assert [r for r in records if r["type"] not in ("user", "gemini")] == shown, "a shown record moved"
    check_gemini(gemini_cli_resumed(records), gemini_cli_resumed(sent))


def check_ai_sdk(messages: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """AI SDK messages as the SDK checks them before a call ("Tool result is missing for tool call ...",
    ``MissingToolResultsError``) and as the providers behind it want them: valid roles, no empty content,
    ``tool`` messages of ``tool-result`` parts only, every ``tool-call`` answered by the ``tool`` messages
    right after its assistant message and every result answering one there, and no two user or assistant
    messages in a row that were not sent so."""

    def calls(message: Mapping[str, Any]) -> list[str]:
        content = message["content"]
        return (
            [p["toolCallId"] for p in content if p.get("type") == "tool-call"]
            if isinstance(content, list)
            else []
        )

    sent_pairs = {
        (a.get("role"), b.get("role"), json.dumps(a["content"]), json.dumps(b["content"]))
        for a, b in itertools.pairwise(sent)
    }
    for i, message in enumerate(messages):
        role = message["role"]
        assert role in ("system", "user", "assistant", "tool"), f"message {i}: role {role!r}"
        assert message["content"], f"message {i}: empty content"
        if role == "tool":
            assert all(p["type"] == "tool-result" for p in message["content"]), f"message {i}: not a result"
        if i and role in ("user", "assistant") and messages[i - 1]["role"] == role:
            pair = (role, role, json.dumps(messages[i - 1]["content"]), json.dumps(message["content"]))
            assert pair in sent_pairs, f"message {i}: two {role} messages in a row"
        asked = calls(message)
        answered: list[str] = []
        k = i + 1
        while k < len(messages) and messages[k]["role"] == "tool":
            answered += [p["toolCallId"] for p in messages[k]["content"]]
            k += 1
        if role == "assistant":
            assert sorted(answered) == sorted(asked), f"message {i}: calls {asked} answered by {answered}"
        if role == "tool" and (i == 0 or messages[i - 1]["role"] != "tool"):
            assert i and messages[i - 1]["role"] == "assistant", f"message {i}: results without their calls"


def check_langchain_for_gemini(messages: Sequence[Any]) -> None:
    """LangChain messages as langchain-google-genai sends them to Gemini (its own ``_parse_chat_history``
    makes the ``contents``), checked by Gemini's rules (`check_gemini`)."""
    from langchain_google_genai.chat_models import _parse_chat_history

    _, contents = _parse_chat_history(list(messages))
    body = {"contents": [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in contents]}
    check_gemini(body, body)


def check_ollama(messages: Sequence[Mapping[str, Any]]) -> None:
    """Ollama chat messages as the ``ollama`` client's ``Message`` type takes them, and as Ollama's chat
    templates render them: a tool call's arguments an object; the ``tool`` messages right after an
    assistant message with calls answer those calls in order (one each, naming its tool in
    ``tool_name``), and no ``tool`` message stands anywhere else."""
    from ollama import Message

    for i, message in enumerate(messages):
        Message.model_validate(message)
        calls = message.get("tool_calls") or []
        assert all(isinstance(c["function"]["arguments"], dict) for c in calls), f"message {i}: arguments"
        if message["role"] == "tool":
            assert i and messages[i - 1]["role"] in ("assistant", "tool"), f"message {i}: a stray result"
        if message["role"] != "assistant" or not calls:
            continue
        answers = []
        k = i + 1
        while k < len(messages) and messages[k]["role"] == "tool":
            answers.append(messages[k].get("tool_name"))
            k += 1
        asked = [c["function"]["name"] for c in calls]
        assert answers == asked, f"message {i}: calls {asked} answered by {answers}"
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            j = i
            while messages[j - 1]["role"] == "tool":
                j -= 1
            assert messages[j - 1].get("tool_calls"), f"message {i}: results without their calls"


def check_pydantic_ai(messages: Sequence[Mapping[str, Any]]) -> None:
    """pydantic-ai messages in their JSON form: ``ModelMessagesTypeAdapter`` loads them; each response's
    tool calls are answered (a ``tool-return`` or a ``retry-prompt`` with the call's id) in the request
    right after it, and every answer answers a call of the response right before it (pydantic-ai maps
    each to the provider's call and result, and the providers refuse one without the other); and
    pydantic-ai's own Google model maps them to contents Gemini takes (`check_gemini`: two model turns
    never side by side). That mapping itself sends a request's tool returns and a user prompt after
    them as two user contents, so user contents side by side are joined before the check: that much is
    pydantic-ai's, not the history's."""
    import asyncio

    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    try:
        loaded = ModelMessagesTypeAdapter.validate_python(messages)
    except pydantic.ValidationError as exc:
        raise AssertionError(f"not pydantic-ai messages: {exc}") from None

    def answers(message: Mapping[str, Any]) -> set[str]:
        return {
            p["tool_call_id"]
            for p in message["parts"]
            if p["part_kind"] == "tool-return" or (p["part_kind"] == "retry-prompt" and p.get("tool_name"))
        }

    for i, message in enumerate(messages):
        calls = {p["tool_call_id"] for p in message["parts"] if p["part_kind"] == "tool-call"}
        if message["kind"] == "response" and calls and i + 1 < len(messages):
            following = messages[i + 1]
            missing = calls - (answers(following) if following["kind"] == "request" else set())
            assert not missing, f"message {i}: tool calls {sorted(missing)} not answered in the next request"
        if message["kind"] == "request" and answers(message):
            previous = messages[i - 1] if i else None
            asked = (
                {p["tool_call_id"] for p in previous["parts"] if p["part_kind"] == "tool-call"}
                if previous is not None and previous["kind"] == "response"
                else set()
            )
            stray = answers(message) - asked
            assert not stray, f"message {i}: answers {sorted(stray)} to no call of the response before"
    gemini = GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key="not-used"))
    _, mapped = asyncio.run(gemini._map_messages(loaded, ModelRequestParameters()))
    contents: list[dict[str, Any]] = []
    for content in map(dict, mapped):
        if contents and content.get("role") == contents[-1].get("role") == "user":
            contents[-1] = {**contents[-1], "parts": [*contents[-1]["parts"], *content["parts"]]}
        else:
            contents.append(content)
    body = {"contents": contents}
    check_gemini(body, body)


def check_inspect(messages: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """An Inspect sample's messages: Inspect's own ``ChatMessage`` models, ids unique (Inspect tracks
    messages by id), and what Inspect's converters send for them through OpenAI chat and Responses kept
    those APIs' rules (Responses without the SDK's types: Inspect leaves out the ids of items no Responses
    model wrote)."""
    import asyncio

    from inspect_ai.model import ChatMessage, messages_to_openai, messages_to_openai_responses

    adapter = pydantic.TypeAdapter(list[ChatMessage])
    ids = [m["id"] for m in messages]
    assert len(set(ids)) == len(ids), "two messages share an id"
    chat = adapter.validate_python(messages)
    check_openai_chat(asyncio.run(messages_to_openai(chat)))
    before = asyncio.run(messages_to_openai_responses(adapter.validate_python(sent)))
    check_responses(asyncio.run(messages_to_openai_responses(chat)), before, types=False)


def _found(value: Any, pick: Callable[[Mapping[str, Any]], Any]) -> Iterator[Any]:
    """What ``pick`` finds in every object of ``value`` (at any depth; None: nothing there)."""
    if isinstance(value, Mapping):
        found = pick(value)
        if found is not None:
            yield found
        for item in value.values():
            yield from _found(item, pick)
    elif isinstance(value, list):
        for item in value:
            yield from _found(item, pick)


_BATCH = frozenset({"thought", "reasoning_content", "thinking_blocks", "responses_reasoning_item"})
"""An OpenHands action's fields that belong to its batch (one model response), not to the call."""

CALLS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "anthropic": lambda d: d if d.get("type") in ("tool_use", "server_tool_use") else None,
    "openai": lambda d: d if d.get("type") == "function" and "function" in d and "id" in d else None,
    "responses": lambda d: (
        d if str(d.get("type")).endswith("_call") or d.get("type") == "reasoning" else None
    ),
    "gemini": lambda d: d.get("functionCall") or d.get("function_call"),
    "qwen-code": lambda d: d.get("functionCall"),
    "bedrock": lambda d: d.get("toolUse"),
    "ollama": lambda d: d if isinstance(d.get("function"), Mapping) else None,
    "ai-sdk": lambda d: d if d.get("type") == "tool-call" else None,
    "pydantic-ai": lambda d: d if d.get("part_kind") == "tool-call" else None,
    "langchain": lambda d: d if d.get("type") == "tool_call" else None,
    "gemini-cli": lambda d: {k: d[k] for k in ("id", "name", "args")} if "args" in d and "id" in d else None,
    "tau2": lambda d: d if {"id", "name", "arguments"} <= d.keys() else None,
    # a batch's thought and reasoning ride on its first action left (the SDK wants them there)
    "openhands": lambda d: (
        {k: v for k, v in d.items() if k not in _BATCH} if d.get("kind") == "ActionEvent" else None
    ),
    "atif": lambda d: d if {"tool_call_id", "function_name"} <= d.keys() else None,
    "inspect": lambda d: d if isinstance(d.get("function"), str) and "arguments" in d else None,
    # the tool_calls of each action's model_response, which V0 sends as the assistant message
    "openhands-v0": lambda d: d if d.get("type") == "function" and "function" in d and "id" in d else None,
}
"""Each format's calls, as the provider sees them: what a plan must write back as it was sent."""


RESULTS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "anthropic": lambda d: d if d.get("type") == "tool_result" else None,
    "openai": lambda d: d if d.get("role") == "tool" else None,
    "responses": lambda d: d if str(d.get("type")).endswith("_output") else None,
    "gemini": lambda d: d.get("functionResponse") or d.get("function_response"),
    "qwen-code": lambda d: d.get("functionResponse"),
    "bedrock": lambda d: d.get("toolResult"),
    "ollama": lambda d: d if d.get("role") == "tool" else None,
    "ai-sdk": lambda d: d if d.get("type") == "tool-result" else None,
    "pydantic-ai": lambda d: d if d.get("part_kind") == "tool-return" else None,
    "langchain": lambda d: d if d.get("type") == "tool" and "data" in d else None,  # messages_to_dict
    "gemini-cli": lambda d: d.get("result") if "args" in d and "id" in d else None,
    "tau2": lambda d: d if d.get("role") == "tool" and "tool_messages" not in d else None,  # not a batch
    "openhands": lambda d: d if d.get("kind") == "ObservationEvent" else None,
    "atif": lambda d: d if "source_call_id" in d else None,
    "inspect": lambda d: d if d.get("role") == "tool" else None,
    "openhands-v0": lambda d: d if isinstance(d.get("observation"), str) else None,
}
"""Each format's tool results: what a plan writes back as sent unless it shortened them (with a marker)."""


def check_calls_as_sent(fmt: str, written: Any, sent: Any) -> None:
    """Every call in ``written`` is one ``sent`` holds, with all its fields (none gained, lost or taken
    from another call): a compaction keeps a call whole or drops it. Every result is one ``sent``
    holds, or one tracetrim shortened (its marker says so)."""
    pick = CALLS[fmt]
    left = Counter(json.dumps(c, sort_keys=True) for c in _found(written, pick))
    changed = left - Counter(json.dumps(c, sort_keys=True) for c in _found(sent, pick))
    assert not changed, f"calls not as they were sent: {sorted(changed)[:2]}"
    results = Counter(json.dumps(r, sort_keys=True) for r in _found(written, RESULTS[fmt]))
    changed = results - Counter(json.dumps(r, sort_keys=True) for r in _found(sent, RESULTS[fmt]))
    unmarked = [r for r in changed if "tracetrim" not in r]
    assert not unmarked, f"results changed with no marker: {unmarked[:2]}"


_QWEN_NOT_CONVERSATION = frozenset(
    {"session_artifact_event", "session_artifact_snapshot", "session_sources_snapshot"}
    | {f"managed_session_{k}_v1" for k in ("header", "event", "commit")}
)


def qwen_code_resumed(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``generateContent`` history Qwen Code rebuilds when it resumes a session (Qwen Code 0.24
    ``prepareTranscriptRecords`` and ``SessionApiHistoryAccumulator``): the path from the last
    conversation record to the root; a ``chat_compression`` record's ``compressedHistory`` in place of
    what came before it; then each record's message. Qwen Code keeps each function response in a record
    of its own, so user turns in a row are joined, as a Gemini request needs one turn of a call turn's
    responses; model turns are not."""
    first: dict[str, Mapping[str, Any]] = {}
    for record in records:
        first.setdefault(record["uuid"], record)
    conversation = [
        r for r in records if not (r["type"] == "system" and r.get("subtype") in _QWEN_NOT_CONVERSATION)
    ]
    path: list[Mapping[str, Any]] = []
    at = conversation[-1] if conversation else None
    while at is not None and at not in path:
        path.append(at)
        at = first.get(at["parentUuid"]) if isinstance(at.get("parentUuid"), str) else None
    contents: list[dict[str, Any]] = []
    for record in reversed(path):
        payload = record.get("systemPayload") or {}
        if record.get("subtype") == "chat_compression" and payload.get("compressedHistory"):
            contents = [dict(c) for c in payload["compressedHistory"]]
        elif (
            record["type"] != "system"
            and record.get("message")
            and record.get("subtype") != "realtime_message"
        ):
            contents.append(dict(record["message"]))
    joined: list[dict[str, Any]] = []
    for content in contents:
        if joined and joined[-1]["role"] == content["role"] == "user":
            joined[-1] = {**joined[-1], "parts": [*joined[-1]["parts"], *content["parts"]]}
        else:
            joined.append(content)
    return {"contents": joined}


def pi_resumed(lines: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages pi sends when it resumes a session (pi-mono ``buildSessionContext``): the path from
    the last entry to the root; where a ``compaction`` stands on it, what comes after it and, before it,
    from its ``firstKeptEntryId`` on; of those, the ``message`` entries' messages, and each
    ``branch_summary`` as the ``branchSummary`` message pi sends in its place."""
    entries = list(lines[1:])
    by_id = {e["id"]: e for e in entries}
    path: list[Mapping[str, Any]] = []
    at = entries[-1] if entries else None
    while at is not None and at not in path:
        path.append(at)
        at = by_id.get(at.get("parentId"))  # type: ignore[arg-type]
    path.reverse()
    cut = max((n for n, e in enumerate(path) if e["type"] == "compaction"), default=None)
    if cut is not None:
        kept = path[cut].get("firstKeptEntryId")
        start = next((n for n in range(cut) if path[n]["id"] == kept), cut)
        path = path[start:cut] + path[cut + 1 :]
    return [
        e["message"] if e["type"] == "message" else {"role": "branchSummary", "summary": e.get("summary")}
        for e in path
        if e["type"] in ("message", "branch_summary")
    ]


def pi_calls(messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Every ``toolCall`` part of pi's assistant messages, by id."""
    return {
        part["id"]: part
        for m in messages
        if m["role"] == "assistant"
        for part in m["content"]
        if part.get("type") == "toolCall"
    }


def check_pi(messages: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """The messages pi sends: every call answered by the results right after its turn, no result
    without its call, no two assistant turns in a row (pi passes them on; Bedrock Converse and Gemini
    refuse them), every call as first sent."""
    open_calls: set[str] = set()
    for n, message in enumerate(messages):
        if message["role"] == "toolResult":
            assert message["toolCallId"] in open_calls, f"message {n}: a result without its call"
            open_calls.discard(message["toolCallId"])
            continue
        assert not open_calls, f"message {n}: calls {sorted(open_calls)} never answered"
        if message["role"] == "assistant":
            open_calls = {p["id"] for p in message["content"] if p.get("type") == "toolCall"}
    assert not open_calls, f"calls {sorted(open_calls)} never answered"
    pairs = itertools.pairwise(messages)
    assert not any(a["role"] == b["role"] == "assistant" for a, b in pairs), "assistant turns in a row"
    first = pi_calls(sent)
    for call_id, call in pi_calls(messages).items():
        assert call == first[call_id], f"call {call_id} changed"
    # pi-ai sends a thinking part's signature to a Responses model as a reasoning item, which OpenAI
    # refuses without the item it was sent before, and alone
    followers = _pi_reasoning(sent)
    alone = {_thoughts(m) for m in sent if _thoughts(m)}  # turns sent as thinking alone
    for n, message in enumerate(messages):
        parts = message["content"] if message["role"] == "assistant" else None
        if not isinstance(parts, list):
            continue
        thoughts = _thoughts(message)
        assert not thoughts or thoughts in alone, f"message {n}: a turn a drop left with thinking alone"
        for k, part in enumerate(parts):
            if part.get("type") == "thinking":
                after = _call_after(parts, k)
                assert after in followers.get(_thought(part), {after}), (
                    f"message {n}: thinking sent before {sorted(followers[_thought(part)], key=str)} "
                    f"now stands before {after!r}"
                )


def _thought(part: Mapping[str, Any]) -> tuple[Any, Any]:
    return part.get("thinking"), part.get("thinkingSignature")


def _thoughts(message: Mapping[str, Any]) -> tuple[tuple[Any, Any], ...]:
    """An assistant turn's thinking parts when it holds nothing else (empty otherwise)."""
    parts = message["content"] if message["role"] == "assistant" else None
    if not isinstance(parts, list) or not parts or any(p.get("type") != "thinking" for p in parts):
        return ()
    return tuple(_thought(p) for p in parts)


def _call_after(parts: Sequence[Mapping[str, Any]], k: int) -> str | None:
    """The id of the call right after the run of thinking parts at ``k`` (None: no call there)."""
    after = next((p for p in parts[k:] if p.get("type") != "thinking"), None)
    return after["id"] if after is not None and after.get("type") == "toolCall" else None


def _pi_reasoning(messages: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, Any], set[str | None]]:
    """Each thinking part (by its text and signature) to what stood after it when sent: the call right
    after its run of thinking, or None."""
    followers: dict[tuple[Any, Any], set[str | None]] = {}
    for message in messages:
        parts = message["content"] if message["role"] == "assistant" else None
        if not isinstance(parts, list):
            continue
        for k, part in enumerate(parts):
            if part.get("type") == "thinking":
                followers.setdefault(_thought(part), set()).add(_call_after(parts, k))
    return followers


ROO_FIELDS = (
    "isSummary",
    "condenseId",
    "condenseParent",
    "truncationId",
    "truncationParent",
    "isTruncationMarker",
)


def roo_code_sent(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What Roo Code sends from its task history, as its ``Task`` builds the request: the effective
    history (``getEffectiveApiHistory``: a message tagged with a summary that stands after it, or with a
    truncation marker that is there, is left out; so is a ``tool_result`` whose ``tool_use`` is not
    sent), two user turns in a row joined (``mergeConsecutiveApiMessages``), and Roo's own fields taken
    off (``sanitizeMessagesForProvider``) but for ``ts``, which tells the messages apart here. Written
    from Roo Code's source (``src/core/condense``, ``src/core/task``): the extension needs VS Code, so it
    cannot run here."""
    summaries = {
        m["condenseId"]: n for n, m in enumerate(items) if m.get("isSummary") and m.get("condenseId")
    }
    markers = {m["truncationId"] for m in items if m.get("isTruncationMarker") and m.get("truncationId")}
    effective = [
        m
        for n, m in enumerate(items)
        if not (m.get("condenseParent") in summaries and n < summaries[m["condenseParent"]])
        and m.get("truncationParent") not in markers
    ]
    asked = {
        p.get("id") or p.get("toolCallId")
        for m in effective
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") in ("tool_use", "tool-call")
    }
    out: list[dict[str, Any]] = []
    for message in effective:
        message = {k: v for k, v in message.items() if k not in ROO_FIELDS}
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            content = [p for p in content if p.get("type") != "tool_result" or p["tool_use_id"] in asked]
            if not content:
                continue
            message["content"] = content
        previous = out[-1] if out else None
        if previous is not None and previous.get("role") == message.get("role") == "user":
            as_parts = [
                (c if isinstance(c, list) else [{"type": "text", "text": c}])
                for c in (previous["content"], message["content"])
            ]
            out[-1] = {**previous, "content": as_parts[0] + as_parts[1]}
            continue
        out.append(message)
    return out


def check_roo_code(sent: Sequence[Mapping[str, Any]], before: Sequence[Mapping[str, Any]]) -> None:
    """What Roo Code sends (`roo_code_sent`), as its providers check it: a legacy history by Anthropic's
    rules once Roo's own blocks (``reasoning``, ``thoughtSignature``) are taken out, as its Anthropic
    path does; a versioned one by the AI SDK's; every standalone reasoning item followed by the
    assistant turn it led to (OpenAI: "reasoning was provided without its required following item");
    no two assistant turns in a row that ``before`` (what was sent before compaction) did not send so
    (Bedrock Converse, Gemini), the turns told apart by their ``ts``."""
    side_by_side = {
        (a.get("ts"), b.get("ts")) for a, b in itertools.pairwise(m for m in before if "role" in m)
    }
    for n, (a, b) in enumerate(itertools.pairwise(m for m in sent if "role" in m)):
        if a["role"] == b["role"] == "assistant":
            assert (a.get("ts"), b.get("ts")) in side_by_side, (
                f"message {n + 1}: two assistant turns in a row"
            )
    sent = [{k: v for k, v in m.items() if k != "ts"} for m in sent]
    messages = [m for m in sent if "role" in m]
    for n, item in enumerate(sent):
        if "role" not in item:
            following = sent[n + 1] if n + 1 < len(sent) else None
            assert following is not None and following.get("role") == "assistant", (
                f"item {n}: reasoning without the turn it led to"
            )
    if any(m["role"] == "tool" for m in messages) or any(
        p.get("type") in ("tool-call", "tool-result")
        for m in messages
        for p in m["content"]
        if isinstance(m["content"], list)
    ):
        check_ai_sdk(messages, messages)  # turns in a row are checked above, by what they are
    else:
        anthropic = []
        for m in messages:
            content = m["content"]
            if isinstance(content, list):
                content = [p for p in content if p.get("type") not in ("reasoning", "thoughtSignature")]
            anthropic.append({"role": m["role"], "content": content})
        check_anthropic({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": anthropic})


def kimi_cli_sent(lines: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions messages Kimi CLI sends from its ``context.jsonl``: its ``Context.restore``
    (the messages in order, Kimi's ``_`` records aside; the system prompt first) and kosong's Kimi
    provider (``_convert_message``: ``think`` parts joined into ``reasoning_content``, the other parts
    the content, a single text part as a string, ``content`` left out of a call turn with no text)."""
    out: list[dict[str, Any]] = []
    for line in lines:
        role = line["role"]
        if role == "_system_prompt":
            out.insert(0, {"role": "system", "content": line["content"]})
        if role.startswith("_"):
            continue
        message = dict(line)
        content = message.get("content", [])
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        thinking = [p["think"] for p in parts if p.get("type") == "think"]
        parts = [p for p in parts if p.get("type") != "think"]
        message["content"] = parts[0]["text"] if len(parts) == 1 and parts[0].get("type") == "text" else parts
        if (
            role == "assistant"
            and message.get("tool_calls")
            and not any(p.get("text", "").strip() for p in parts)
        ):
            del message["content"]
        if thinking:
            message["reasoning_content"] = "".join(thinking)
        out.append(message)
    return out


def cline_sent(items: Sequence[Mapping[str, Any]], deleted: Sequence[int] | None) -> list[dict[str, Any]]:
    """The messages Cline sends from its task history: the first user-assistant pair and everything after
    its truncation range (``ContextManager.getTruncatedMessages``: the range names messages by index),
    each without Cline's own fields (``convertClineStorageToAnthropicMessage``)."""
    kept = list(items) if deleted is None else [*items[:2], *items[deleted[1] + 1 :]]
    return [{"role": m["role"], "content": m["content"]} for m in kept]


def continue_sent(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions messages Continue's CLI sends from a session's ``history``: a port of its
    ``convertFromUnifiedHistory`` (``core/util/messageConversion.ts``; a stand-in, the real CLI runs in
    ``tests/formats/test_continue_resumes.py``): each item's message (a user's ``contextItems`` before its
    text, ``toolCalls`` as ``tool_calls``, a thinking item as assistant text, an older session's ``tool``
    item as a ``tool`` message), then one ``tool`` message
    per ``toolCallStates`` entry, its output items' contents joined by a newline, "Tool cancelled" without
    one."""
    out: list[dict[str, Any]] = []
    for item in history:
        message = item["message"]
        role = "assistant" if message["role"] == "thinking" else message["role"]
        sent: dict[str, Any] = {"role": role, "content": message["content"]}
        if role == "tool":  # an older session's result, an item of its own
            sent["tool_call_id"] = message["toolCallId"]
        if role == "user" and item.get("contextItems") and isinstance(message["content"], str):
            context = "".join(
                f'<context name="{c["name"]}">\n{c["content"]}\n</context>\n\n' for c in item["contextItems"]
            )
            sent["content"] = context + message["content"]
        if message["role"] == "assistant" and message.get("toolCalls"):
            sent["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": dict(c["function"])}
                for c in message["toolCalls"]
            ]
        out.append(sent)
        for state in item.get("toolCallStates") or ():
            output = state.get("output")
            content = "\n".join(o["content"] for o in output) if output else "Tool cancelled"
            out.append({"role": "tool", "content": content, "tool_call_id": state["toolCallId"]})
    return out


def chat_calls(messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The ``tool_calls`` entries of chat-completions ``messages``, by id."""
    return {c["id"]: c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()}


def chat_results(messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The ``tool`` messages of chat-completions ``messages``, by the call they answer."""
    return {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}


def check_chat_went_on(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], kept: set[str]
) -> None:
    """What an agent sent going on from a compacted file (``after``), against what it sent from the file
    as recorded (``before``): both keep the chat-completions rules, exactly the calls the file ``kept``
    are sent, each as first sent, and every result as first sent or marked by tracetrim."""
    check_openai_chat(before)
    check_openai_chat(after)
    calls, results = chat_calls(before), chat_results(before)
    assert set(chat_calls(after)) == set(calls) & kept
    for call_id, call in chat_calls(after).items():
        assert call == calls[call_id]
    for call_id, result in chat_results(after).items():
        assert result == results[call_id] or "tracetrim" in json.dumps(result), call_id


_COPILOT_RESETS = frozenset({"session.compaction_complete", "session.context_cleared", "session.truncation"})


def copilot_sent(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions messages GitHub Copilot CLI sends from a session's events when it resumes it
    (a stand-in, checked against the real CLI in ``tests/formats/test_copilot_cli_resumes.py``): the main
    agent's events after the last compaction, clear or truncation; a ``user.message`` as its
    ``transformedContent``; an ``assistant.message`` as its content (null when empty) and its
    ``toolRequests`` as ``tool_calls`` (the arguments as compact JSON); a ``tool.execution_complete`` as
    a ``tool`` message, its ``result.content`` (a failed call's ``error.message``). Copilot's own
    ``__copilotMessageSource`` field on a ``tool`` message is left out."""
    start = 0
    for n, event in enumerate(events):
        if event["type"] in _COPILOT_RESETS and (
            event["type"] != "session.compaction_complete" or event["data"].get("success")
        ):
            start = n + 1
    out: list[dict[str, Any]] = []
    for event in events[start:]:
        data = event["data"]
        if "agentId" in event or "parentToolCallId" in data:
            continue
        if event["type"] == "user.message":
            out.append({"role": "user", "content": data.get("transformedContent", data["content"])})
        elif event["type"] == "assistant.message":
            sent: dict[str, Any] = {"role": "assistant", "content": data["content"] or None}
            if data.get("toolRequests"):
                sent["tool_calls"] = [
                    {
                        "id": r["toolCallId"],
                        "type": "function",
                        "function": {
                            "name": r["name"],
                            "arguments": json.dumps(
                                r.get("arguments", {}), separators=(",", ":"), ensure_ascii=False
                            ),
                        },
                    }
                    for r in data["toolRequests"]
                ]
            out.append(sent)
        elif event["type"] == "tool.execution_complete":
            content = data["result"]["content"] if data.get("success") else data["error"]["message"]
            out.append({"role": "tool", "tool_call_id": data["toolCallId"], "content": content})
    return out
