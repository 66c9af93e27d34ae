"""Runs of a real Microsoft Agent Framework ``Agent`` on a scripted chat client, and the messages it keeps.

`session_messages` made ``tests/data/agents/agent_framework_messages.json`` and `session_document`
``tests/data/agents/agent_framework_session.json`` (``python tests/_agent_framework_runs.py``): what the
agent's session keeps after a run (``AgentSession.to_dict()``'s ``state["in_memory"]["messages"]``, each
message as ``Message.to_dict()`` writes it), and the whole session as ``AgentSession.to_dict()`` gives it
to be stored. The tests also run them against the installed framework, so a change in what Agent
Framework writes shows up here first.

The chat client is the only stand-in: a ``BaseChatClient`` with Agent Framework's own function-invocation
layer that answers from a script and records every list of messages it is sent, as a provider would
receive them. The tools, the tool loop, the session and the compaction hook are the framework's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)

FIXTURE = Path(__file__).parent / "data" / "agents" / "agent_framework_messages.json"
SESSION_FIXTURE = FIXTURE.with_name("agent_framework_session.json")
SESSION_ID = "7d3c9e4a-5b1f-4e2a-9c8d-0f6b2a1e3d57"
TOOLS = ("read_file", "run")
FILLER = "".join(f"line {n}: def helper_{n}(value): return value * {n}\n" for n in range(60))


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n{FILLER}"


@tool
def run(command: str) -> str:
    """Run a shell command."""
    if "missing" in command:
        raise RuntimeError(f"{command}: no such file")
    return f"$ {command}\n{FILLER}collected 60 items, 1 failed: test_helper_7\n"


def _call(call_id: str, name: str, **arguments: Any) -> Content:
    return Content.from_function_call(call_id=call_id, name=name, arguments=arguments)


def _reasoning(item_id: str, text: str) -> Content:
    """Reasoning as a Responses model returns it: its item id and encrypted content with its summary."""
    return Content.from_text_reasoning(id=item_id, text=text, protected_data="Z0FBQUFBQm5fZW5jcnlwdGVk")


def script(calls: int = 4) -> list[ChatResponse[Any]]:
    """The model's turns: a call after text, a reasoning turn with two calls, a failing call, ``calls``
    more reads (reasoning before every other one), then an answer."""
    turns = [
        Message(
            "assistant", ["Let me read the module first.", _call("call_1", "read_file", path="src/a.py")]
        ),
        Message(
            "assistant",
            [
                _reasoning("rs_02", "b.py holds the helper; the tests say which fails."),
                _call("call_2", "read_file", path="src/b.py"),
                _call("call_3", "run", command="pytest -x"),
            ],
        ),
        Message("assistant", [_call("call_4", "run", command="cat missing.txt")]),
    ]
    for n in range(calls):
        contents = [_call(f"call_{5 + n}", "read_file", path=f"src/m{n}.py")]
        if n % 2 == 0:
            contents.insert(0, _reasoning(f"rs_{5 + n:02d}", f"m{n}.py may define helper_{n}."))
        turns.append(Message("assistant", contents))
    turns.append(Message("assistant", ["helper_7 multiplies by 7; the test expected 8."]))
    return [ChatResponse(messages=[turn]) for turn in turns]


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client answering from ``responses`` and recording what each call was sent (a stand-in
    for a provider: the only part of these runs that is not Agent Framework's own)."""

    def __init__(self, responses: Sequence[ChatResponse[Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.responses = list(responses)
        self.requests: list[list[dict[str, Any]]] = []

    async def _answer(self, messages: Sequence[Message]) -> ChatResponse[Any]:
        self.requests.append([message.to_dict() for message in messages])
        return self.responses.pop(0)

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        return self._answer(list(messages))


async def run_agent(
    client: ScriptedClient, *, session_id: str | None = None, session: Any = None, **agent_options: Any
) -> tuple[Agent[Any], Any, Any]:
    """The agent, its session (a new one, or ``session`` going on) and its response after one run on
    ``client``."""
    agent: Agent[Any] = Agent(client=client, tools=[read_file, run], name="coder", **agent_options)
    session = session or agent.create_session(session_id=session_id)
    response = await agent.run("Find why test_helper_7 fails.", session=session)
    return agent, session, response


def stored_messages(session: Any) -> list[dict[str, Any]]:
    """The messages an agent's session keeps, as ``AgentSession.to_dict()`` serialises them."""
    messages: list[dict[str, Any]] = session.to_dict()["state"]["in_memory"]["messages"]
    return messages


def responses_input(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Responses input Agent Framework's own OpenAI client makes of ``messages`` for a request that
    replays the history (no conversation kept by the service); it refuses reasoning it cannot replay."""
    from agent_framework.openai import OpenAIChatClient

    client = OpenAIChatClient(model="gpt-5", api_key="sk-test")
    items: list[dict[str, Any]] = client._prepare_messages_for_openai(
        [Message.from_dict(m) for m in messages], request_uses_service_side_storage=False
    )
    return items


def chat_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions messages Agent Framework's own client makes of ``messages`` (reasoning left
    out: that client reads a reasoning content's data as its provider's own JSON, and these runs' is a
    Responses model's)."""
    from agent_framework.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="sk-test")
    plain = [
        Message.from_dict({**m, "contents": [c for c in m["contents"] if c["type"] != "text_reasoning"]})
        for m in messages
    ]
    chat: list[dict[str, Any]] = client._prepare_messages_for_openai(plain)
    for message in chat:  # the SDK's type wants arguments as JSON text, which the client sends
        for call in message.get("tool_calls") or ():
            if not isinstance(call["function"]["arguments"], str):
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return chat


async def session_messages() -> list[dict[str, Any]]:
    """What the session keeps after a run on the script."""
    _, session, _ = await run_agent(ScriptedClient(script()))
    return stored_messages(session)


async def session_document() -> dict[str, Any]:
    """The whole session after a run on the script (three reads), as ``AgentSession.to_dict()`` gives it
    to be stored."""
    _, session, _ = await run_agent(ScriptedClient(script(calls=3)), session_id=SESSION_ID)
    document: dict[str, Any] = session.to_dict()
    return document


if __name__ == "__main__":
    import asyncio

    FIXTURE.write_text(json.dumps(asyncio.run(session_messages()), indent=2) + "\n")
    SESSION_FIXTURE.write_text(json.dumps(asyncio.run(session_document()), indent=2) + "\n")
