"""pydantic-ai agent whose old tool results tracetrim compacts (``ProcessHistory``), then recalls.

Run: ``python examples/pydantic_ai_agent.py`` (needs ``pip install tracetrim[pydantic-ai]``; no network,
no keys). The model is pydantic-ai's own ``FunctionModel`` with a fixed script; the decision model is
scripted too, so the run is the same every time; run it with ``--embedded`` to let tracetrim's embedded
default judge decide instead.
"""

from __future__ import annotations

import asyncio
import tempfile

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import tracetrim as tt
from tracetrim.archive import FileArchive, RecallTool
from tracetrim.harness_adapter.pydantic_ai import tracetrim_capability

SCRIPT = [
    ToolCallPart("read_log", {"service": "api"}, tool_call_id="c1"),
    ToolCallPart("read_log", {"service": "cron"}, tool_call_id="c2"),
    ToolCallPart("recall_tool_result", {"call_id": "c1"}, tool_call_id="c3"),
    ToolCallPart("recall_tool_result", {"call_id": "c9"}, tool_call_id="c4"),
    TextPart("recalled the api log"),
]
seen: list[list[ModelMessage]] = []


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The next scripted reply; keeps what the model was sent."""
    seen.append(list(messages))
    return ModelResponse(parts=[SCRIPT[len(seen) - 1]])


async def main() -> None:
    """Two log reads, then a recall of the first once compaction has shortened it."""
    with tempfile.TemporaryDirectory() as root:
        archive = FileArchive(root)
        scope = tt.Scope("ops", "watcher", "session-1")
        decisions = decision_model()
        compactor = tt.Compactor(
            decisions,
            config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=2),
            execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
            archive=archive,
        )
        recall = RecallTool(archive, scope)
        agent: Agent[None, str] = Agent(
            FunctionModel(scripted),
            name="watcher",
            capabilities=[tracetrim_capability(compactor, scope=scope)],
        )
        agent.tool_plain(recall.function)

        @agent.tool_plain
        def read_log(service: str) -> str:
            """Read a service's log."""
            return f"log of {service}\n{LOG}"

        result = await agent.run("check the api and cron logs, then tell me exactly what the api log said")

        sent = {
            p.tool_call_id: str(p.content)
            for m in seen[-1]
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        }
        print(f"the model last saw tool results {sorted(sent)}; answer: {result.output!r}")
        entries = await archive.list(scope)
        print(f"archived snapshots: {[entry.ref[:12] for entry in entries]}")
        report(sent)


if __name__ == "__main__":
    asyncio.run(main())
