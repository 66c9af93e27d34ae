"""AgentScope 2.x agent whose old tool results tracetrim compacts, then recalls from the archive.

Run: ``python examples/agentscope_agent.py`` (needs ``pip install tracetrim[agentscope]``; no network,
no keys).
The chat model is scripted and so is the decision model, so the run is the same every time; drop
``decisions`` to use the embedded default (`LexicalDecisionModel`).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from typing import Any

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
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter.agentscope import TracetrimMiddleware

LOG = "\n".join(f"12:00:{i:02d} worker-{i % 4} heartbeat ok" for i in range(60))


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
        # Scripted decisions: c1's call still matters but its body need not stay (shorten it); c2 is noise.
        decisions = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))
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
                [TextBlock(text="recalled the api log")],
            ]
        )
        agent = Agent(
            name="ops",
            system_prompt="You watch services.",
            model=model,
            toolkit=toolkit,
            middlewares=[TracetrimMiddleware(compactor)],
        )
        recall = RecallTool(archive, tt.Scope("agentscope", agent.name, agent.state.session_id))
        await toolkit.add_tool(FunctionTool(recall.function, permission=allow))

        for text in ("check the api log", "check the cron log", "what did the api log say exactly?"):
            await agent.reply(UserMsg(name="user", content=text))

        sent = {m["tool_call_id"]: str(m["content"]) for m in model.last_request if m["role"] == "tool"}
        print(f"the model last saw {len(sent)} tool results: {sorted(sent)}")
        shortened = "[tracetrim:" in sent["c1"]
        print(f"c1 as the model saw it: {len(sent['c1'])} characters, shortened={shortened}")
        print(f"c2 dropped: {'c2' not in sent}")
        archived = agent.state.middle_context["TracetrimMiddleware"]["archives"]
        print(f"archived snapshots: {[entry['archive_ref'][:12] for entry in archived]}")
        restored = sent["c3"]
        ok = "c2" not in sent and "[tracetrim:" in sent["c1"] and LOG in restored
        print(f"recall tool returned the full api log: {LOG in restored}")
        print("restored c1: OK" if ok else "restored c1: FAILED")
        if not ok:
            raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
