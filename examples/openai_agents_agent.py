"""openai-agents agent whose stored session tracetrim compacts between runs, then recalls from the archive.

Run: ``python examples/openai_agents_agent.py`` (needs ``pip install tracetrim[openai-agents]``; no network,
no keys). The model is the SDK's own ``ScriptedModel``; the decision model is scripted too, so the run
is the same every time; run it with ``--embedded`` to let tracetrim's embedded default judge decide
instead. For compacting only what
each model call receives, pass ``RunConfig(call_model_input_filter=TracetrimInputFilter(compactor))``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

import tracetrim as tt
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool
from tracetrim.harness_adapter.openai_agents import CompactingSession


@function_tool
def read_log(service: str) -> str:
    """Read a service's log."""
    return f"log of {service}\n{LOG}"


def outputs(items: Any) -> dict[str, str]:
    """Tool outputs by call id."""
    return {str(i["call_id"]): str(i["output"]) for i in items if i.get("type") == "function_call_output"}


async def main() -> None:
    """Run 1 reads two logs; the session is compacted; run 2 recalls the first log in full."""
    archive = KeyValueArchive(MemoryStore())
    decisions = decision_model()
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=1),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    session = CompactingSession(SQLiteSession("ops-1"), compactor)
    recall = RecallTool(archive, session.scope)
    model = ScriptedModel(
        [
            ModelStep(output=[function_call("read_log", {"service": "api"}, call_id="c1")], response_id="r1"),
            ModelStep(
                output=[function_call("read_log", {"service": "cron"}, call_id="c2")], response_id="r2"
            ),
            ModelStep(output=[assistant_message("both healthy", item_id="m1")], response_id="r3"),
            ModelStep(
                output=[function_call("recall_tool_result", {"call_id": "c1"}, call_id="c3")],
                response_id="r4",
            ),
            ModelStep(
                output=[function_call("recall_tool_result", {"call_id": "c9"}, call_id="c4")],
                response_id="r5",
            ),
            ModelStep(output=[assistant_message("recalled the api log", item_id="m2")], response_id="r6"),
        ]
    )
    agent = Agent(
        name="watcher",
        instructions="You watch services.",
        model=model,
        tools=[read_log, function_tool(recall.function)],
    )
    config = RunConfig(tracing_disabled=True)
    await Runner.run(agent, "check the api and cron logs", session=session, run_config=config)
    stored = outputs(await session.get_items())
    print(f"after run 1 the session holds results {sorted(stored)}")
    await Runner.run(agent, "what did the api log say exactly?", session=session, run_config=config)

    sent = outputs(model.calls[-1].input)
    print(f"the model last saw tool results {sorted(sent)}")
    entries = await archive.list(session.scope)
    print(f"archived snapshots: {[entry.ref[:12] for entry in entries]}")
    if entries:
        original = await archive.restore(session.scope, entries[0].ref)
        print(f"the first snapshot holds {len(original)} messages, the full c1 among them")
    report(sent)


if __name__ == "__main__":
    asyncio.run(main())
