"""Inspect AI ``react`` agent whose conversation tracetrim compacts (a compaction strategy), then recalls.

Run: ``python examples/inspect_agent.py`` (needs ``pip install tracetrim[inspect]``; no network, no keys).
The model is Inspect's scripted ``mockllm``, counting tokens as characters / 4 (Inspect's own counter
fetches tiktoken's tables); the decision model is scripted too, so the run is the same every time; run it
with ``--embedded`` to let tracetrim's embedded default judge decide instead.
"""

from __future__ import annotations

import tempfile
from typing import Any

from _agent_demo import LOG, decision_model, report  # examples/_agent_demo.py, shared by the seven
from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ModelAPI, ModelOutput, get_model, modelapi
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.tool import ToolDef, tool

import tracetrim as tt
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool
from tracetrim.harness_adapter.inspect_ai import TracetrimCompaction

SCRIPT = [
    ("c1", "read_log", {"service": "api"}),
    ("c2", "read_log", {"service": "cron"}),
    ("c3", "recall_tool_result", {"call_id": "c1"}),
    ("c4", "recall_tool_result", {"call_id": "c9"}),
    ("c5", "submit", {"answer": "recalled the api log"}),
]
SENT: list[list[ChatMessage]] = []


class OfflineMock(MockLLM):
    """``mockllm`` counting tokens as characters / 4, so nothing is downloaded."""

    async def count_text_tokens(self, text: str) -> int:
        """About four characters a token."""
        return len(text) // 4 + 1


@modelapi(name="offline-mock")
def offline_mock() -> type[ModelAPI]:
    """Register `OfflineMock` as ``offline-mock/<name>``."""
    return OfflineMock


def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
    """The next scripted call; keeps what the model was sent."""
    SENT.append(list(messages))
    call_id, name, arguments = SCRIPT[len(SENT) - 1]
    return ModelOutput.for_tool_call("offline-mock/model", name, arguments, tool_call_id=call_id)


@tool
def read_log() -> Any:
    """A tool reading a service's log."""

    async def execute(service: str) -> str:
        """Read a service's log.

        Args:
            service: The service whose log to read.
        """
        return f"log of {service}\n{LOG}"

    return execute


def results(messages: list[ChatMessage]) -> dict[str, str]:
    """Each tool message's text by the call it answers."""
    return {m.tool_call_id: m.text for m in messages if m.role == "tool" and m.tool_call_id}


def main() -> None:
    """Two log reads, then a recall of the first once compaction has shortened it."""
    archive = KeyValueArchive(MemoryStore())
    scope = tt.Scope("ops", "watcher", "session-1")
    compactor = tt.Compactor(
        decision_model(),
        config=tt.CompactorConfig(eligible_tools={"read_log"}, preserve_recent_messages=2),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=archive,
    )
    recall = ToolDef(RecallTool(archive, scope).function).as_tool()
    task = Task(
        dataset=[Sample(input="check the api and cron logs, then tell me exactly what the api log said")],
        solver=react(
            tools=[read_log(), recall],
            compaction=TracetrimCompaction(compactor, threshold=1300, scope=scope),
        ),
    )
    model = get_model("offline-mock/model", custom_outputs=reply)
    with tempfile.TemporaryDirectory() as logs:
        [log] = eval(task, model=model, log_dir=logs, display="none")
    sent = results(SENT[-1])
    print(f"the run: {log.status}; the model last saw tool results {sorted(sent)}")
    if log.error is not None:
        raise SystemExit(f"the run failed: {log.error.message}")
    report(sent)


if __name__ == "__main__":
    main()
