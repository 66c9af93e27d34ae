"""A history from anywhere is written in every format faithfully, or refused naming the place.

`tracetrim restore --format NAME` (and the service's ``/v1/restore`` with a ``format``) writes an
archived neutral history in a format it was not read from: an AgentScope agent's history (each call's
result in the call's own message) as a Claude Code session, an OpenAI chat history (each result in a
message of its own) as a Gemini CLI session or an ATIF trajectory. Such a history carries none of the
format's own metadata, so the writer has only the neutral layout to go by. The rule, for every format
and both layouts: either the writer refuses with a `SnapshotError`, or its document reads back as the
same conversation (the same words said by the same side, in order; every call with its name and
arguments; every result with its text, answering the same call). A result dropped, or left unpaired
as a block the reader no longer knows, breaks it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import _provider_rules as rules
from tests._compact_plans import compact, plans
from tracetrim._snapshot import SnapshotError, check_messages
from tracetrim.formats import HISTORY_FORMATS
from tracetrim.formats._common import ValidatedHistory

_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "parser.py", "line 7", "ok", "é"])
_TEXTS = st.lists(_WORDS, min_size=1, max_size=6).map(" ".join)
_TOOLS = ("read_file", "run", "search")


@st.composite
def neutral_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A plain neutral history: an optional system prompt, then user turns and assistant turns whose
    calls are answered in the same message (AgentScope's layout) or in a message of their own (a chat
    layout: the assistant's, or the user's, perhaps with the user's next words after the results), as
    each turn draws. (Text after results in an assistant's message is left out: whose words they are,
    the neutral form does not say.)"""
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        messages.append({"id": f"m{len(messages)}", "role": role, "content": blocks})

    if draw(st.booleans()):
        add("system", [{"type": "text", "text": draw(_TEXTS)}])
    calls = 0
    for _ in range(draw(st.integers(1, 4))):
        add("user", [{"type": "text", "text": draw(_TEXTS)}])
        for _ in range(draw(st.integers(1, 2))):
            said = [{"type": "text", "text": draw(_TEXTS)}] if draw(st.booleans()) else []
            pairs = []
            for _ in range(draw(st.integers(0 if said else 1, 2))):
                calls += 1
                name = draw(st.sampled_from(_TOOLS))
                arguments = {"arg": draw(_TEXTS)}
                call = {
                    "type": "tool_call", "id": f"call_{calls}", "name": name,
                    "input": json.dumps(arguments), "state": "finished",
                }  # fmt: skip
                result = {
                    "type": "tool_result", "id": f"call_{calls}", "name": name,
                    "output": f"{name} said: {draw(_TEXTS)}", "state": "success",
                }  # fmt: skip
                pairs.append((call, result))
            calls_blocks = [call for call, _ in pairs]
            results = [result for _, result in pairs]
            if results and draw(st.booleans()):
                add("assistant", [*said, *calls_blocks, *results])
            else:
                add("assistant", [*said, *calls_blocks])
                if results and draw(st.booleans()):
                    add("assistant", results)
                elif results:  # a provider's results turn, perhaps with what the user said next
                    then = [{"type": "text", "text": draw(_TEXTS)}] if draw(st.booleans()) else []
                    add("user", [*results, *then])
    check_messages(messages)
    return messages


def conversation(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a history says, as a reader of it would take it: each side's words (a side's texts in a row
    as one run of words), and each run of tool use between them: the calls by name and arguments in
    order, and the results by their text and the call each answers (by that call's place among the
    calls, since a format may give calls new ids), in the order of those calls (a format may keep each
    result beside its call, or all of a turn's results after all its calls). The side is the message's
    role, or the user's where its reader recorded that (a provider's user turn that answers calls and
    then says something is read as one message on the assistant's side)."""
    order: dict[str, int] = {}
    out: list[tuple[Any, ...]] = []
    for message in messages:
        side = "user" if _read_from_user(message) else message["role"]
        for block in message["content"]:
            kind = block["type"]
            if kind == "text":
                words = tuple(block["text"].split())
                if out and out[-1][0] == "say" and out[-1][1] == side:
                    out[-1] = ("say", side, out[-1][2] + words)
                elif words:
                    out.append(("say", side, words))
                continue
            if kind not in ("tool_call", "tool_result"):
                out.append(("other", kind))
                continue
            if not out or out[-1][0] != "tools":
                out.append(("tools", (), ()))
            _, calls, results = out[-1]
            if kind == "tool_call":
                order[block["id"]] = len(order)
                calls += ((block["name"], json.loads(block["input"] or "{}")),)
            else:
                output = block["output"]
                text = output if isinstance(output, str) else "".join(p.get("text", "") for p in output)
                results = tuple(sorted((*results, (order.get(block["id"], -1), text))))
            out[-1] = ("tools", calls, results)
    return out


def tools_and_words(messages: list[dict[str, Any]]) -> tuple[list[Any], list[Any], list[str]]:
    """The calls (name and arguments, in order), the results (the call each answers, by place, and its
    text) and every word said, sorted: what a compacted history must keep wherever its format puts a
    tombstone among a turn's calls (chat formats say a turn's text before its calls)."""
    flat = conversation(messages)
    calls = [call for event in flat if event[0] == "tools" for call in event[1]]
    results = sorted(result for event in flat if event[0] == "tools" for result in event[2])
    return calls, results, sorted(word for event in flat if event[0] == "say" for word in event[2])


def _read_from_user(message: dict[str, Any]) -> bool:
    metadata = message.get("metadata") or {}
    return any(isinstance(v, dict) and v.get("role") == "user" for v in metadata.values())


def _turns(entries: Any) -> list[Any]:
    return [e["message"] for e in entries if e.get("type") in ("user", "assistant")]


def _steps(steps: Any) -> None:
    from atif.step import Step

    for step in steps:
        Step.model_validate(step)


ALWAYS_WRITTEN = frozenset(
    {"openai", "responses", "anthropic", "bedrock", "gemini", "codex", "atif", "inspect"}
)
"""Formats with a place for everything these histories hold: none of them may refuse one (a writer
that refused everything would pass the rest of the check)."""
_REQUEST = {"model": "m", "max_tokens": 1}
PROVIDER_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "anthropic": lambda d: rules.check_anthropic({**_REQUEST, **d}),
    "claude-code": lambda d: rules.check_anthropic({**_REQUEST, "messages": _turns(d["messages"])}),
    "openai": lambda d: rules.check_openai_chat(d["messages"]),
    "responses": lambda d: rules.check_responses(d["messages"], d["messages"]),
    "codex": lambda d: rules.check_responses(  # Codex writes its own turns without the SDK's output ids
        *[[line["payload"] for line in d["messages"] if line["type"] == "response_item"]] * 2, types=False
    ),
    "gemini": lambda d: rules.check_gemini(d, d),
    "gemini-cli": lambda d: rules.check_gemini_cli(*[[r for r in d["messages"] if "type" in r]] * 2),
    "bedrock": lambda d: rules.check_bedrock(d["messages"], d["messages"]),
    "ai-sdk": lambda d: rules.check_ai_sdk(d["messages"], d["messages"]),
    "ollama": lambda d: rules.check_ollama(d["messages"]),
    "pydantic-ai": lambda d: rules.check_pydantic_ai(d["messages"]),
    "inspect": lambda d: rules.check_inspect(d["messages"], d["messages"]),
    "swe-agent": lambda d: rules.check_swe_agent(d["history"]),
    "mini-swe-agent": lambda d: rules.check_mini_swe_agent(d["messages"]),
    "atif": lambda d: _steps(d["steps"]),
}
"""Each format's own rules, as its provider or agent checks them (`tests._provider_rules`; ATIF's
steps by the ``atif`` package's models), on what the writer gives for a history from elsewhere."""


def _written(history: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Each format that writes ``history`` (the rest refuse it), its document, and that read back."""
    for name, fmt in HISTORY_FORMATS.items():
        try:
            document = fmt.write_document(ValidatedHistory(history))
        except SnapshotError:
            continue
        fields = {k: v for k, v in document.items() if k != fmt.messages_key}
        yield name, document, fmt.read(json.loads(json.dumps(document[fmt.messages_key])), fields)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=neutral_histories())
def test_every_format_writes_a_foreign_history_faithfully_or_refuses(history: list[dict[str, Any]]) -> None:
    said = conversation(history)
    wrote = set()
    for name, document, back in _written(history):
        wrote.add(name)
        assert conversation(back) == said, name
        if name in PROVIDER_CHECKS:
            PROVIDER_CHECKS[name](document)
    assert wrote >= ALWAYS_WRITTEN, "a format that takes any such history refused one"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=neutral_histories(), plan=plans)
def test_a_compacted_foreign_history_keeps_every_call_result_and_tombstone(
    history: list[dict[str, Any]], plan: dict[str, Any]
) -> None:
    """Compacted first (calls dropped with tombstones, results shortened), then written: every call and
    result kept, each result with its call, every tombstone's words, and the provider's rules."""
    compacted = compact(history, plan)
    kept = tools_and_words(compacted)
    for name, document, back in _written(compacted):
        assert tools_and_words(back) == kept, name
        if name in PROVIDER_CHECKS:
            PROVIDER_CHECKS[name](document)
