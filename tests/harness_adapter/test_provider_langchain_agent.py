"""The real LangChain path: ``create_agent`` with `TracetrimAgentMiddleware` (LangGraph's ``add_messages``
applies its replacements), a scripted chat model answering in ChatAnthropic's shape, and every request
the model then received formatted by langchain-anthropic, langchain-openai and langchain-google-genai
and checked by the providers' rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tracetrim as tt
from tests import _provider_rules as rules
from tests.harness_adapter.test_adapter_langchain import ScriptedChatModel, read_file, search_logs
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter.langchain import TracetrimAgentMiddleware


def _anthropic_turn(*calls: tuple[str, str, dict[str, str]]) -> Any:
    """An ``AIMessage`` as ChatAnthropic returns it: text and ``tool_use`` blocks, and ``tool_calls``."""
    from langchain_core.messages import AIMessage

    content: list[dict[str, Any]] = [{"type": "text", "text": "Let me look."}]
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    tool_calls = [{"id": i, "name": n, "args": a, "type": "tool_call"} for i, n, a in calls]
    return AIMessage(content=content, tool_calls=tool_calls)


def _script() -> Iterator[Any]:
    from langchain_core.messages import AIMessage

    return iter(
        [
            _anthropic_turn(
                ("toolu_1", "read_file", {"path": "a.txt"}), ("toolu_2", "search_logs", {"query": "boot"})
            ),
            _anthropic_turn(("toolu_3", "read_file", {"path": "b.txt"})),
            AIMessage(content="a.txt and b.txt are fine"),
            _anthropic_turn(("toolu_4", "read_file", {"path": "c.txt"})),
            AIMessage(content="done"),
            AIMessage(content="still done"),
        ]
    )


@pytest.mark.parametrize("tombstones", [False, True])
def test_requests_after_a_drop_are_valid_for_anthropic_openai_and_gemini(tombstones: bool) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    decisions = ScriptedDecisionModel.by_call_id(
        {"toolu_1": (0.9, 0.9), "toolu_2": (0.1, 0.1), "toolu_3": (0.1, 0.1)}, default=(0.9, 0.9)
    )
    archive = KeyValueArchive(MemoryStore())
    records: list[tt.Record] = []
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "search_logs"},
            preserve_recent_messages=2,
            minimum_reduction=0.0,
            tombstones=tombstones,
        ),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE, observer=records.append),
        archive=archive,
    )
    model = ScriptedChatModel(messages=_script(), requests=[])
    agent = create_agent(
        model,
        tools=[read_file, search_logs],
        middleware=[TracetrimAgentMiddleware(compactor, model=model)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("check a.txt, b.txt and the boot logs")]}, config)
    agent.invoke({"messages": [HumanMessage("now c.txt")]}, config)
    assert any(r.status == "DECIDED" for r in records), [r.reason for r in records]
    dropped = False
    for request in model.requests:
        rules.check_langchain_for_anthropic(request)
        rules.check_langchain_for_openai(request)
        rules.check_langchain_for_gemini(request)
        ids = {c["id"] for m in request for c in getattr(m, "tool_calls", [])}
        dropped = dropped or ("toolu_1" in ids and "toolu_2" not in ids)
    assert dropped, "no request was sent after toolu_2 was dropped"
