"""Google ADK agent whose model requests tracetrim compacts (a plugin), then recalls from the archive.

Run: ``python examples/adk_agent.py`` (needs ``pip install tracetrim[adk]``; no network, no keys). The
model is a scripted ``BaseLlm``; the decision model is scripted too, so the run is the same every time;
run it with ``--embedded`` to let tracetrim's embedded default judge decide instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

import tracetrim as tt
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool
from tracetrim.harness_adapter.adk import TracetrimPlugin


def _call(call_id: str, name: str, args: dict[str, Any]) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))]
    )


SCRIPT = [
    _call("c1", "read_log", {"service": "api"}),
    _call("c2", "read_log", {"service": "cron"}),
    _call("c3", "recall_tool_result", {"call_id": "c1"}),
    _call("c4", "recall_tool_result", {"call_id": "c9"}),
    types.Content(role="model", parts=[types.Part(text="recalled the api log")]),
]


class ScriptedModel(BaseLlm):
    """Answers each request with the next scripted turn; keeps the contents it was sent."""

    model: str = "scripted"
    sent: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The next scripted turn."""
        self.sent.append(list(llm_request.contents))
        yield LlmResponse(content=SCRIPT[len(self.sent) - 1])


def read_log(service: str) -> str:
    """Read a service's log."""
    return f"log of {service}\n{LOG}"


def responses(contents: list[types.Content]) -> dict[str, str]:
    """Each function response's text by call id (ADK sends a tool's text as ``{"result": text}``)."""
    out: dict[str, str] = {}
    for content in contents:
        for part in content.parts or []:
            response = part.function_response
            if response is not None and response.id is not None:
                out[response.id] = "\n".join(str(v) for v in (response.response or {}).values())
    return out


async def main() -> None:
    """Two log reads, then a recall of the first once compaction has shortened it."""
    archive = KeyValueArchive(MemoryStore())
    scope = tt.Scope("ops", "watcher", "session-1")
    compactor = tt.Compactor(
        decision_model(),
        config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=2),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    model = ScriptedModel()
    recall = RecallTool(archive, scope)
    agent = LlmAgent(name="watcher", model=model, tools=[read_log, recall.function])
    runner = InMemoryRunner(agent=agent, app_name="ops", plugins=[TracetrimPlugin(compactor, scope=scope)])
    session = await runner.session_service.create_session(app_name="ops", user_id="ops")
    ask = "check the api and cron logs, then tell me exactly what the api log said"
    message = types.Content(role="user", parts=[types.Part(text=ask)])
    answer = ""
    async for event in runner.run_async(user_id="ops", session_id=session.id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            answer = event.content.parts[0].text
    sent = responses(model.sent[-1])
    print(f"the model last saw tool results {sorted(sent)}; answer: {answer!r}")
    entries = await archive.list(scope)
    print(f"archived snapshots: {[entry.ref[:12] for entry in entries]}")
    report(sent)


if __name__ == "__main__":
    asyncio.run(main())
