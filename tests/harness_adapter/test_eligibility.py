"""Eligibility never does nothing silently: the NO_CANDIDATES detail names ``eligible_tools``, and hosts
opt in read-only tools from what their framework or MCP server already declares (`read_only_tools`).

The tools are the frameworks' own objects, built by their installed packages (MCP's ``mcp.types.Tool``,
LangChain ``StructuredTool``, pydantic-ai ``Tool`` / ``ToolDefinition``, openai-agents ``FunctionTool``
made by ``MCPUtil.to_function_tool``, AgentScope ``FunctionTool`` and built-ins); the MCP JSON form is
``Tool.model_dump(by_alias=True)``, what a server sends in ``tools/list``.
"""

from __future__ import annotations

from typing import Any

import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, tool_history, user
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter import declares_read_only, read_only_tools

SCOPE = tt.Scope("u", "a", "s")


def _compactor(eligible: set[str] | None = None, *, recent: int = 4) -> tt.Compactor:
    """ENFORCE over memory; drops c1 and c2 when they are eligible, keeps the rest."""
    return tt.Compactor(
        ScriptedDecisionModel.by_call_id({"c1": (0.0, 0.0), "c2": (0.0, 0.0)}, default=(1.0, 1.0)),
        config=tt.CompactorConfig(eligible_tools=eligible or set(), preserve_recent_messages=recent),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )


def _mixed_history() -> list[dict[str, Any]]:
    """Two read_file pairs and a bash pair, then the recent tail."""
    history = tool_history(2, size=3000)
    history.insert(3, assistant("b1", call("c9", "bash", {"command": "ls"}), result("c9", "bash", "a\nb\n")))
    return history


# --- the NO_CANDIDATES detail ----------------------------------------------------------------------


async def test_no_eligible_tool_names_the_setting_and_the_tools_called() -> None:
    outcome = await _compactor().plan(tt.CompactionRequest(_mixed_history(), scope=SCOPE))
    assert (outcome.status, outcome.reason) == (tt.Status.SKIPPED, "NO_CANDIDATES")
    assert outcome.detail.startswith("no tool is eligible: set CompactorConfig.eligible_tools (it is empty;")
    assert "the history calls bash, read_file)" in outcome.detail
    assert "read_only_tools" in outcome.detail and "eligible_read_only=True" in outcome.detail


async def test_eligible_tools_that_the_history_never_calls_are_named() -> None:
    outcome = await _compactor({"Read", "grep"}).plan(tt.CompactionRequest(_mixed_history(), scope=SCOPE))
    assert outcome.reason == "NO_CANDIDATES"
    assert "(it names Read, grep; the history calls bash, read_file)" in outcome.detail


async def test_eligible_but_protected_pairs_are_counted_by_reason() -> None:
    compactor = _compactor({"read_file"}, recent=100)
    outcome = await compactor.plan(tt.CompactionRequest(_mixed_history(), scope=SCOPE))
    assert outcome.reason == "NO_CANDIDATES"
    assert outcome.detail == (
        "no pair is eligible for compaction (kept: 2 recent_message, 1 tool_not_eligible); "
        "CompactorConfig.eligible_tools leaves out bash"
    )


async def test_a_history_without_tool_calls_says_so() -> None:
    history = [user("m0", "hello"), assistant("m1", text("hi")), user("m2", "bye")]
    outcome = await _compactor({"read_file"}).plan(tt.CompactionRequest(history, scope=SCOPE))
    assert outcome.detail == "no pair is eligible for compaction: the history holds no tool call"


def test_many_called_tools_are_listed_then_counted() -> None:
    from tracetrim.compactor._eligibility import no_candidates_detail
    from tracetrim.compactor._pairs import TOOL_NOT_ELIGIBLE, Pair

    pairs = [Pair(f"t{n}", f"c{n}", f"tool{n:02}", (n, 0), (n, 1), TOOL_NOT_ELIGIBLE) for n in range(11)]
    detail = no_candidates_detail(pairs, frozenset())
    assert "the history calls tool00, tool01, tool02, tool03, tool04, tool05, tool06, tool07 and 3 more)" in (
        detail
    )


# --- read_only_tools on each host's own tool objects -------------------------------------------------


def _mcp_tools() -> list[Any]:
    from mcp.types import Tool, ToolAnnotations

    schema = {"type": "object", "properties": {}}
    return [
        Tool(name="read_file", input_schema=schema, annotations=ToolAnnotations(read_only_hint=True)),
        Tool(name="write_file", input_schema=schema, annotations=ToolAnnotations(read_only_hint=False)),
        Tool(name="unknown", input_schema=schema, annotations=ToolAnnotations(title="no hint")),
        Tool(name="bare", input_schema=schema),
    ]


def test_mcp_tools_and_their_json() -> None:
    tools = _mcp_tools()
    assert read_only_tools(tools) == {"read_file"}
    wire = [tool.model_dump(by_alias=True, exclude_none=True) for tool in tools]
    assert wire[0]["annotations"] == {"readOnlyHint": True}  # the shape tools/list sends
    assert read_only_tools(wire) == {"read_file"}
    assert read_only_tools([{"name": "x", "annotations": {"readOnlyHint": "true"}}]) == frozenset()


def test_langchain_tools_by_metadata_or_tags() -> None:
    from langchain_core.tools import StructuredTool

    def grep(pattern: str) -> str:
        """Search."""
        return pattern

    list_dir = StructuredTool.from_function(grep, name="list_dir", tags=["read_only"])
    rm = StructuredTool.from_function(grep, name="rm", tags=["destructive"])

    hinted = StructuredTool.from_function(grep, metadata={"readOnlyHint": True})
    mcp_like = StructuredTool.from_function(
        grep, name="cat", metadata={"annotations": {"readOnlyHint": True}}
    )
    assert read_only_tools([hinted, mcp_like, list_dir, rm]) == {"grep", "cat", "list_dir"}


def test_pydantic_ai_tools_and_mcp_tool_definitions() -> None:
    from pydantic_ai import Tool
    from pydantic_ai.tools import ToolDefinition

    def look(path: str) -> str:
        return path

    tools = [
        Tool(look, name="look", metadata={"read_only": True}),
        Tool(look, name="poke"),
        # what pydantic-ai's MCP toolsets put in a definition's metadata
        ToolDefinition(name="mcp_read", metadata={"meta": None, "annotations": {"readOnlyHint": True}}),
        ToolDefinition(name="mcp_write", metadata={"annotations": {"readOnlyHint": False}}),
    ]
    assert read_only_tools(tools) == {"look", "mcp_read"}


def test_openai_agents_function_tools_made_from_mcp_tools() -> None:
    from agents import function_tool
    from agents.mcp import MCPServerStdio, MCPUtil

    server = MCPServerStdio(params={"command": "true"}, name="fs")  # never started: only named
    converted = [
        MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=False) for tool in _mcp_tools()
    ]

    @function_tool
    def read_notes() -> str:
        """Plain tools declare nothing."""
        return ""

    assert read_only_tools([*converted, read_notes]) == {"read_file"}


def test_agentscope_tools_by_is_read_only() -> None:
    from agentscope.tool import Bash, FunctionTool, Glob, Read

    def fetch(url: str) -> str:
        """Fetch.

        Args:
            url: where.
        """
        return url

    tools = [FunctionTool(fetch, is_read_only=True), FunctionTool(fetch, name="post"), Read(), Glob(), Bash()]  # type: ignore[arg-type]
    assert read_only_tools(tools) == {"fetch", "Read", "Glob"}


def test_nameless_or_odd_tools_are_left_out() -> None:
    assert read_only_tools([{"annotations": {"readOnlyHint": True}}, object(), "read_file"]) == frozenset()
    assert declares_read_only({"tags": [["read_only"]]}) is False  # an unhashable tag is no tag


# --- the adapters' eligible_read_only --------------------------------------------------------------


def _dropped(adapter: Any) -> set[str]:
    outcome = adapter.last_result.outcome
    return {d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_RESULT} | {
        d.call_id for d in outcome.plan.decisions if d.action is tt.Action.DROP_CALL
    }


async def test_openai_agents_filter_opts_in_the_agents_read_only_tools() -> None:
    from agents import Agent
    from agents.mcp import MCPServerStdio, MCPUtil
    from agents.run_config import CallModelData, ModelInputData

    from tracetrim.formats import to_openai_responses
    from tracetrim.harness_adapter.openai_agents import CompactingSession, TracetrimInputFilter

    server = MCPServerStdio(params={"command": "true"}, name="fs")
    tools = [MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=False) for tool in _mcp_tools()]
    items = to_openai_responses(tool_history(4, size=3000))
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions=None),  # type: ignore[arg-type]
        agent=Agent(name="a", tools=tools),  # type: ignore[arg-type]
        context=None,
    )

    plain = TracetrimInputFilter(_compactor(), scope=SCOPE, trigger_tokens=None)
    assert (await plain(data)).input == items
    assert plain.last_result is not None and plain.last_result.outcome is not None
    assert "CompactorConfig.eligible_tools" in plain.last_result.outcome.detail

    opted = TracetrimInputFilter(_compactor(), scope=SCOPE, trigger_tokens=None, eligible_read_only=True)
    sent = await opted(data)
    assert opted.read_only == {"read_file"} and len(sent.input) < len(items)
    assert {"c1", "c2"} <= _dropped(opted)

    from agents import SQLiteSession

    with pytest.raises(tt.TracetrimError, match="eligible_read_only is for TracetrimInputFilter"):
        CompactingSession(SQLiteSession("s"), _compactor(), eligible_read_only=True)


async def test_agentscope_middleware_opts_in_the_toolkits_read_only_tools() -> None:
    from agentscope.agent import Agent
    from agentscope.message import Msg
    from agentscope.tool import FunctionTool, Toolkit

    from tests.harness_adapter.test_adapter_agentscope import ScriptedChatModel
    from tracetrim.harness_adapter.agentscope import TracetrimMiddleware

    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        return path

    toolkit = Toolkit()
    await toolkit.add_tool(FunctionTool(read_file, is_read_only=True))  # type: ignore[arg-type]
    middleware = TracetrimMiddleware(_compactor(), scope=SCOPE, trigger_tokens=None, eligible_read_only=True)
    agent = Agent(name="bot", system_prompt="", model=ScriptedChatModel([]), toolkit=toolkit, middlewares=[])
    agent.state.context = [Msg.model_validate(m) for m in tool_history(4, size=3000)]
    result = await middleware.compact_agent(agent)
    assert middleware.read_only == {"read_file"} and result.archive_ref
    assert {"c1", "c2"} <= _dropped(middleware)


async def test_langchain_middleware_reads_the_agent_tools_it_is_given() -> None:
    from langchain_core.tools import StructuredTool
    from langgraph.runtime import Runtime

    from tracetrim.formats import to_langchain
    from tracetrim.harness_adapter.langchain import TracetrimAgentMiddleware

    def read_file(path: str) -> str:
        """Read a file."""
        return path

    tools = [StructuredTool.from_function(read_file, metadata={"readOnlyHint": True})]
    with pytest.raises(tt.TracetrimError, match="eligible_read_only needs agent_tools"):
        TracetrimAgentMiddleware(_compactor(), eligible_read_only=True)
    middleware = TracetrimAgentMiddleware(
        _compactor(), agent_tools=tools, scope=SCOPE, trigger_tokens=None, eligible_read_only=True
    )
    update = await middleware.abefore_model({"messages": to_langchain(tool_history(4, size=3000))}, Runtime())  # type: ignore[typeddict-item]
    assert update is not None and middleware.read_only == {"read_file"}
    assert {"c1", "c2"} <= _dropped(middleware)


async def test_pydantic_ai_processor_opts_in_the_runs_read_only_tools() -> None:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tracetrim.formats import to_pydantic_ai
    from tracetrim.harness_adapter.pydantic_ai import TracetrimHistoryProcessor, tracetrim_capability

    def read_file(path: str) -> str:
        return path

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("done")])

    processor = TracetrimHistoryProcessor(
        _compactor(), scope=SCOPE, trigger_tokens=None, eligible_read_only=True
    )
    agent = Agent(
        FunctionModel(reply),
        tools=[Tool(read_file, metadata={"readOnlyHint": True})],
        capabilities=[ProcessHistory(processor=processor)],
    )
    await agent.run("go on", message_history=to_pydantic_ai(tool_history(4, size=3000)))
    assert processor.read_only == {"read_file"}
    assert {"c1", "c2"} <= _dropped(processor)
    tracetrim_capability(_compactor(), eligible_read_only=True)  # the capability takes the flag too


def test_the_flag_is_off_by_default_and_refused_where_it_could_do_nothing() -> None:
    from tracetrim.harness_adapter.openai_agents import TracetrimInputFilter

    assert TracetrimInputFilter(_compactor()).eligible_read_only is False
    with pytest.raises(tt.TracetrimError, match="needs a strategy with eligible tools"):
        TracetrimInputFilter(
            tt.OffloadStrategy(config=tt.OffloadConfig(mode="compact")), eligible_read_only=True
        )
    with pytest.raises(tt.TracetrimError, match="must be True or False"):
        TracetrimInputFilter(_compactor(), eligible_read_only="yes")  # type: ignore[arg-type]
