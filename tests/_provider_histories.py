"""Hypothesis strategies for provider-valid histories in each native format, as the provider documents them.

Each strategy draws a history the provider itself would accept (its rules are in `tests._provider_rules`):
a task, then agent turns, each a model reply that may call tools and the results of those calls.
Shapes follow the providers' published request types (the `openai` and `anthropic` SDKs' TypedDicts,
langchain-core's message classes, SWE-agent's and mini-swe-agent's trajectory files).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

_words = st.sampled_from(
    ["read", "the", "parser", "failing", "test", "config", "value", "retry", "payment", "error", "fix"]
)
_text = st.lists(_words, min_size=1, max_size=8).map(" ".join)
_tools = st.sampled_from(["read_file", "search_code", "list_dir", "run_tests"])


def _output(draw: st.DrawFn, call_id: str) -> str:
    lines = draw(st.integers(1, 60))
    return "".join(f"{call_id} line {n}: some file content here\n" for n in range(lines))


def _args(draw: st.DrawFn, n: int) -> dict[str, Any]:
    return {"path": f"src/mod{n}.py", "line": draw(st.integers(0, 500))}


class _Ids:
    def __init__(self) -> None:
        self._count: Iterator[int] = iter(range(100_000))

    def next(self) -> int:
        return next(self._count)


def _cache_control(draw: st.DrawFn) -> dict[str, Any]:
    return {"cache_control": {"type": "ephemeral"}} if draw(st.integers(0, 2)) == 0 else {}


_IMAGE = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


@st.composite
def anthropic_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A Messages API request body: model, max_tokens, system, tools, and alternating turns where every
    ``tool_use`` is answered by a ``tool_result`` first in the next user turn (text, or text and an
    image; some with ``is_error``); some model turns hold a server tool's call and result."""
    ids = _Ids()
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(_text)}]
    for _ in range(draw(st.integers(1, 6))):
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": draw(_text), "signature": "c2ln"})
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(_text), **_cache_control(draw)})
        if draw(st.integers(0, 3)) == 0:  # a server tool: its call and result in the model's own turn
            n = ids.next()
            content.append(
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{n:04d}",
                    "name": "web_search",
                    "input": {"query": "x"},
                }
            )
            result = {
                "type": "web_search_result",
                "url": "https://example.com",
                "title": "t",
                "encrypted_content": "ZW5j",
            }
            content.append(
                {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n:04d}", "content": [result]}
            )
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            call_id = f"toolu_{n:04d}"
            calls.append(call_id)
            content.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": draw(_tools),
                    "input": _args(draw, n),
                    **_cache_control(draw),
                }
            )
        if not content:
            content.append({"type": "text", "text": draw(_text)})
        messages.append({"role": "assistant", "content": content})
        reply: list[dict[str, Any]] = [
            {
                "type": "tool_result",
                "tool_use_id": c,
                "content": _output(draw, c)
                if draw(st.booleans())
                else [{"type": "text", "text": _output(draw, c)}, {"type": "image", "source": _IMAGE}],
                **({"is_error": True} if draw(st.integers(0, 4)) == 0 else {}),
                **_cache_control(draw),
            }
            for c in calls
        ]
        if draw(st.booleans()) or not reply:
            reply.append({"type": "text", "text": draw(_text), **_cache_control(draw)})
        messages.append({"role": "user", "content": reply})
    body: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    if draw(st.booleans()):
        body["system"] = draw(_text)
    body["messages"] = messages
    body["tools"] = [
        {"name": name, "description": "a tool", "input_schema": {"type": "object"}}
        for name in ("read_file", "search_code", "list_dir", "run_tests")
    ]
    return body


@st.composite
def openai_chat_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Chat-completions messages: every assistant ``tool_calls`` entry answered by a ``tool`` message
    before the next non-tool message."""
    ids = _Ids()
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_text)})
    messages.append({"role": "user", "content": draw(_text)})
    for _ in range(draw(st.integers(1, 6))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            calls.append(
                {
                    "id": f"call_{n:04d}",
                    "type": "function",
                    "function": {"name": draw(_tools), "arguments": json.dumps(_args(draw, n))},
                }
            )
        message: dict[str, Any] = {"role": "assistant"}
        if calls:
            message["content"] = draw(st.sampled_from([None, "", "Let me look."]))
            message["tool_calls"] = calls
        else:
            message["content"] = draw(_text)
        messages.append(message)
        for call in calls:
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": _output(draw, call["id"])}
            )
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(_text)})
    return messages


@st.composite
def _other_output_items(draw: st.DrawFn, ids: _Ids) -> list[dict[str, Any]]:
    """Output items tracetrim carries and never judges, sometimes after a reasoning item: a hosted web
    search, a freeform custom tool call (Codex's ``apply_patch``) with its output, a local shell call
    with its output."""
    n = ids.next()
    kind = draw(st.sampled_from(["none", "web_search_call", "custom_tool_call", "local_shell_call"]))
    if kind == "none":
        return []
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append({"type": "reasoning", "id": f"rs_{n:04d}", "summary": [], "encrypted_content": "ZW5j"})
    if kind == "web_search_call":
        action = {"type": "search", "query": draw(_text)}
        items.append({"type": kind, "id": f"ws_{n:04d}", "status": "completed", "action": action})
    elif kind == "custom_tool_call":
        call_id = f"call_{n:04d}"
        items.append(
            {
                "type": kind,
                "id": f"ctc_{n:04d}",
                "call_id": call_id,
                "name": "apply_patch",
                "input": "*** Begin Patch",
            }
        )
        items.append(
            {"type": "custom_tool_call_output", "call_id": call_id, "output": _output(draw, call_id)}
        )
    else:
        action = {"type": "exec", "command": ["ls"], "env": {}}
        items.append(
            {
                "type": kind,
                "id": f"lsh_{n:04d}",
                "call_id": f"call_{n:04d}",
                "status": "completed",
                "action": action,
            }
        )
        items.append(
            {"type": "local_shell_call_output", "id": f"call_{n:04d}", "output": _output(draw, "ls")}
        )
    return items


@st.composite
def responses_inputs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Responses API input items: reasoning items before the output item they precede, every
    ``function_call`` answered by a ``function_call_output`` with its ``call_id``."""
    ids = _Ids()
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": draw(_text)}]}
    ]
    for _ in range(draw(st.integers(1, 6))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            if draw(st.booleans()):
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{n:04d}",
                        "summary": [{"type": "summary_text", "text": draw(_text)}],
                        "encrypted_content": "ZW5j",
                    }
                )
            call_id = f"call_{n:04d}"
            calls.append(call_id)
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n:04d}",
                    "call_id": call_id,
                    "name": draw(_tools),
                    "arguments": json.dumps(_args(draw, n)),
                    "status": "completed",
                }
            )
        for call_id in calls:
            items.append(
                {"type": "function_call_output", "call_id": call_id, "output": _output(draw, call_id)}
            )
        items.extend(draw(_other_output_items(ids)))
        if draw(st.booleans()) or not calls:
            n = ids.next()
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"rs_{n:04d}", "summary": []})
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{n:04d}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": draw(_text), "annotations": []}],
                }
            )
    return items


@st.composite
def langchain_histories(draw: st.DrawFn) -> list[Any]:
    """LangChain messages: ``AIMessage`` with ``tool_calls`` (content a string, or Anthropic-style content
    blocks, some with a ``cache_control``, that repeat each call as a ``tool_use`` block), one
    ``ToolMessage`` per call."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    ids = _Ids()
    messages: list[Any] = [SystemMessage("You fix bugs.", id="sys"), HumanMessage(draw(_text), id="h0")]
    for turn in range(draw(st.integers(1, 6))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            calls.append(
                {"name": draw(_tools), "args": _args(draw, n), "id": f"toolu_{n:04d}", "type": "tool_call"}
            )
        content: Any
        if draw(st.booleans()):  # the shape ChatAnthropic returns
            text = {"type": "text", "text": draw(_text), **_cache_control(draw)}
            content = [text] if draw(st.booleans()) else []
            content += [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["name"],
                    "input": c["args"],
                    **_cache_control(draw),
                }
                for c in calls
            ]
            if not content:
                content = draw(_text)
        else:
            content = draw(_text) if draw(st.booleans()) or not calls else ""
        messages.append(AIMessage(content=content, tool_calls=calls, id=f"ai{turn}"))
        for c in calls:
            messages.append(ToolMessage(_output(draw, c["id"]), tool_call_id=c["id"], id=f"t-{c['id']}"))
        if draw(st.booleans()):
            messages.append(HumanMessage(draw(_text), id=f"h{turn + 1}"))
    return messages


@st.composite
def swe_agent_trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """A SWE-agent ``.traj`` of the text protocol: each assistant turn's ``action`` is a command in its
    prose, the next user message its observation."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "SETTING: you are an autonomous programmer", "agent": "primary"},
        {"role": "user", "content": draw(_text), "agent": "primary"},
    ]
    for n in range(draw(st.integers(1, 6))):
        command = f"open src/mod{n}.py {draw(st.integers(1, 400))}"
        thought = draw(_text)
        history.append(
            {
                "role": "assistant",
                "content": f"{thought}\n\n```\n{command}\n```",
                "thought": thought,
                "action": command,
                "agent": "primary",
            }
        )
        history.append({"role": "user", "content": _output(draw, f"obs{n}"), "agent": "primary"})
    return {
        "environment": "swe_main",
        "trajectory": [],
        "history": history,
        "info": {"exit_status": "submitted"},
    }


@st.composite
def mini_swe_agent_trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """A mini-swe-agent ``.traj.json``: THOUGHT and one bash block a turn, the next user message its
    output."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": f"<pr_description>{draw(_text)}</pr_description>"},
    ]
    for n in range(draw(st.integers(1, 6))):
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: {draw(_text)}\n\n```bash\ncat src/mod{n}.py | head -n {n + 40}\n```",
            }
        )
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{_output(draw, f'o{n}')}</output>",
            }
        )
    return {
        "info": {"exit_status": "Submitted", "mini_version": "1.9.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }


def _openhands_event(kind: str, n: int, source: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "id": f"evt-{n}",
        "timestamp": f"2025-10-02T11:{n % 60:02d}:00",
        "source": source,
        **fields,
    }


def _openhands_text(text: str) -> list[dict[str, Any]]:
    return [{"cache_prompt": False, "type": "text", "text": text}]


@st.composite
def openhands_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An OpenHands SDK event list (``openhands-sdk`` 1.58 ``openhands/sdk/event``): a system prompt, the
    task, then LLM responses each written as a batch of ``ActionEvent`` sharing an ``llm_response_id`` (the
    thought, reasoning and thinking blocks on the first only, as the SDK writes them) followed by one
    observation-like event per action (``ObservationEvent``, ``AgentErrorEvent``,
    ``UserRejectObservation``)."""
    ids = _Ids()
    events = [
        _openhands_event(
            "SystemPromptEvent", ids.next(), "agent", system_prompt={"type": "text", "text": "sys"}, tools=[]
        ),
        _openhands_event(
            "MessageEvent",
            ids.next(),
            "user",
            llm_message={"role": "user", "content": _openhands_text(draw(_text))},
        ),
    ]
    for response in range(draw(st.integers(1, 6))):
        actions = []
        for k in range(draw(st.integers(1, 3))):
            n = ids.next()
            thinking = draw(st.booleans()) and k == 0
            actions.append(
                _openhands_event(
                    "ActionEvent",
                    n,
                    "agent",
                    thought=_openhands_text(draw(_text)) if k == 0 and draw(st.booleans()) else [],
                    reasoning_content=draw(_text) if thinking else None,
                    thinking_blocks=[{"type": "thinking", "thinking": "hmm", "signature": "c2ln"}]
                    if thinking
                    else [],
                    responses_reasoning_item=None,
                    action={"kind": "TerminalAction", "command": f"cat src/mod{n}.py"},
                    tool_name="terminal",
                    tool_call_id=f"toolu_{n:04d}",
                    tool_call={
                        "id": f"toolu_{n:04d}",
                        "name": "terminal",
                        "arguments": json.dumps({"command": f"cat src/mod{n}.py"}),
                        "origin": "completion",
                    },
                    llm_response_id=f"resp-{response}",
                )
            )
        events += actions
        for action in actions:
            call = action["tool_call_id"]
            kind = draw(
                st.sampled_from(
                    ["ObservationEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation"]
                )
            )
            fields: dict[str, Any] = {"tool_name": "terminal", "tool_call_id": call}
            if kind == "ObservationEvent":
                fields["observation"] = {
                    "kind": "TerminalObservation",
                    "content": _openhands_text(_output(draw, call)),
                    "command": f"cat src/mod{call}.py",
                    "exit_code": 0,
                }
                fields["action_id"] = action["id"]
            elif kind == "UserRejectObservation":
                fields["rejection_reason"] = _output(draw, call)
                fields["action_id"] = action["id"]
            else:
                fields["error"] = _output(draw, call)
            events.append(
                _openhands_event(
                    kind, ids.next(), "environment" if kind != "AgentErrorEvent" else "agent", **fields
                )
            )
        if draw(st.booleans()):
            events.append(
                _openhands_event(
                    "MessageEvent",
                    ids.next(),
                    "agent",
                    llm_message={"role": "assistant", "content": _openhands_text(draw(_text))},
                )
            )
    return events


def _v0_event(n: int, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": n, "timestamp": f"2025-06-01T10:{n % 60:02d}:00.000000", "source": source, **fields}


def _v0_response(rid: str, content: str | None, calls: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "id": rid,
        "created": 1748772000,
        "model": "claude-sonnet-4",
        "object": "chat.completion",
        "choices": [
            {
                "finish_reason": "tool_calls",
                "index": 0,
                "message": {
                    "content": content,
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": k,
                            "function": {"arguments": a, "name": name},
                            "id": cid,
                            "type": "function",
                        }
                        for k, (cid, name, a) in enumerate(calls)
                    ],
                    "function_call": None,
                },
            }
        ],
    }


_V0_TOOLS = {
    "execute_bash": ("run", "run", "command"),
    "str_replace_editor": ("read", "read", "path"),
    "think": ("think", "think", "thought"),
}
"""A tool's action, its observation, and the argument its action takes."""


@st.composite
def openhands_v0_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An OpenHands V0 event history (``openhands-ai`` 0.62 ``event_to_trajectory``): the system action,
    the task, then LLM responses of one to three tool calls, each call an action carrying the whole
    ``model_response`` (what the assistant said is its ``content``) and answered by an observation
    (``run``, ``read``, ``think``, ``error`` or ``user_rejected``) before the next call runs; some
    responses answered by the agent's ``message``; some runs end with ``finish``, and some hold a
    ``condensation`` that forgot an early stretch."""
    ids = _Ids()
    events = [
        _v0_event(ids.next(), "agent", action="system", args={"content": "sys", "tools": None}),
        _v0_event(ids.next(), "user", action="message", args={"content": draw(_text), "image_urls": None}),
    ]
    ends: list[int] = []
    for response in range(draw(st.integers(1, 6))):
        tools = draw(st.lists(st.sampled_from(sorted(_V0_TOOLS)), min_size=1, max_size=3))
        calls = [
            (f"toolu_{response}_{k}", name, json.dumps({_V0_TOOLS[name][2]: f"src/mod{k}.py"}))
            for k, name in enumerate(tools)
        ]
        said = draw(_text) if draw(st.booleans()) else draw(st.sampled_from([None, ""]))
        model_response = _v0_response(f"chatcmpl-{response}", said, calls)
        for call_id, name, arguments in calls:
            metadata = {
                "function_name": name,
                "tool_call_id": call_id,
                "model_response": model_response,
                "total_calls_in_response": len(calls),
            }
            action, observation, _ = _V0_TOOLS[name]
            n = ids.next()
            events.append(
                _v0_event(n, "agent", message=name, action=action, tool_call_metadata=metadata,
                          args={"thought": said or "", **json.loads(arguments)})
            )  # fmt: skip
            observation = draw(st.sampled_from([observation, observation, "error", "user_rejected"]))
            extras = {
                "run": {"command": "cat", "metadata": {"exit_code": 0}, "hidden": False},
                "read": {"path": "src/mod.py"},
                "error": {"error_id": ""},
            }.get(observation, {})
            events.append(
                _v0_event(ids.next(), "agent", message="done", cause=n, observation=observation,
                          tool_call_metadata=metadata, content=_output(draw, call_id), extras=extras)
            )  # fmt: skip
        ends.append(events[-1]["id"])
        if draw(st.booleans()):
            events.append(_v0_event(ids.next(), "agent", action="message", args={"content": draw(_text)}))
    if draw(st.booleans()):  # V0's condensers forget whole responses
        forgotten = {"forgotten_events_start_id": 2, "forgotten_events_end_id": draw(st.sampled_from(ends))}
        events.append(
            _v0_event(ids.next(), "agent", action="condensation",
                      args={**forgotten, "summary": None, "summary_offset": None})
        )  # fmt: skip
    if draw(st.booleans()):
        finish = [("toolu_finish", "finish", json.dumps({"message": "done"}))]
        metadata = {
            "function_name": "finish",
            "tool_call_id": "toolu_finish",
            "model_response": _v0_response("chatcmpl-finish", None, finish),
            "total_calls_in_response": 1,
        }
        events.append(
            _v0_event(ids.next(), "agent", action="finish", tool_call_metadata=metadata,
                      args={"final_thought": "done", "outputs": {}, "thought": ""})
        )  # fmt: skip
    return events


@st.composite
def atif_trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """An ATIF v1.6 trajectory (the ``atif`` package's ``Trajectory``): sequential ``step_id``; agent steps
    carry ``tool_calls`` and an ``observation`` whose results answer them by ``source_call_id``."""
    ids = _Ids()
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": draw(_text)}]
    for _ in range(draw(st.integers(1, 6))):
        step: dict[str, Any] = {"step_id": len(steps) + 1, "source": "agent", "message": draw(_text)}
        if draw(st.booleans()):
            step["reasoning_content"] = draw(_text)
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            calls.append(
                {"tool_call_id": f"call_{n:04d}", "function_name": draw(_tools), "arguments": _args(draw, n)}
            )
        if calls:
            step["tool_calls"] = calls
            step["observation"] = {
                "results": [
                    {"source_call_id": c["tool_call_id"], "content": _output(draw, c["tool_call_id"])}
                    for c in calls
                ]
            }
        steps.append(step)
        if draw(st.booleans()):
            steps.append({"step_id": len(steps) + 1, "source": "user", "message": draw(_text)})
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "s-1",
        "agent": {"name": "an-agent", "version": "1.0"},
        "steps": steps,
        "final_metrics": {"total_steps": len(steps)},
    }


@st.composite
def tau2_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A tau2-bench simulation's messages (``tau2/data_model/message.py``): the agent's ``tool_calls``
    (``id``, ``name``, ``arguments``, ``requestor: "assistant"``) each answered by a ``tool`` message with
    that ``id``, alone or inside a ``MultiToolMessage``; the user simulator's own calls and results too."""
    ids = _Ids()
    turn = iter(range(100_000))
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Hi! How can I help?", "tool_calls": None, "turn_idx": next(turn)},
        {"role": "user", "content": draw(_text), "tool_calls": None, "turn_idx": next(turn)},
    ]
    for _ in range(draw(st.integers(1, 6))):
        requestor = draw(st.sampled_from(["assistant", "assistant", "user"]))
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            n = ids.next()
            calls.append(
                {
                    "id": f"call_{n:04d}",
                    "name": draw(_tools),
                    "arguments": _args(draw, n),
                    "requestor": requestor,
                }
            )
        messages.append({"role": requestor, "content": None, "tool_calls": calls, "turn_idx": next(turn)})
        tools = [
            {
                "id": c["id"],
                "role": "tool",
                "content": _output(draw, c["id"]),
                "requestor": requestor,
                "error": False,
            }
            for c in calls
        ]
        if len(tools) > 1 and draw(st.booleans()):
            messages.append({"role": "tool", "tool_messages": tools, "turn_idx": next(turn)})
        else:
            for tool in tools:
                messages.append({**tool, "turn_idx": next(turn)})
        messages.append(
            {"role": "assistant", "content": draw(_text), "tool_calls": None, "turn_idx": next(turn)}
        )
        if draw(st.booleans()):
            messages.append(
                {"role": "user", "content": draw(_text), "tool_calls": None, "turn_idx": next(turn)}
            )
    return messages


@st.composite
def gemini_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A ``generateContent`` request body (REST camelCase): alternating user and model turns, each model
    turn's calls answered by as many ``functionResponse`` parts in the next user turn, the first call of a
    turn sometimes signed (Gemini 3's ``thoughtSignature``), ids on every call or on none."""
    ids = _Ids()
    with_ids = draw(st.booleans())
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": draw(_text)}]}]
    for _ in range(draw(st.integers(1, 6))):
        parts: list[dict[str, Any]] = []
        if draw(st.booleans()):
            parts.append({"text": draw(_text), "thought": True})
        if draw(st.booleans()):
            parts.append({"text": draw(_text)})
        calls: list[dict[str, Any]] = []
        for k in range(draw(st.integers(0, 3))):
            n = ids.next()
            call: dict[str, Any] = {"name": draw(_tools), "args": _args(draw, n)}
            if with_ids:
                call["id"] = f"call_{n:04d}"
            calls.append(call)
            part: dict[str, Any] = {"functionCall": call}
            if k == 0 and draw(st.booleans()):
                part["thoughtSignature"] = f"c2ln{n:04d}"
            parts.append(part)
        if not parts:
            parts.append({"text": draw(_text)})
        contents.append({"role": "model", "parts": parts})
        reply: list[dict[str, Any]] = []
        for call in calls:
            output = _output(draw, call.get("id", call["name"]))
            response = {"output": output} if draw(st.integers(0, 3)) else {"lines": output.splitlines()}
            answer = {"name": call["name"], "response": response}
            if "id" in call:
                answer["id"] = call["id"]
            reply.append({"functionResponse": answer})
        if draw(st.booleans()) or not reply:
            reply.append({"text": draw(_text)})
        contents.append({"role": "user", "parts": reply})
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
        "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Read a file."}]}],
        "generationConfig": {"temperature": 0},
    }


class _CachePoints:
    """Draws cache points, at most the four a Converse request may carry."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw
        self._left = 4

    def after(self) -> list[dict[str, Any]]:
        if self._left and self._draw(st.integers(0, 3)) == 0:
            self._left -= 1
            return [{"cachePoint": {"type": "default"}}]
        return []


def _result_items(draw: st.DrawFn, call_id: str) -> list[dict[str, Any]]:
    lines = [f"{call_id} line {n}: some file content here" for n in range(draw(st.integers(1, 60)))]
    if draw(st.integers(0, 3)) == 0:
        return [{"json": {"lines": lines}}]
    return [{"text": "\n".join(lines) + "\n"}]


@st.composite
def bedrock_requests(draw: st.DrawFn) -> dict[str, Any]:
    """``system`` and ``messages`` as a Strands agent sends them: alternating turns, each assistant turn's
    ``toolUse`` blocks answered by the ``toolResult`` blocks of the next user turn, up to 4 cache points."""
    ids = _Ids()
    points = _CachePoints(draw)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": draw(_text)}, *points.after()]}]
    for _ in range(draw(st.integers(1, 6))):
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            reasoning = {"reasoningText": {"text": draw(_text), "signature": "c2ln"}}
            content.append({"reasoningContent": reasoning})
        if draw(st.booleans()):
            content += [{"text": draw(_text)}, *points.after()]
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            calls.append(f"tooluse_{n:04d}")
            call = {"toolUseId": calls[-1], "name": draw(_tools), "input": {"path": f"src/mod{n}.py"}}
            content += [{"toolUse": call}, *points.after()]
        if not calls and not any("text" in b for b in content):
            content.append({"text": draw(_text)})
        messages.append({"role": "assistant", "content": content})
        reply: list[dict[str, Any]] = []
        for call_id in calls:
            result: dict[str, Any] = {"toolUseId": call_id, "content": _result_items(draw, call_id)}
            status = draw(st.sampled_from([None, "success", "error"]))
            if status is not None:
                result["status"] = status
            reply += [{"toolResult": result}, *points.after()]
        if draw(st.booleans()) or not reply:
            reply.append({"text": draw(_text)})
        messages.append({"role": "user", "content": reply})
    request: dict[str, Any] = {"messages": messages}
    if draw(st.booleans()):
        request["system"] = [{"text": draw(_text)}, *points.after()]
    return request


@st.composite
def gemini_cli_sessions(draw: st.DrawFn) -> dict[str, Any]:
    """A Gemini CLI session file (``ConversationRecord``): user prompts, each answered by gemini records
    that call tools (``toolCalls`` carrying their ``functionResponse`` results), then one that answers in
    text; thoughts and tokens on each, info records between."""
    ids = _Ids()
    records: list[dict[str, Any]] = []

    def record(kind: str, content: Any, **fields: Any) -> dict[str, Any]:
        n = ids.next()
        return {
            "id": f"rec-{n:04d}",
            "timestamp": f"2026-12-05T10:{n % 60:02d}:00Z",
            "type": kind,
            "content": content,
            **fields,
        }

    for _ in range(draw(st.integers(1, 4))):
        records.append(record("user", draw(_text)))
        steps = draw(st.integers(0, 3))
        for step in range(steps + 1):
            calls = []
            for _ in range(draw(st.integers(1, 3)) if step < steps else 0):
                n = ids.next()
                name = draw(_tools)
                call_id = f"{name}-{n:04d}"
                output = _output(draw, call_id)
                status = draw(st.sampled_from(["success", "success", "success", "error", "cancelled"]))
                calls.append(
                    {
                        "id": call_id,
                        "name": name,
                        "args": _args(draw, n),
                        "result": [
                            {
                                "functionResponse": {
                                    "id": call_id,
                                    "name": name,
                                    "response": {"output": output},
                                }
                            }
                        ],
                        "status": status,
                        "timestamp": "2026-12-05T10:00:01Z",
                        "displayName": name.title(),
                        "resultDisplay": output[:80],
                        "renderOutputAsMarkdown": False,
                    }
                )
            fields: dict[str, Any] = {
                "thoughts": [
                    {"subject": "Plan", "description": draw(_text), "timestamp": "2026-12-05T10:00:00Z"}
                ]
            }
            if calls:
                fields["toolCalls"] = calls
            fields["tokens"] = {"input": 10, "output": 5, "cached": 0, "total": 15}
            fields["model"] = "gemini-2.5-pro"
            records.append(
                record("gemini", draw(_text) if draw(st.booleans()) or not calls else "", **fields)
            )
        if draw(st.booleans()):
            records.append(record("info", "Switched to fallback model."))
    return {
        "sessionId": "5f1c2a4e-0000-4000-8000-000000000000",
        "projectHash": "79b6fa86e3c0d31765c7e3c6de511a7b",
        "startTime": "2026-12-05T10:00:00Z",
        "lastUpdated": "2026-12-05T10:59:00Z",
        "messages": records,
    }


@st.composite
def ai_sdk_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Vercel AI SDK messages as ``generateText``'s ``response.messages`` builds them: a system prompt,
    then turns where an assistant message's ``tool-call`` parts are answered by one ``tool`` message of
    ``tool-result`` parts; v5 (``input`` / ``output``) or v4 (``args`` / ``result``) throughout."""
    ids = _Ids()
    v4 = draw(st.booleans())
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": draw(_text)},
    ]
    for _ in range(draw(st.integers(1, 6))):
        parts: list[dict[str, Any]] = []
        if draw(st.booleans()):
            parts.append({"type": "reasoning", "text": draw(_text)})
        if draw(st.booleans()):
            parts.append({"type": "text", "text": draw(_text)})
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            call = {"type": "tool-call", "toolCallId": f"call_{n:04d}", "toolName": draw(_tools)}
            call["args" if v4 else "input"] = _args(draw, n)
            calls.append(call)
            parts.append(call)
        if not parts:
            parts.append({"type": "text", "text": draw(_text)})
        messages.append({"role": "assistant", "content": parts})
        if calls:
            results = []
            for call in calls:
                text = _output(draw, call["toolCallId"])
                result: dict[str, Any] = {
                    "type": "tool-result",
                    "toolCallId": call["toolCallId"],
                    "toolName": call["toolName"],
                }
                if v4:
                    result["result"] = text if draw(st.integers(0, 3)) else {"lines": text.splitlines()}
                else:
                    kind = draw(st.sampled_from(["text", "text", "json", "error-text"]))
                    value: Any = {"lines": text.splitlines()} if kind == "json" else text
                    result["output"] = {"type": kind, "value": value}
                results.append(result)
            messages.append({"role": "tool", "content": results})
        if not calls or draw(st.booleans()):  # a turn without calls ends the step loop
            messages.append({"role": "user", "content": draw(_text)})
    return messages


@st.composite
def ollama_requests(draw: st.DrawFn) -> dict[str, Any]:
    """An Ollama ``/api/chat`` request (the ``ollama`` client's ``Message``): assistant ``tool_calls`` of
    ``{"function": {"name", "arguments": {...}}}`` with no ids (sometimes an ``index``, sometimes a
    ``thinking`` beside them), each answered in order by a ``tool`` message naming it in ``tool_name``;
    several calls of one tool in one turn among them."""
    ids = _Ids()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": draw(_text)},
    ]
    for _ in range(draw(st.integers(1, 6))):
        calls: list[dict[str, Any]] = []
        for k in range(draw(st.integers(1, 3))):
            function: dict[str, Any] = {"name": draw(_tools), "arguments": _args(draw, ids.next())}
            if draw(st.booleans()):
                function = {"index": k, **function}
            calls.append({"function": function})
        turn: dict[str, Any] = {"role": "assistant", "content": draw(st.sampled_from(["", "Checking."]))}
        if draw(st.booleans()):
            turn["thinking"] = draw(_text)
        messages.append({**turn, "tool_calls": calls})
        for call in calls:
            name = call["function"]["name"]
            messages.append({"role": "tool", "content": _output(draw, name), "tool_name": name})
        messages.append({"role": "assistant", "content": draw(_text)})
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(_text)})
    return {"model": "qwen3:8b", "messages": messages, "stream": False, "tools": [{"type": "function"}]}


@st.composite
def pydantic_ai_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A pydantic-ai history in its JSON form, made with pydantic-ai's own message types and dumped as
    ``ModelMessagesTypeAdapter`` stores it: a system and a user prompt, then responses (thinking, text,
    tool calls with object or string arguments, some with a provider's item id and details) each
    answered by a request of tool returns (some retried), sometimes with a user prompt after them."""
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        ModelResponsePart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    ids = _Ids()
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("You are a coding agent."), UserPromptPart(draw(_text))])
    ]
    for _ in range(draw(st.integers(1, 6))):
        parts: list[ModelResponsePart] = []
        if draw(st.booleans()):
            parts.append(ThinkingPart(draw(_text), signature="c2ln"))
        if draw(st.booleans()):
            parts.append(TextPart(draw(_text)))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            args = _args(draw, n)
            call = ToolCallPart(
                draw(_tools), json.dumps(args) if draw(st.booleans()) else args, tool_call_id=f"call_{n:04d}"
            )
            if draw(st.booleans()):  # a provider's own item id and details (OpenAI Responses, Gemini)
                call.id, call.provider_details = f"fc_{n:04d}", {"signature": f"sig-{n}"}
            calls.append(call)
            parts.append(call)
        if not parts:
            parts.append(TextPart(draw(_text)))
        messages.append(ModelResponse(parts=parts, model_name="gpt-5"))
        answers: list[Any] = [
            ToolReturnPart(c.tool_name, "bad arguments", tool_call_id=c.tool_call_id, outcome="retried")
            if draw(st.integers(0, 4)) == 0
            else ToolReturnPart(c.tool_name, _output(draw, c.tool_call_id), tool_call_id=c.tool_call_id)
            for c in calls
        ]
        if draw(st.booleans()) or not answers:
            answers.append(UserPromptPart(draw(_text)))
        messages.append(ModelRequest(parts=answers))
    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return dumped


def _adk_event(n: int, author: str, content: dict[str, Any] | None = None, **actions: Any) -> dict[str, Any]:
    event: dict[str, Any] = {} if content is None else {"content": content}
    event.update(
        {
            "invocationId": f"e-{n // 10:04d}",
            "author": author,
            "actions": {"stateDelta": {}, "artifactDelta": {}, **actions},
            "id": f"ev-{n:04d}",
            "timestamp": 1796532212.5 + n,
        }
    )
    return event


@st.composite
def adk_sessions(draw: st.DrawFn) -> dict[str, Any]:
    """A Google ADK session as ``adk run --save_session`` writes it: a user event, then model events
    (text, ``adk-`` id calls) each answered by a function response event (``{"result": text}``), some
    user events, some events that only change state, and sometimes ADK's own compaction early on."""
    ids = _Ids()
    count = iter(range(1000))
    events = [_adk_event(next(count), "user", {"role": "user", "parts": [{"text": draw(_text)}]})]
    if draw(st.integers(0, 3)) == 0:
        summary = {"role": "model", "parts": [{"text": "summary of the start"}]}
        compaction = {"startTimestamp": 0.0, "endTimestamp": 1.0, "compactedContent": summary}
        events.append(_adk_event(next(count), "user", compaction=compaction))
    for _ in range(draw(st.integers(1, 6))):
        parts: list[dict[str, Any]] = [{"text": draw(_text)}] if draw(st.booleans()) else []
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            calls.append({"id": f"adk-{n:04d}", "args": _args(draw, n), "name": draw(_tools)})
        parts += [{"functionCall": call} for call in calls]
        if not parts:
            parts.append({"text": draw(_text)})
        events.append(_adk_event(next(count), "coder", {"parts": parts, "role": "model"}))
        if calls:
            answers = [
                {
                    "functionResponse": {
                        "id": c["id"],
                        "name": c["name"],
                        "response": {"result": _output(draw, c["id"])},
                    }
                }
                for c in calls
            ]
            events.append(_adk_event(next(count), "coder", {"parts": answers, "role": "user"}))
        if draw(st.integers(0, 3)) == 0:
            events.append(_adk_event(next(count), "coder", stateDelta={"step": len(events)}))
        if draw(st.booleans()) or not calls:  # a reply without calls ends the turn: the user speaks next
            events.append(_adk_event(next(count), "user", {"role": "user", "parts": [{"text": draw(_text)}]}))
    return {
        "id": "s1",
        "appName": "fixer",
        "userId": "u1",
        "state": {},
        "events": events,
        "lastUpdateTime": 1.5,
    }


@st.composite
def inspect_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An Inspect eval sample's messages (``inspect_ai.model._chat_message``), as Inspect logs them: every
    message has an ``id``; an assistant's content a string or parts (a signed ``reasoning`` part, text)
    and its ``tool_calls`` (``function`` a string, ``arguments`` an object; now and then one Inspect could
    not parse), each answered by a ``tool`` message naming its ``function`` (an ``error`` when it failed)."""
    ids = _Ids()
    serial = iter(range(100_000))

    def message(role: str, **fields: Any) -> dict[str, Any]:
        return {"id": f"msg{next(serial):04d}", "role": role, **fields}

    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append(message("system", content=draw(_text)))
    messages.append(message("user", content=draw(_text), source="input"))
    for _ in range(draw(st.integers(1, 6))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            call: dict[str, Any] = {"id": f"call_{n:04d}", "function": draw(_tools), "type": "function"}
            if draw(st.integers(0, 5)) == 0:
                call.update(arguments={}, parse_error="Expecting value: line 1 column 1 (char 0)")
            else:
                call["arguments"] = _args(draw, n)
            calls.append(call)
        parts: list[dict[str, Any]] = []
        if draw(st.booleans()):
            n = ids.next()
            parts.append(
                {"type": "reasoning", "reasoning": draw(_text), "signature": f"rs_{n:04d}", "redacted": False}
            )
        if draw(st.booleans()) or not calls:
            parts.append({"type": "text", "text": draw(_text)})
        content: Any = parts if parts and (parts[0]["type"] == "reasoning" or draw(st.booleans())) else ""
        if isinstance(content, str) and parts:
            content = parts[0]["text"]
        turn = message("assistant", content=content, source="generate", model="model")
        if calls:
            turn["tool_calls"] = calls
        messages.append(turn)
        for call in calls:
            tool = message(
                "tool", content=_output(draw, call["id"]), tool_call_id=call["id"], function=call["function"]
            )
            if "parse_error" in call or draw(st.integers(0, 4)) == 0:
                tool.update(
                    content="",
                    error={"type": "parsing" if "parse_error" in call else "unknown", "message": "failed"},
                )
            messages.append(tool)
        if draw(st.booleans()):
            messages.append(message("user", content=draw(_text)))
    return messages


_QWEN_SESSION = "5e5510aa-0000-4000-8000-000000000000"


@st.composite
def qwen_code_sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Qwen Code session file's records (Qwen Code 0.24's ``ChatRecordingService``): the turns of a
    `gemini_requests` body, every call given an id (Qwen Code names each), one ``assistant`` record a
    model turn, one ``tool_result`` record a function response, a ``user`` record for the user's text;
    ``system`` telemetry records among them, each record's parent the one before, and sometimes a
    record of a branch left behind (its parent an earlier record, off the path Qwen Code resumes)."""
    contents = draw(gemini_requests())["contents"]
    records: list[dict[str, Any]] = []
    parent: str | None = None
    asked: list[str] = []

    def add(kind: str, message: dict[str, Any] | None = None, *, branch: bool = False, **fields: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(records):012d}"
        record = {"uuid": uuid, "parentUuid": parent, "sessionId": _QWEN_SESSION, "type": kind,
                  "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/work", "version": "0.24.4"}  # fmt: skip
        records.append({**record, **fields, **({"message": message} if message is not None else {})})
        if not branch:
            parent = uuid

    for content in contents:
        parts = content["parts"]
        if content["role"] == "model":
            asked = []
            for part in parts:
                if "functionCall" in part:
                    part["functionCall"].setdefault("id", f"call_{len(records):04d}_{len(asked)}")
                    asked.append(part["functionCall"]["id"])
            add("assistant", content, model="qwen3-coder")
        else:
            answers = [p for p in parts if "functionResponse" in p]
            for call_id, part in zip(asked, answers, strict=True):
                part["functionResponse"].setdefault("id", call_id)
                add("tool_result", {"role": "user", "parts": [part]}, toolCallResult={"callId": call_id})
            texts = [p for p in parts if "functionResponse" not in p]
            if texts:
                add("user", {"role": "user", "parts": texts})
        if draw(st.booleans()):
            add("system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "api_response"}})
        if records and draw(st.integers(0, 5)) == 0:
            earlier = draw(st.sampled_from(records))["uuid"]
            add("system", subtype="rewind", parentUuid=earlier, systemPayload={}, branch=True)
    add("system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "api_response"}})
    return records


@st.composite
def pi_sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A pi session file (pi-mono ``session-manager.ts``, version 3): its header, then the turns of a
    `gemini_requests` body as ``message`` entries (a model turn an ``assistant`` message of text,
    thinking and ``toolCall`` parts; each function response a ``toolResult`` message; the user's text a
    ``user`` message), ``label`` entries among them, each entry's parent the one before, and sometimes
    an entry of a branch left behind."""
    contents = draw(gemini_requests())["contents"]
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "5e55-pi",
            "timestamp": "2026-12-01T00:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent: str | None = None
    asked: list[dict[str, Any]] = []

    def add(kind: str, *, branch: bool = False, **fields: Any) -> None:
        nonlocal parent
        entry_id = f"{len(lines):08x}"
        stamp = "2026-12-01T00:00:00.000Z"
        lines.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **fields})
        if not branch:
            parent = entry_id

    for content in contents:
        if content["role"] == "model":
            parts: list[dict[str, Any]] = []
            asked = []
            for part in content["parts"]:
                if "functionCall" in part:
                    call = part["functionCall"]
                    asked.append(
                        {"id": call.get("id", f"call_{len(lines):04d}_{len(asked)}"), "name": call["name"]}
                    )
                    parts.append({"type": "toolCall", **asked[-1], "arguments": call["args"]})
                elif part.get("thought"):
                    parts.append({"type": "thinking", "thinking": part["text"]})
                else:
                    parts.append({"type": "text", "text": part["text"]})
            message = {"role": "assistant", "content": parts, "api": "anthropic-messages",
                       "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {},
                       "stopReason": "toolUse" if asked else "stop", "timestamp": 0}  # fmt: skip
            add("message", message=message)
        else:
            answers = [p["functionResponse"] for p in content["parts"] if "functionResponse" in p]
            for call, answer in zip(asked, answers, strict=True):
                text = json.dumps(answer["response"])
                result = {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"]}
                result |= {"content": [{"type": "text", "text": text}], "isError": False, "timestamp": 0}
                add("message", message=result)
            texts = [p["text"] for p in content["parts"] if "text" in p]
            if texts:
                add("message", message={"role": "user", "content": "\n".join(texts), "timestamp": 0})
        if draw(st.booleans()):
            add("label", targetId=lines[-1]["id"], label="mark")
        if len(lines) > 1 and draw(st.integers(0, 5)) == 0:
            earlier = draw(st.sampled_from(lines[1:]))["id"]
            add("label", branch=True, targetId=earlier, label="elsewhere", parentId=earlier)
    add("session_info", name="drawn")
    return lines


_ROO_ENV = "<environment_details>\n# Current Mode\n<slug>code</slug>\n</environment_details>"


def _roo_turn(draw: st.DrawFn, ids: _Ids, v2: bool, ts: Iterator[int]) -> list[dict[str, Any]]:
    """One agent step as Roo Code's ``Task`` stores it: reasoning as the provider gave it, the assistant
    turn, then its results (a legacy user turn of ``tool_result`` blocks and the environment details; a
    versioned ``tool`` message and a user message of the details) or the user's reply."""
    n, at = ids.next(), next(ts)
    reasoning = draw(st.sampled_from(["none", "thinking", "reasoning", "encrypted", "signature"]))
    out: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    if reasoning == "encrypted" and v2:  # OpenAI's encrypted reasoning: an item of its own before the turn
        out.append(
            {"type": "reasoning", "encrypted_content": f"gAAA{n}", "id": f"rs_{n}", "summary": [], "ts": at}
        )
    elif reasoning == "encrypted":
        content.append({"type": "reasoning", "summary": [], "encrypted_content": f"gAAA{n}", "id": f"rs_{n}"})
    elif reasoning == "thinking" and not v2:
        content.append({"type": "thinking", "thinking": draw(_text), "signature": "c2ln"})
    elif reasoning in ("thinking", "reasoning"):
        content.append({"type": "reasoning", "text": draw(_text), **({} if v2 else {"summary": []})})
    if draw(st.booleans()):
        content.append({"type": "text", "text": draw(_text)})
    calls = []
    for k in range(draw(st.integers(0, 3))):
        call_id, name = f"toolu_{n:04d}_{k}", draw(_tools)
        calls.append((call_id, name))
        if v2:
            content.append(
                {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": _args(draw, n)}
            )
        else:
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": _args(draw, n)})
    if not calls and not any(p["type"] == "text" for p in content):
        content.append({"type": "text", "text": draw(_text)})
    if reasoning == "signature" and not v2:  # Gemini's thought signature, kept as a block of its own
        content.append({"type": "thoughtSignature", "thoughtSignature": "c2ln"})
    turn: dict[str, Any] = {"role": "assistant", "content": content}
    if not v2 and draw(st.booleans()):
        turn["id"] = f"msg_{n:04d}"
    out.append({**turn, "ts": at})
    at = next(ts)
    if not calls:
        return [*out, {"role": "user", "content": [{"type": "text", "text": draw(_text)}], "ts": at}]
    if v2:
        results = [
            {
                "type": "tool-result",
                "toolCallId": c,
                "toolName": name,
                "output": {"type": "text", "value": _output(draw, c)},
            }
            for c, name in calls
        ]
        out.append({"role": "tool", "content": results, "ts": at})
        if draw(st.integers(0, 3)):  # the environment details Roo adds to most turns
            out.append({"role": "user", "content": [{"type": "text", "text": _ROO_ENV}], "ts": at})
        return out
    blocks = [{"type": "tool_result", "tool_use_id": c, "content": _output(draw, c)} for c, _ in calls]
    env = [{"type": "text", "text": _ROO_ENV}] if draw(st.integers(0, 3)) else []
    return [*out, {"role": "user", "content": [*blocks, *env], "ts": at}]


def _roo_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    parts = content if message.get("role") == "assistant" and isinstance(content, list) else []
    return [p for p in parts if p.get("type") in ("tool_use", "tool-call")]


def _roo_condensed(draw: st.DrawFn, items: list[dict[str, Any]], v2: bool) -> list[dict[str, Any]]:
    """``items`` after Roo Code's non-destructive condensing (``summarizeConversation``): the messages
    between the first and the last three tagged with the summary's ``condenseParent``, the summary put
    before the three, holding the calls whose results they hold."""
    keep = len(items) - 3
    if keep < 2:
        return items
    condense_id = f"cond-{draw(st.integers(0, 10**6))}"
    answered = {
        p.get("tool_use_id") or p.get("toolCallId")
        for m in items[keep:]
        for p in (m["content"] if isinstance(m.get("content"), list) else [])
        if p.get("type") in ("tool_result", "tool-result")
    }
    kept_calls = {p.get("id") or p.get("toolCallId") for m in items[keep:] for p in _roo_calls(m)}
    preserved = [
        p
        for m in items[:keep]
        for p in _roo_calls(m)
        if (p.get("id") or p.get("toolCallId")) in answered - kept_calls
    ]
    synthetic = {"type": "reasoning", "text": "Condensing conversation context."}
    summary = {
        "role": "assistant",
        "content": [synthetic, {"type": "text", "text": "Summary: " + draw(_text)}, *preserved],
        "ts": items[keep]["ts"] - 1,
        "isSummary": True,
        "condenseId": condense_id,
    }
    tagged = [
        m if n == 0 or "condenseParent" in m else {**m, "condenseParent": condense_id}
        for n, m in enumerate(items[:keep])
    ]
    return [*tagged, summary, *items[keep:]]


def _roo_truncated(draw: st.DrawFn, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` after Roo Code's non-destructive sliding-window truncation: whole steps after the first
    message tagged ``truncationParent``, the marker (a user message) put before the first step kept."""
    starts = [
        n for n in range(2, len(items)) if items[n].get("role") == "assistant" or "role" not in items[n]
    ]
    starts = [n for n in starts if "role" in items[n - 1]]  # not between a reasoning item and its turn
    if not starts:
        return items
    cut = draw(st.sampled_from(starts))
    truncation_id = f"trunc-{draw(st.integers(0, 10**6))}"
    tagged = [  # as Roo tags what it still sends, not what a summary replaced
        m if n == 0 or "condenseParent" in m else {**m, "truncationParent": truncation_id}
        for n, m in enumerate(items[:cut])
    ]
    marker = {
        "role": "user",
        "content": f"[Sliding window truncation: {cut - 1} messages hidden to reduce context]",
        "ts": items[cut]["ts"] - 1,
        "isTruncationMarker": True,
        "truncationId": truncation_id,
    }
    return [*tagged, marker, *items[cut:]]


@st.composite
def roo_code_histories(draw: st.DrawFn) -> dict[str, Any]:
    """A Roo Code task history (``api_conversation_history.json``) as its ``Task`` writes it: the legacy
    list of Anthropic messages (Roo's ``reasoning`` and ``thoughtSignature`` blocks among them) or the
    versioned ``{"version": 2, "messages"}`` of AI SDK messages with standalone encrypted reasoning
    items; sometimes after Roo's own non-destructive condensing or sliding-window truncation (whose
    steps start where an assistant turn or its reasoning does, as ``truncateConversation`` cuts)."""
    ids = _Ids()
    v2 = draw(st.booleans())
    ts = iter(range(1_764_950_400_000, 1_764_950_400_000 + 10**9, 1000))
    task = [{"type": "text", "text": f"<task>\n{draw(_text)}\n</task>"}, {"type": "text", "text": _ROO_ENV}]
    items: list[dict[str, Any]] = [{"role": "user", "content": task, "ts": next(ts)}]
    for _ in range(draw(st.integers(1, 7))):
        items += _roo_turn(draw, ids, v2, ts)
    done = draw(st.sampled_from(["none", "condense", "truncate", "both"]))
    if done in ("condense", "both"):
        items = _roo_condensed(draw, items, v2)
    if done in ("truncate", "both"):
        items = _roo_truncated(draw, items)
    return {"version": 2, "messages": items} if v2 else {"messages": items}


@st.composite
def kimi_cli_contexts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Kimi CLI ``context.jsonl`` as its ``Context`` writes it: the ``_system_prompt`` record, a
    ``_checkpoint`` before the user's message and before each step, a ``_usage`` record after each
    assistant message (the tokens the API reported, growing), and kosong ``Message`` dumps of a
    chat-completions history, some assistant turns holding ``think`` parts (``content`` as a list then)."""
    chat = draw(openai_chat_histories())
    lines: list[dict[str, Any]] = []
    checkpoints = iter(range(10_000))
    tokens = draw(st.integers(2_000, 9_000))
    if chat[0]["role"] == "system":
        lines.append({"role": "_system_prompt", "content": chat.pop(0)["content"]})
    for message in chat:
        message = {k: v for k, v in message.items() if v is not None}  # kosong dumps exclude None
        if message["role"] in ("user", "assistant"):
            lines.append({"role": "_checkpoint", "id": next(checkpoints)})
        if message["role"] == "assistant" and draw(st.booleans()):
            text = message.get("content")
            parts = [{"type": "text", "text": text}] if text else []
            message["content"] = [{"type": "think", "think": draw(_text), "encrypted": None}, *parts]
        elif message["role"] == "assistant" and not message.get("content"):
            message["content"] = []
        lines.append(message)
        if message["role"] == "assistant":
            tokens += draw(st.integers(1, 4_000))
            lines.append({"role": "_usage", "token_count": tokens})
    return lines


_CLINE_ENV = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"


@st.composite
def cline_histories(draw: st.DrawFn) -> dict[str, Any]:
    """A Cline task history (``api_conversation_history.json``) as its ``Task`` writes it: Anthropic
    messages, the task and the environment details in the first user turn and the details after each
    turn's results, ``ts`` on every message and ``modelInfo`` / ``metrics`` on the model's; and the
    truncation range Cline may hold for it (``conversationHistoryDeletedRange``: from message 2 to an
    assistant turn, as ``getNextTruncationRange`` cuts), or None. Half are text-protocol histories
    (`_cline_text_protocol`)."""
    if draw(st.booleans()):
        return _cline_ranged(draw, _cline_text_protocol(draw))
    messages = draw(anthropic_requests())["messages"]
    ts = iter(range(1_765_127_400_000, 1_765_127_400_000 + 10**9, 1000))
    items: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        content = message["content"]
        if message["role"] == "user":
            blocks = [{"type": "text", "text": f"<task>\n{content}\n</task>"}] if i == 0 else list(content)
            content = [*blocks, {"type": "text", "text": _CLINE_ENV}]
        item: dict[str, Any] = {"role": message["role"], "content": content}
        if message["role"] == "assistant":
            item["modelInfo"] = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}
            item["metrics"] = {"tokens": {"prompt": 1000 + i, "completion": 50, "cached": 0}, "cost": 0.01}
        item["ts"] = next(ts)
        items.append(item)
    return _cline_ranged(draw, items)


def _cline_ranged(draw: st.DrawFn, items: list[dict[str, Any]]) -> dict[str, Any]:
    ends = [i for i in range(3, len(items) - 1) if items[i]["role"] == "assistant"]
    deleted = [2, draw(st.sampled_from(ends))] if ends and draw(st.booleans()) else None
    return {"messages": items, "deleted": deleted}


_CLINE_TOOLS = ("read_file", "search_files", "execute_command", "list_files")


def _cline_text_protocol(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Cline history of a model without native tool calling: each assistant turn text with one XML
    call (or none, which Cline answers with an error text), each user turn the result under its header
    (``[tool for 'x'] Result:``, in the result's block or, as older versions wrote it, a block of its
    own) and the environment details."""
    env = {"type": "text", "text": _CLINE_ENV}
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": f"<task>\n{draw(_text)}\n</task>"}, env]}
    ]
    for n in range(draw(st.integers(1, 7))):
        thought = draw(_text)
        if draw(st.integers(0, 5)) == 0:
            items.append({"role": "assistant", "content": [{"type": "text", "text": thought}]})
            error = "[ERROR] You did not use a tool in your previous response! Please retry with a tool use."
            items.append({"role": "user", "content": [{"type": "text", "text": error}, env]})
            continue
        tool = draw(st.sampled_from(_CLINE_TOOLS))
        arg = f"f{n}.py"
        call = f"<thinking>\n{thought}\n</thinking>\n\n<{tool}>\n<path>{arg}</path>\n</{tool}>"
        items.append({"role": "assistant", "content": [{"type": "text", "text": call}]})
        header = f"[{tool} for '{arg}'] Result:"
        output = _output(draw, f"cline-{n}")
        if draw(st.booleans()):
            result = [{"type": "text", "text": f"{header}\n{output}"}]
        else:
            result = [{"type": "text", "text": header}, {"type": "text", "text": output}]
        items.append({"role": "user", "content": [*result, env]})
    return items


@st.composite
def agent_framework_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Microsoft Agent Framework messages as ``Message.to_dict()`` writes them after a run: a user turn,
    then assistant turns of text, reasoning (a Responses model's: an item id and encrypted content) and
    ``function_call`` contents, each call answered in the ``tool`` message right after by a
    ``function_result`` whose ``items`` hold its text (some failed, with an ``exception``)."""
    ids = _Ids()
    messages: list[dict[str, Any]] = [{"type": "message", "role": "user", "contents": [_af_text(draw)]}]
    for _ in range(draw(st.integers(1, 6))):
        contents: list[dict[str, Any]] = []
        if draw(st.booleans()):
            contents.append(_af_text(draw))
        calls: list[str] = []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            if draw(st.integers(0, 2)) == 0 or (not calls and draw(st.booleans())):
                reasoning = {"type": "text_reasoning", "id": f"rs_{n:04d}", "text": draw(_text)}
                contents.append({**reasoning, "protected_data": "ZW5j", "additional_properties": {}})
            call_id = f"call_{n:04d}"
            calls.append(call_id)
            contents.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": draw(_tools),
                    "arguments": _args(draw, n),
                    "additional_properties": {},
                }
            )
        if not contents:
            contents.append(_af_text(draw))
        messages.append(
            {"type": "message", "role": "assistant", "contents": contents, "additional_properties": {}}
        )
        if calls:
            results = []
            for call_id in calls:
                failed = draw(st.integers(0, 4)) == 0
                text = "Error: Function failed." if failed else _output(draw, call_id)
                result = {
                    "type": "function_result",
                    "call_id": call_id,
                    "result": text,
                    "items": [{"type": "text", "text": text, "additional_properties": {}}],
                    "additional_properties": {},
                }
                if failed:
                    result["exception"] = "FunctionInvocationError"
                results.append(result)
            messages.append(
                {"type": "message", "role": "tool", "contents": results, "additional_properties": {}}
            )
        if not calls or draw(st.booleans()):
            messages.append({"type": "message", "role": "user", "contents": [_af_text(draw)]})
    return messages


def _af_message(role: str, contents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "contents": contents, "additional_properties": {}}


def _af_text(draw: st.DrawFn) -> dict[str, Any]:
    return {"type": "text", "text": draw(_text), "additional_properties": {}}


_CONTINUE_TOOLS = st.sampled_from(["Read", "List", "Bash", "read_file", "run_terminal_command"])


@st.composite
def continue_histories(draw: st.DrawFn) -> dict[str, Any]:
    """A Continue session as its CLI and IDE extensions save it: user items with context items, assistant
    items whose ``toolCalls`` (zero to three) are answered by their ``toolCallStates`` (``done`` or
    ``errored``, one output item of text; now and then a cancelled call without output, or two output
    items), thinking items, and an answer; now and then as older versions kept it
    (`older_continue_history`)."""
    ids = _Ids()
    history: list[dict[str, Any]] = []
    context = [{"name": "a.py", "description": "a.py", "content": draw(_text)}] if draw(st.booleans()) else []
    history.append({"message": {"role": "user", "content": draw(_text)}, "contextItems": context})
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 5)) == 0:
            history.append({"message": {"role": "thinking", "content": draw(_text)}, "contextItems": []})
        calls, states = [], []
        for _ in range(draw(st.integers(0, 3))):
            n = ids.next()
            call = {
                "id": f"call_{n:04d}",
                "type": "function",
                "function": {"name": draw(_CONTINUE_TOOLS), "arguments": json.dumps(_args(draw, n))},
            }
            calls.append(call)
            state: dict[str, Any] = {"toolCallId": call["id"], "toolCall": call, "status": "done"}
            state["parsedArgs"] = json.loads(call["function"]["arguments"])
            shape = draw(st.integers(0, 9))
            if shape == 0:  # cancelled before it ran
                state["status"] = "canceled"
            else:
                item = {"content": _output(draw, call["id"]), "name": "Tool Result", "description": "Result"}
                state["output"] = [item, {**item, "content": draw(_text)}] if shape == 1 else [item]
                state["status"] = "errored" if shape == 2 else "done"
            states.append(state)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": draw(st.sampled_from(["", "Let me look."])),
        }
        item: dict[str, Any] = {"message": message, "contextItems": []}
        if calls:
            message["toolCalls"] = calls
            item["toolCallStates"] = states
        else:
            message["content"] = draw(_text)
        history.append(item)
        if draw(st.booleans()):
            history.append({"message": {"role": "user", "content": draw(_text)}, "contextItems": []})
    if draw(st.integers(0, 3)) == 0:
        history = older_continue_history(history)
    return {"sessionId": "9b2f", "title": "t", "workspaceDirectory": "/w", "history": history}


def older_continue_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` as older Continue versions kept it: each result a ``tool`` item after its call's item,
    one ``toolCallState`` an item (a cancelled call's result Continue's message for it)."""
    out: list[dict[str, Any]] = []
    for item in history:
        states = item.get("toolCallStates")
        if not states:
            out.append(item)
            continue
        older = {k: v for k, v in item.items() if k != "toolCallStates"}
        older["toolCallState"] = {k: v for k, v in states[0].items() if k != "output"}
        out.append(older)
        for state in states:
            content = "\n".join(o["content"] for o in state.get("output") or ()) or "Tool cancelled"
            tool = {"role": "tool", "content": content, "toolCallId": state["toolCallId"]}
            out.append({"message": tool, "contextItems": []})
    return out


_COPILOT_TOOLS = st.sampled_from(["view", "bash", "grep", "glob", "edit", "task"])


@st.composite
def copilot_sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A GitHub Copilot CLI session's events as its CLI writes them, each naming the one before it: the
    start and system prompt, user messages, assistant turns whose ``toolRequests`` (zero to three) are
    each started and completed (in order or interleaved; now and then failed, or with a timeline copy
    or a structured copy of the result, or with an image for the model), turn and usage bookkeeping;
    now and then a sub-agent's events among them, or Copilot's own compaction before the rest."""
    ids = _Ids()
    events: list[dict[str, Any]] = []

    def add(kind: str, data: dict[str, Any], **extra: Any) -> None:
        n = len(events)
        parent = events[-1]["id"] if events else None
        event = {"type": kind, "data": data, "id": f"00000000-0000-4000-8000-{n:012d}"}
        events.append(
            {**event, "timestamp": f"2026-12-08T00:00:{n % 60:02d}.000Z", "parentId": parent, **extra}
        )

    add("session.start", {"sessionId": "5e55", "version": 1, "producer": "copilot-agent"})
    add("system.message", {"role": "system", "content": "You are the GitHub Copilot CLI."})
    for turn in range(draw(st.integers(1, 4))):
        text = draw(_text)
        add("user.message", {"content": text, "transformedContent": f"<current_datetime/>\n\n{text}"})
        if turn == 1 and draw(st.integers(0, 3)) == 0:  # Copilot compacted what came before
            add("session.compaction_complete", {"success": True, "summaryContent": draw(_text)})
        for step in range(draw(st.integers(1, 3))):
            add("assistant.turn_start", {"turnId": str(step)})
            requests = []
            for _ in range(draw(st.integers(0, 3))):
                n = ids.next()
                requests.append({"toolCallId": f"call_{n:04d}", "name": draw(_COPILOT_TOOLS),
                                 "arguments": _args(draw, n), "type": "function"})  # fmt: skip
            content = draw(st.sampled_from(["", "Let me look."])) if requests else draw(_text)
            add(
                "assistant.message",
                {"messageId": f"m{len(events)}", "content": content, "toolRequests": requests},
            )
            if draw(st.integers(0, 5)) == 0:  # a sub-agent at work, its own events
                m = ids.next()
                sub = {"toolCallId": f"sub_{m:04d}", "name": "view", "arguments": {}}
                add("assistant.message", {"content": "", "toolRequests": [sub]}, agentId="agent-1")
                done = {"toolCallId": sub["toolCallId"], "success": True, "result": {"content": draw(_text)}}
                add("tool.execution_complete", done, agentId="agent-1")
            order = draw(st.permutations(range(len(requests)))) if requests else []
            for r in requests:
                add("tool.execution_start", {"toolCallId": r["toolCallId"], "toolName": r["name"]})
            for k in order:
                call_id = requests[k]["toolCallId"]
                shape = draw(st.integers(0, 9))
                data: dict[str, Any] = {"toolCallId": call_id, "success": shape != 0}
                if shape == 0:
                    data["error"] = {"message": "Path does not exist", "code": "failure"}
                else:
                    result: dict[str, Any] = {"content": _output(draw, call_id)}
                    if shape == 1:
                        result["detailedContent"] = "diff --git\n" + result["content"]
                    elif shape == 2:
                        result["contents"] = [{"type": "text", "text": result["content"]}]
                    elif shape == 3:
                        result["binaryResultsForLlm"] = [
                            {"type": "image", "data": "iVBOR", "mimeType": "image/png"}
                        ]
                    data["result"] = result
                add("tool.execution_complete", data)
            add("assistant.turn_end", {"turnId": str(step)})
            add("session.usage_record", {"usage": {"inputTokens": 100, "outputTokens": 5}})
        add("assistant.message", {"messageId": f"m{len(events)}", "content": draw(_text), "toolRequests": []})
    add("session.shutdown", {"accountingSnapshot": {}})
    return events
