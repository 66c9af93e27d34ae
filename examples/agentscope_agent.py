"""AgentScope 2.x agent whose old tool results tracetrim compacts, then recalls from the archive.

Run: ``python examples/agentscope_agent.py`` (needs ``pip install tracetrim[agentscope]``; no network,
no keys).
The chat model is scripted and so is the decision model, so the run is the same every time; run it
with ``--embedded`` to let tracetrim's embedded default judge decide instead.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from agentscope.agent import Agent
from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolCallBlock, UserMsg
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from pydantic import BaseModel

import tracetrim as tt
from tracetrim.archive import FileArchive, RecallTool
from tracetrim.harness_adapter.agentscope import TracetrimMiddleware


class ScriptedModel(ChatModelBase):
    """Answers from a fixed script, as a real model would through AgentScope's OpenAI formatter."""

    class Parameters(BaseModel):
        """No parameters."""

    def __init__(self, steps: list[list[Any]]) -> None:
        super().__init__(CredentialBase(), "scripted", self.Parameters(), stream=False, context_size=200_000)
        self.formatter = OpenAIChatFormatter()
        self.steps = steps
        self.last_request: list[dict[str, Any]] = []

    async def _call_api(
        self, model_name: str, messages: list[Msg], tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> ChatResponse:
        self.last_request = await self.formatter.format(messages)
        return ChatResponse(content=self.steps.pop(0), is_last=True)


async def read_log(service: str) -> str:
    """Read a service's log.

    Args:
        service: The service name.
    """
    return f"log of {service}\n{LOG}"


def call(id_: str, name: str, **args: str) -> ToolCallBlock:
    """A scripted tool call."""
    return ToolCallBlock(id=id_, name=name, input=json.dumps(args))


async def main() -> None:
    """Three turns: two log reads, a third read once compaction has run, then a recall."""
    with tempfile.TemporaryDirectory() as root:
        archive = FileArchive(root)
        decisions = decision_model()
        compactor = tt.Compactor(
            decisions,
            config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=1),
            execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
            archive=archive,
        )
        allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed")
        toolkit = Toolkit()
        await toolkit.add_tool(FunctionTool(read_log, permission=allow))
        model = ScriptedModel(
            [
                [call("c1", "read_log", service="api")],
                [TextBlock(text="api is healthy")],
                [call("c2", "read_log", service="cron")],
                [TextBlock(text="cron is healthy")],
                [call("c3", "recall_tool_result", call_id="c1")],
                [call("c4", "recall_tool_result", call_id="c9")],
                [TextBlock(text="recalled the api log")],
            ]
        )
        agent = Agent(
            name="ops",
            system_prompt="You watch services.",
            model=model,
            toolkit=toolkit,
            # By default planning waits until the context passes 60% of the model's window (120,000 of
            # 200,000 tokens here); this short demo plans on every step instead.
            middlewares=[TracetrimMiddleware(compactor, trigger_tokens=None)],
        )
        recall = RecallTool(archive, tt.Scope("agentscope", agent.name, agent.state.session_id))
        await toolkit.add_tool(FunctionTool(recall.function, permission=allow))

        for text in ("check the api log", "check the cron log", "what did the api log say exactly?"):
            await agent.reply(UserMsg(name="user", content=text))

        sent = {m["tool_call_id"]: str(m["content"]) for m in model.last_request if m["role"] == "tool"}
        print(f"the model last saw {len(sent)} tool results: {sorted(sent)}")
        archived = agent.state.middle_context.get("TracetrimMiddleware", {}).get("archives", [])
        print(f"archived snapshots: {[entry['archive_ref'][:12] for entry in archived]}")
        report(sent)


if __name__ == "__main__":
    asyncio.run(main())
