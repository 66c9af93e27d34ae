"""The AgentScope 2.x adapter against a real `agentscope.agent.Agent` loop with a scripted chat model."""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import tracetrim as tt
from tests.conftest import require_module
from tracetrim.archive import FileArchive, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

require_module("agentscope", "pip install tracetrim[agentscope]")

from agentscope.agent import Agent
from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolCallBlock, UserMsg
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.state._state import ReadCacheEntry
from agentscope.tool import FunctionTool, Toolkit
from pydantic import BaseModel

from tracetrim.harness_adapter._window import Budget
from tracetrim.harness_adapter.agentscope import TracetrimMiddleware

BIG = 3000


class ScriptedChatModel(ChatModelBase):
    """Replies from a script and records what each request looked like in OpenAI chat format."""

    class Parameters(BaseModel):
        """No parameters."""

    def __init__(self, steps: list[list[Any]], context_size: int = 1_000_000) -> None:
        super().__init__(
            credential=CredentialBase(),
            model="scripted",
            parameters=self.Parameters(),
            stream=False,
            context_size=context_size,
        )
        self.formatter = OpenAIChatFormatter()
        self.steps = steps
        self.requests: list[list[dict[str, Any]]] = []
        self.histories: list[list[Msg]] = []

    async def _call_api(
        self, model_name: str, messages: list[Msg], tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> ChatResponse:
        self.histories.append(list(messages))
        self.requests.append(await self.formatter.format(messages))
        return ChatResponse(content=self.steps.pop(0), is_last=True)


async def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file to read.
    """
    return f"<{path}>\n" + "r" * BIG


async def search_logs(query: str) -> str:
    """Search the logs.

    Args:
        query: What to look for.
    """
    return f"logs for {query}\n" + "l" * BIG


def _call(call_id: str, name: str, **args: str) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, input=json.dumps(args))


def _script() -> list[list[Any]]:
    return [
        [_call("c1", "read_file", path="a.txt")],
        [TextBlock(text="a.txt read")],
        [_call("c2", "search_logs", query="boot")],
        [TextBlock(text="nothing in the logs")],
        [_call("c3", "read_file", path="b.txt")],
        [TextBlock(text="b.txt read")],
        [TextBlock(text="done")],
    ]


async def _agent(
    mode: tt.Mode,
    tmp_path: Any,
    records: list[tt.Record],
    *,
    context_size: int = 1_000_000,
    config: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[Agent, ScriptedChatModel, ScriptedDecisionModel, FileArchive | None]:
    """An agent whose middleware plans on every step unless ``settings`` say otherwise."""
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed")
    toolkit = Toolkit()
    await toolkit.add_tool(FunctionTool(read_file, permission=allow))
    await toolkit.add_tool(FunctionTool(search_logs, permission=allow))
    decisions = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))
    archive = FileArchive(tmp_path / "archive") if mode is tt.Mode.ENFORCE else None
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "search_logs"}, preserve_recent_messages=1, **(config or {})
        ),
        execution=tt.ExecutionOptions(mode=mode, observer=records.append),
        archive=archive,
    )
    settings = {"trigger_tokens": None} | settings  # the scripted history is far below any real window
    middleware = TracetrimMiddleware(compactor, read_tools={"read_file": "path"}, **settings)
    model = ScriptedChatModel(_script(), context_size)
    agent = Agent(
        name="bot", system_prompt="You read files.", model=model, toolkit=toolkit, middlewares=[middleware]
    )
    agent.state.tool_context.read_file_cache = [
        ReadCacheEntry(lines=["a"], updated_at=1.0, bytes=1, file_path="a.txt"),
        ReadCacheEntry(lines=["b"], updated_at=1.0, bytes=1, file_path="b.txt"),
    ]
    return agent, model, decisions, archive


async def _run(agent: Agent) -> None:
    for text in ("read a.txt", "search the boot logs", "now read b.txt"):
        await agent.reply(UserMsg(name="user", content=text))


def _tool_messages(request: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: json.dumps(m["content"]) for m in request if m["role"] == "tool"}


def _call_ids(request: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for m in request if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def _result(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        b for m in messages for b in m["content"] if b.get("type") == "tool_result" and b["id"] == call_id
    )
    return found


def _assert_paired(request: list[dict[str, Any]]) -> None:
    calls = _call_ids(request)
    results = list(_tool_messages(request))
    assert sorted(calls) == sorted(results), (calls, results)


async def test_enforce_shortens_drops_archives_and_restores(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, model, _, archive = await _agent(tt.Mode.ENFORCE, tmp_path, records)
    await _run(agent)
    assert archive is not None

    for request in model.requests:
        _assert_paired(request)
    last = model.requests[-1]
    tools = _tool_messages(last)
    assert "c2" not in tools and "c2" not in _call_ids(last)  # irrelevant pair gone
    assert len(tools["c1"]) < 1000 and "[tracetrim:" in tools["c1"]  # old result shortened
    assert len(tools["c3"]) > BIG  # the recent one untouched

    context = [m.model_dump(mode="json") for m in agent.state.context]
    result = _result(context, "c1")
    assert result["metadata"]["tracetrim"]["action"] == "drop_result"
    assert [m["id"] for m in context] == [m.id for m in agent.state.context]

    scope = tt.Scope("agentscope", "bot", agent.state.session_id)
    entries = await archive.list(scope)
    assert entries
    mine = agent.state.middle_context["TracetrimMiddleware"]
    refs = [entry["archive_ref"] for entry in mine["archives"]]
    assert refs and set(refs) <= {e.ref for e in entries}
    assert "c1" in mine["archives"][0]["shortened"] or "c1" in mine["archives"][0]["dropped"]

    original = await archive.restore(scope, refs[0])
    full = _result(original, "c1")
    assert full["output"] == await read_file("a.txt") or full["output"][0]["text"] == await read_file("a.txt")
    assert await RecallTool(archive, scope)("c1") == await read_file("a.txt")
    restored = rehydrate(context, original, ["c1"])
    back = _result(restored, "c1")
    assert back == full

    assert [e.file_path for e in agent.state.tool_context.read_file_cache] == ["b.txt"]
    assert any(r.reason == "ARCHIVED_PROPOSAL" for r in records)


async def test_shadow_changes_nothing_and_records(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.SHADOW, tmp_path, records)
    await _run(agent)
    for request in model.requests:
        _assert_paired(request)
        assert "[tracetrim:" not in json.dumps(request)
    assert set(_tool_messages(model.requests[-1])) == {"c1", "c2", "c3"}
    assert decisions.calls
    assert any(r.reason == "SHADOW_PROPOSAL" and r.mode == "shadow" for r in records)
    assert len(agent.state.tool_context.read_file_cache) == 2
    assert "archives" not in agent.state.middle_context.get("TracetrimMiddleware", {})


async def test_off_does_nothing(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.OFF, tmp_path, records)
    await _run(agent)
    assert not decisions.calls
    assert all(r.reason == "DISABLED" for r in records)
    assert set(_tool_messages(model.requests[-1])) == {"c1", "c2", "c3"}
    assert "[tracetrim:" not in json.dumps(model.requests[-1])


async def test_trigger_tokens_skips_small_contexts(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.ENFORCE, tmp_path, records)
    middleware = agent._compress_context_middlewares[0]
    assert isinstance(middleware, TracetrimMiddleware)
    middleware.trigger_tokens = 10_000_000
    await _run(agent)
    assert not decisions.calls and not records
    assert set(_tool_messages(model.requests[-1])) == {"c1", "c2", "c3"}


def _middleware(agent: Agent) -> TracetrimMiddleware:
    middleware = agent._compress_context_middlewares[0]
    assert isinstance(middleware, TracetrimMiddleware)
    return middleware


async def test_budget_defaults_come_from_the_model_context_size(tmp_path: Any) -> None:
    """AgentScope knows every model's window: 60% of it triggers, 40% is the target. (A window small
    enough for the scripted history would set off AgentScope's own compression at 80% during the run,
    so the run uses a large one and the middleware is then called on a model with a small one.)"""
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.SHADOW, tmp_path, records, trigger_tokens="auto")
    await _run(agent)
    assert not records and not decisions.calls
    model.context_size = 3_000
    middleware = _middleware(agent)
    result = await middleware.compact_agent(agent)
    assert middleware.budget == Budget(1_800, 1_200, 3_000)
    # The Compactor (thresholds) planned with a copy of its config carrying the budget; its own config
    # is the host's and stays as it was.
    assert result.outcome is not None and result.outcome.plan is not None
    assert (
        result.outcome.plan.stats.target_tokens == 1_200 and result.outcome.plan.stats.tokens_before > 1_800
    )
    assert [r.target_tokens for r in records] == [1_200] and decisions.calls
    assert not middleware.strategy.config.budgeted  # type: ignore[attr-defined]


async def test_a_large_window_keeps_small_contexts_unplanned(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.ENFORCE, tmp_path, records, trigger_tokens="auto")
    await _run(agent)
    assert _middleware(agent).budget == Budget(600_000, 400_000, 1_000_000)
    assert not decisions.calls and not records
    assert set(_tool_messages(model.requests[-1])) == {"c1", "c2", "c3"}


async def test_explicit_budget_wins_over_the_window(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, _, _, _ = await _agent(
        tt.Mode.SHADOW, tmp_path, records, trigger_tokens=900, target_tokens=500, context_size=1_000_000
    )
    await _run(agent)
    assert _middleware(agent).budget == Budget(900, 500, 1_000_000)
    assert records and {r.target_tokens for r in records} == {500}


async def test_a_compactor_with_its_own_budget_keeps_it(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, _, _, _ = await _agent(
        tt.Mode.SHADOW,
        tmp_path,
        records,
        trigger_tokens="auto",
        config={"trigger_tokens": 700, "target_tokens": 300},
    )
    await _run(agent)
    assert _middleware(agent).budget == Budget()
    assert records and {r.target_tokens for r in records} == {300}


async def test_no_usable_window_means_no_budget(tmp_path: Any) -> None:
    """A window reported as 0 is not a window: the context is planned as before."""
    records: list[tt.Record] = []
    agent, model, decisions, _ = await _agent(tt.Mode.SHADOW, tmp_path, records, trigger_tokens="auto")
    await _run(agent)
    model.context_size = 0
    middleware = _middleware(agent)
    await middleware.compact_agent(agent)
    assert middleware.budget == Budget()
    assert decisions.calls and [r.target_tokens for r in records] == [0]


def test_bad_budget_settings_are_refused() -> None:
    compactor = tt.Compactor(ScriptedDecisionModel.by_call_id({}, default=(0.9, 0.9)))
    with pytest.raises(ValueError, match="needs trigger_tokens"):
        TracetrimMiddleware(compactor, target_tokens=100)
    with pytest.raises(ValueError, match="must be below trigger_tokens"):
        TracetrimMiddleware(compactor, trigger_tokens=100, target_tokens=100)
    with pytest.raises(TypeError, match="trigger_tokens must be a number of tokens"):
        TracetrimMiddleware(compactor, trigger_tokens="60%")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="context_window must be a positive"):
        TracetrimMiddleware(compactor, context_window=0)


async def test_one_compaction_encodes_the_history_once(tmp_path: Any) -> None:
    from tests._encode_counter import OWNED_HISTORIES, counting_encodes, enforcing_compactor
    from tests._histories import tool_history

    agent, _, _, _ = await _agent(tt.Mode.OFF, tmp_path, [])
    scope = tt.Scope("u", "a", "s")
    middleware = TracetrimMiddleware(enforcing_compactor(), scope=scope, trigger_tokens=None)
    agent.state.context = [Msg.model_validate(m) for m in tool_history(8, size=12_000, tail=5)]
    before = list(agent.state.context)
    with counting_encodes([m.model_dump(mode="json") for m in before]) as count:
        result = await middleware.compact_agent(agent)
    assert result.archive_ref and agent.state.context != before
    assert count.histories <= OWNED_HISTORIES  # its own conversion: encoded once


async def test_requests_after_a_drop_format_to_gemini_contents_gemini_takes(tmp_path: Any) -> None:
    """Each history the model received, formatted by AgentScope's own ``GeminiChatFormatter``: no two
    model turns in a row (a dropped call's turn is joined to the next model turn, never left beside it),
    and every turn of calls answered by as many responses in the next. (The formatter itself sends the
    system prompt and the user's turns as user turns side by side, drop or not.)"""
    from agentscope.formatter import GeminiChatFormatter

    records: list[tt.Record] = []
    agent, model, _, _ = await _agent(tt.Mode.ENFORCE, tmp_path, records)
    await _run(agent)
    assert "c2" not in _call_ids(model.requests[-1])  # the drop happened
    for history in model.histories:
        contents = await GeminiChatFormatter().format(history)
        roles = [c["role"] for c in contents]
        assert ("model", "model") not in set(itertools.pairwise(roles)), roles
        for turn, following in itertools.pairwise(contents):
            calls = [p for p in turn["parts"] if "function_call" in p]
            answers = [p for p in following["parts"] if "function_response" in p]
            assert not calls or len(answers) == len(calls), (turn, following)
