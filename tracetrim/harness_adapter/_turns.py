"""Joining an assistant turn a drop left without its calls to the assistant turn after it."""

from __future__ import annotations

from collections.abc import Sequence

from tracetrim._snapshot import Message

_PAIRED = ("tool_call", "tool_result")


def _kinds(message: Message) -> set[str]:
    return {block.get("type", "") for block in message.get("content", ())}


def join_bared_turns(before: Sequence[Message], after: list[Message]) -> list[Message]:
    """``after`` with each assistant message that lost all its tool calls (it had some in ``before``)
    joined with the next message when that one is an assistant turn too.

    A dropped pair's call message keeps its text and tombstone, and the results' message goes, so two
    model turns stand side by side. Gemini refuses that ("Please ensure that multiturn requests alternate
    between user and model"), and the frameworks' Gemini mappings pass it on as it is
    (langchain-google-genai, pydantic-ai's Google model), so the second turn's blocks move to the end of
    the first and its message goes. The joined message keeps the first's id and metadata (which say how
    its own parts are written back: a repeated call part whose call went is still left out). A message
    that starts with tool results (a ``ToolMessage``, a request of tool returns) is not a model turn and
    is never joined, nor is one of another role; an AgentScope turn holding its calls and then their
    results is.
    """
    called = {m["id"] for m in before if "tool_call" in _kinds(m)}
    out: list[Message] = []
    for message in after:
        previous = out[-1] if out else None
        if (
            previous is not None
            and previous["role"] == "assistant"
            and previous["id"] in called
            and not _kinds(previous) & set(_PAIRED)
            and message["role"] == "assistant"
            and message.get("content")
            and message["content"][0].get("type") != "tool_result"
        ):
            out[-1] = {**previous, "content": [*previous["content"], *message["content"]]}
            continue
        out.append(message)
    return out
