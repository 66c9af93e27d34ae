"""Microsoft Agent Framework agent whose old tool results tracetrim compacts (``compaction_strategy``), then
recalls.

Run: ``python examples/agent_framework_agent.py`` (needs ``pip install tracetrim[agent-framework]``; no
network, no keys). The chat client answers from a fixed script through Agent Framework's own tool loop;
the decision model is scripted too, so the run is the same every time; run it with ``--embedded`` to let
tracetrim's embedded default judge decide instead.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from agent_framework import Agent, BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message

import tracetrim as tt
from tracetrim.archive import FileArchive, RecallTool
from tracetrim.harness_adapter.agent_framework import TracetrimCompactionStrategy

CALLS = [
    ("c1", "read_log", {"service": "api"}),
    ("c2", "read_log", {"service": "cron"}),
    ("c3", "recall_tool_result", {"call_id": "c1"}),
    ("c4", "recall_tool_result", {"call_id": "c9"}),
]
seen: list[list[Message]] = []


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers each model call with the next scripted call, then with text; keeps what it was sent."""

    async def _answer(self, messages: Sequence[Message]) -> ChatResponse[Any]:
        seen.append(list(messages))
        if len(seen) > len(CALLS):
            return ChatResponse(messages=[Message("assistant", ["recalled the api log"])])
        call_id, name, arguments = CALLS[len(seen) - 1]
        call = Content.from_function_call(call_id=call_id, name=name, arguments=arguments)
        return ChatResponse(messages=[Message("assistant", [call])])

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kw: Any
    ) -> Any:
        return self._answer(messages)


def read_log(service: str) -> str:
    """Read a service's log."""
    return f"log of {service}\n{LOG}"


async def main() -> None:
    """Two log reads, then a recall of the first once compaction has shortened it."""
    with tempfile.TemporaryDirectory() as root:
        archive = FileArchive(root)
        scope = tt.Scope("ops", "watcher", "session-1")
        compactor = tt.Compactor(
            decision_model(),
            config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=2),
            execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
            archive=archive,
        )
        client = ScriptedClient(compaction_strategy=TracetrimCompactionStrategy(compactor, scope=scope))
        agent = Agent(client=client, name="watcher", tools=[read_log, RecallTool(archive, scope).function])
        result = await agent.run("check the api and cron logs, then tell me exactly what the api log said")

        sent = {
            str(c.call_id): str(c.result) for m in seen[-1] for c in m.contents if c.type == "function_result"
        }
        print(f"the model last saw tool results {sorted(sent)}; answer: {result.text!r}")
        entries = await archive.list(scope)
        print(f"archived snapshots: {[entry.ref[:12] for entry in entries]}")
        report(sent)


if __name__ == "__main__":
    asyncio.run(main())
