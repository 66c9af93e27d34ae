"""LangChain v1 agent (``create_agent``) whose old tool results tracetrim compacts, then recalls.

Run: ``python examples/langchain_agent.py`` (needs ``pip install tracetrim[langchain]``; no network, no keys).
The chat model is LangChain's own fake model with a fixed script; the decision model is scripted too,
so the run is the same every time; run it with ``--embedded`` to let tracetrim's embedded default judge
decide instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

import tracetrim as tt
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool
from tracetrim.harness_adapter.langchain import TracetrimAgentMiddleware


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model that accepts tools and keeps the last request it saw."""

    last_request: list[BaseMessage] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        """The script already knows which tools it calls."""
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.last_request = list(messages)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def read_log(service: str) -> str:
    """Read a service's log."""
    return f"log of {service}\n{LOG}"


def call(id_: str, name: str, **args: str) -> AIMessage:
    """A scripted tool call."""
    return AIMessage(content="", tool_calls=[{"id": id_, "name": name, "args": args, "type": "tool_call"}])


async def main() -> None:
    """Two log reads, then a recall of the first once compaction has shortened it."""
    archive = KeyValueArchive(MemoryStore())
    decisions = decision_model()
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=2),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    middleware = TracetrimAgentMiddleware(compactor)
    recall = RecallTool(archive, tt.Scope("langchain", middleware.name, "ops-1"))
    model = ScriptedModel(
        messages=iter(
            [
                call("c1", "read_log", service="api"),
                call("c2", "read_log", service="cron"),
                AIMessage(content="both healthy"),
                call("c3", "recall_tool_result", call_id="c1"),
                call("c4", "recall_tool_result", call_id="c9"),
                AIMessage(content="recalled the api log"),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[read_log, StructuredTool.from_function(coroutine=recall.function)],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "ops-1"}}
    await agent.ainvoke({"messages": [HumanMessage("check the api and cron logs")]}, config)
    state = await agent.ainvoke({"messages": [HumanMessage("what did the api log say exactly?")]}, config)

    sent = {m.tool_call_id: str(m.content) for m in model.last_request if isinstance(m, ToolMessage)}
    print(f"the model last saw tool results {sorted(sent)}; graph state: {len(state['messages'])} messages")
    entries = await archive.list(recall.scope)
    print(f"archived snapshots: {[entry.ref[:12] for entry in entries]}")
    report(sent)


if __name__ == "__main__":
    asyncio.run(main())
