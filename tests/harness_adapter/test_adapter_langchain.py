"""The LangChain v1 adapter against a real ``create_agent`` loop with a scripted chat model."""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import tracetrim as tt
from tests.conftest import require_module
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

require_module("langchain", "pip install tracetrim[langchain]")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from tracetrim.formats import from_langchain
from tracetrim.harness_adapter import restore_markers
from tracetrim.harness_adapter._window import Budget
from tracetrim.harness_adapter.langchain import TracetrimAgentMiddleware

BIG = 3000


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording every request and accepting tools."""

    requests: list[list[BaseMessage]]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"<{path}>\n" + "r" * BIG


@tool
def search_logs(query: str) -> str:
    """Search the logs."""
    return f"logs for {query}\n" + "l" * BIG


def _call(call_id: str, name: str, **args: str) -> AIMessage:
    call = {"id": call_id, "name": name, "args": args, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


def _script() -> Iterator[AIMessage]:
    return iter(
        [
            _call("c1", "read_file", path="a.txt"),
            _call("c2", "search_logs", query="boot"),
            AIMessage(content="a.txt is fine; nothing in the logs"),
            _call("c3", "read_file", path="b.txt"),
            AIMessage(content="done"),
        ]
    )


Setup = tuple[Any, ScriptedChatModel, ScriptedDecisionModel, KeyValueArchive | None, TracetrimAgentMiddleware]


def _setup(
    mode: tt.Mode,
    records: list[tt.Record],
    *,
    window: int | None = None,
    config: dict[str, Any] | None = None,
    **settings: Any,
) -> Setup:
    """An agent whose chat model reports ``window`` as ``max_input_tokens`` (None: no profile)."""
    decisions = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))
    archive = KeyValueArchive(MemoryStore()) if mode is tt.Mode.ENFORCE else None
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "search_logs"}, preserve_recent_messages=2, **(config or {})
        ),
        execution=tt.ExecutionOptions(mode=mode, observer=records.append),
        archive=archive,
    )
    profile: Any = {"max_input_tokens": window} if window is not None else None
    model = ScriptedChatModel(messages=_script(), requests=[], profile=profile)
    middleware = TracetrimAgentMiddleware(compactor, model=model, **settings)
    agent = create_agent(
        model, tools=[read_file, search_logs], middleware=[middleware], checkpointer=InMemorySaver()
    )
    return agent, model, decisions, archive, middleware


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def _turns(agent: Any) -> dict[str, Any]:
    agent.invoke({"messages": [HumanMessage("check a.txt and the boot logs")]}, CONFIG)
    result: dict[str, Any] = agent.invoke({"messages": [HumanMessage("now read b.txt")]}, CONFIG)
    return result


async def _aturns(agent: Any) -> dict[str, Any]:
    await agent.ainvoke({"messages": [HumanMessage("check a.txt and the boot logs")]}, CONFIG)
    result: dict[str, Any] = await agent.ainvoke({"messages": [HumanMessage("now read b.txt")]}, CONFIG)
    return result


def _assert_paired(messages: list[BaseMessage]) -> None:
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(calls) == sorted(results), (calls, results)
    for i, m in enumerate(messages):  # every result after its call
        if isinstance(m, ToolMessage):
            assert any(
                isinstance(p, AIMessage) and any(c["id"] == m.tool_call_id for c in p.tool_calls)
                for p in messages[:i]
            )


def _tool_text(messages: list[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("use_async", [False, True])
async def test_enforce_compacts_state_archives_and_restores(use_async: bool) -> None:
    records: list[tt.Record] = []
    agent, model, _, archive, _ = _setup(tt.Mode.ENFORCE, records)
    state = await _aturns(agent) if use_async else _turns(agent)
    assert archive is not None

    for request in model.requests:
        _assert_paired(request)
    last = model.requests[-1]
    tools = _tool_text(last)
    assert "c2" not in tools  # irrelevant pair gone, call and result
    assert len(tools["c1"]) < 1000 and "[tracetrim:" in tools["c1"]
    assert len(tools["c3"]) > BIG

    final = state["messages"]
    _assert_paired(final)
    first_ids = [m.id for m in model.requests[0]]
    assert [m.id for m in final][: len(first_ids)] == first_ids  # ids kept, never re-minted

    scope = tt.Scope("langchain", "TracetrimAgentMiddleware", "t1")
    entries = await archive.list(scope)
    assert entries
    recalled = await RecallTool(archive, scope)("c1")
    assert recalled == read_file.invoke({"path": "a.txt"})
    original = await archive.restore(scope, entries[0].ref)
    # The marker rides in the ToolMessage through the graph state and checkpoints, so nothing has to be
    # re-derived from the text (and restoring markers again changes nothing).
    shortened = next(m for m in final if isinstance(m, ToolMessage) and m.tool_call_id == "c1")
    marker = shortened.response_metadata["tracetrim.block_metadata"]["tracetrim"]
    assert marker["archive_ref"] in {e.ref for e in entries} and marker["original_chars"] > BIG
    assert restore_markers(from_langchain(final)) == from_langchain(final)
    restored = rehydrate(from_langchain(final), original, ["c1"])
    result = next(b for m in restored for b in m["content"] if b["type"] == "tool_result" and b["id"] == "c1")
    assert result["output"] == recalled
    assert any(r.reason == "ARCHIVED_PROPOSAL" for r in records)


async def test_shadow_changes_nothing_and_records() -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _, _ = _setup(tt.Mode.SHADOW, records)
    state = _turns(agent)
    assert decisions.calls
    assert set(_tool_text(model.requests[-1])) == {"c1", "c2", "c3"}
    assert "[tracetrim:" not in json.dumps([m.model_dump() for m in state["messages"]])
    assert any(r.reason == "SHADOW_PROPOSAL" for r in records)


async def test_off_does_nothing() -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _, _ = _setup(tt.Mode.OFF, records)
    _turns(agent)
    assert not decisions.calls
    assert all(r.reason == "DISABLED" for r in records)
    assert set(_tool_text(model.requests[-1])) == {"c1", "c2", "c3"}


async def test_budget_defaults_come_from_the_model_profile() -> None:
    """``max_input_tokens`` in the chat model's profile: 60% of it triggers, 40% is the target."""
    records: list[tt.Record] = []
    agent, model, decisions, _, middleware = _setup(tt.Mode.SHADOW, records, window=3_000)
    _turns(agent)
    assert middleware.budget == Budget(1_800, 1_200, 3_000)
    # Small histories were not planned at all; larger ones with the budget on a copy of the config.
    assert decisions.calls and 0 < len(records) < len(model.requests)
    assert {r.target_tokens for r in records} == {1_200}
    assert all(r.tokens_before > 1_800 or r.reason == "BELOW_TRIGGER" for r in records)
    assert not middleware.strategy.config.budgeted  # type: ignore[attr-defined]


async def test_a_large_window_keeps_small_histories_unplanned() -> None:
    records: list[tt.Record] = []
    agent, model, decisions, _, middleware = _setup(tt.Mode.ENFORCE, records, window=200_000)
    _turns(agent)
    assert middleware.budget == Budget(120_000, 80_000, 200_000)
    assert not decisions.calls and not records
    assert set(_tool_text(model.requests[-1])) == {"c1", "c2", "c3"}


async def test_explicit_budget_wins_over_the_profile() -> None:
    records: list[tt.Record] = []
    agent, _, _, _, middleware = _setup(
        tt.Mode.SHADOW, records, window=200_000, trigger_tokens=900, target_tokens=500
    )
    _turns(agent)
    assert middleware.budget == Budget(900, 500, 200_000)
    assert records and {r.target_tokens for r in records} == {500}
    agent, _, _, _, middleware = _setup(tt.Mode.SHADOW, [], window=200_000, context_window=3_000)
    _turns(agent)
    assert middleware.budget == Budget(1_800, 1_200, 3_000)


async def test_no_profile_means_no_budget() -> None:
    records: list[tt.Record] = []
    agent, _, decisions, _, middleware = _setup(tt.Mode.SHADOW, records)
    _turns(agent)
    assert middleware.budget == Budget()
    assert decisions.calls and records and {r.target_tokens for r in records} == {0}


async def test_a_compactor_with_its_own_budget_keeps_it() -> None:
    records: list[tt.Record] = []
    agent, _, _, _, middleware = _setup(
        tt.Mode.SHADOW, records, window=3_000, config={"trigger_tokens": 700, "target_tokens": 300}
    )
    _turns(agent)
    assert middleware.budget == Budget()
    assert records and {r.target_tokens for r in records} == {300}


def test_model_must_be_a_chat_model() -> None:
    compactor = tt.Compactor(ScriptedDecisionModel.by_call_id({}, default=(0.9, 0.9)))
    with pytest.raises(TypeError, match="BaseChatModel"):
        TracetrimAgentMiddleware(compactor, model="gpt-4o")  # type: ignore[arg-type]


async def test_one_compaction_encodes_the_history_once() -> None:
    from langgraph.runtime import Runtime

    from tests._encode_counter import OWNED_HISTORIES, counting_encodes, enforcing_compactor
    from tests._histories import tool_history
    from tracetrim.formats import to_langchain

    messages = to_langchain(tool_history(8, size=12_000, tail=5))
    middleware = TracetrimAgentMiddleware(enforcing_compactor(), scope=tt.Scope("u", "a", "s"))
    with counting_encodes(from_langchain(messages)) as count:
        update = await middleware.abefore_model({"messages": messages}, Runtime())
    assert update is not None and update["messages"]
    assert middleware.last_result is not None and middleware.last_result.archive_ref
    assert count.histories <= OWNED_HISTORIES  # its own conversion: encoded once
