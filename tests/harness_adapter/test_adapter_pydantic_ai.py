"""The pydantic-ai adapter against a real ``Agent`` run with pydantic-ai's own ``FunctionModel``."""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import json
from typing import Any

import pytest

import tracetrim as tt
from tests.conftest import require_module
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

require_module("pydantic_ai", "pip install tracetrim[pydantic-ai]")

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tracetrim.formats import from_pydantic_ai
from tracetrim.harness_adapter import restore_markers
from tracetrim.harness_adapter._window import Budget
from tracetrim.harness_adapter.pydantic_ai import TracetrimHistoryProcessor, tracetrim_capability

BIG = 3000
SCRIPT = [
    ToolCallPart("read_file", {"path": "a.txt"}, tool_call_id="c1"),
    ToolCallPart("search_logs", {"query": "boot"}, tool_call_id="c2"),
    ToolCallPart("read_file", {"path": "b.txt"}, tool_call_id="c3"),
    TextPart("done"),
]


class Scripted:
    """A FunctionModel function replying from SCRIPT and recording every history it receives."""

    def __init__(self) -> None:
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        return ModelResponse(parts=[SCRIPT[len(self.requests) - 1]])


Setup = tuple[Agent[None, str], Scripted, ScriptedDecisionModel, KeyValueArchive | None]


def _agent(
    mode: tt.Mode,
    records: list[tt.Record],
    *,
    window: int | None = None,
    config: dict[str, Any] | None = None,
    processors: list[TracetrimHistoryProcessor] | None = None,
    **settings: Any,
) -> Setup:
    """An agent whose model's profile has ``window`` as ``context_window`` (None: unknown); the
    processor is appended to ``processors`` when given."""
    decisions = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))
    archive = KeyValueArchive(MemoryStore()) if mode is tt.Mode.ENFORCE else None
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "search_logs"}, preserve_recent_messages=2, **(config or {})
        ),
        execution=tt.ExecutionOptions(mode=mode, observer=records.append),
        archive=archive,
    )
    scripted = Scripted()
    capability = tracetrim_capability(compactor, scope=tt.Scope("u", "bot", "s1"), **settings)
    assert isinstance(capability.processor, TracetrimHistoryProcessor)
    if processors is not None:
        processors.append(capability.processor)
    profile: Any = {"context_window": window} if window is not None else None
    agent: Agent[None, str] = Agent(
        FunctionModel(scripted, profile=profile), name="bot", capabilities=[capability]
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"<{path}>\n" + "r" * BIG

    @agent.tool_plain
    def search_logs(query: str) -> str:
        """Search the logs."""
        return f"logs for {query}\n" + "l" * BIG

    return agent, scripted, decisions, archive


def _returns(messages: list[ModelMessage]) -> dict[str, str]:
    return {
        p.tool_call_id: str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def _calls(messages: list[ModelMessage]) -> list[str]:
    return [
        p.tool_call_id
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


def _assert_paired(messages: list[ModelMessage]) -> None:
    assert sorted(_calls(messages)) == sorted(_returns(messages))
    assert isinstance(messages[-1], ModelRequest)


async def test_enforce_compacts_archives_and_restores() -> None:
    records: list[tt.Record] = []
    agent, scripted, _, archive = _agent(tt.Mode.ENFORCE, records)
    result = await agent.run("check a.txt, the boot logs, then b.txt")
    assert result.output == "done"
    assert archive is not None
    for request in scripted.requests:
        _assert_paired(request)
    sent = scripted.requests[-1]
    returns = _returns(sent)
    assert "c2" not in returns and "c2" not in _calls(sent)
    assert len(returns["c1"]) < 1000 and "[tracetrim:" in returns["c1"]
    assert len(returns["c3"]) > BIG
    # The run's own history was replaced (ProcessHistory), with the pairs intact.
    history = result.all_messages()
    assert "c2" not in _calls(history) and "c2" not in _returns(history)

    scope = tt.Scope("u", "bot", "s1")
    entries = await archive.list(scope)
    assert entries
    full = f"<a.txt>\n{'r' * BIG}"
    assert await RecallTool(archive, scope)("c1") == full
    original = await archive.restore(scope, entries[0].ref)
    # The marker rides in ToolReturnPart.metadata, so nothing has to be re-derived from the text.
    shortened = next(
        p
        for m in history
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_call_id == "c1"
    )
    assert shortened.metadata["tracetrim"]["archive_ref"] in {e.ref for e in entries}
    assert restore_markers(from_pydantic_ai(history)) == from_pydantic_ai(history)
    restored = rehydrate(from_pydantic_ai(history), original, ["c1"])
    block = next(b for m in restored for b in m["content"] if b["type"] == "tool_result" and b["id"] == "c1")
    assert block["output"] == full
    assert any(r.reason == "ARCHIVED_PROPOSAL" for r in records)


@pytest.mark.parametrize("mode", [tt.Mode.SHADOW, tt.Mode.OFF])
async def test_shadow_and_off_change_nothing(mode: tt.Mode) -> None:
    records: list[tt.Record] = []
    agent, scripted, decisions, _ = _agent(mode, records)
    result = await agent.run("check a.txt, the boot logs, then b.txt")
    assert set(_returns(scripted.requests[-1])) == {"c1", "c2", "c3"}
    assert "[tracetrim:" not in json.dumps([str(m) for m in result.all_messages()])
    assert bool(decisions.calls) is (mode is tt.Mode.SHADOW)
    expected = "SHADOW_PROPOSAL" if mode is tt.Mode.SHADOW else "DISABLED"
    assert any(r.reason == expected for r in records)


def test_message_ids_and_call_ids_survive(tmp_path: Any) -> None:
    records: list[tt.Record] = []
    agent, scripted, _, _ = _agent(tt.Mode.ENFORCE, records)
    result = agent.run_sync("check a.txt, the boot logs, then b.txt")
    assert _calls(result.all_messages()) == ["c1", "c3"]
    first = scripted.requests[0][0]
    assert result.all_messages()[0] is first or result.all_messages()[0] == first


def test_legacy_history_processors_argument_is_gone() -> None:
    """pydantic-ai 2 removed ``Agent(history_processors=...)`` (tracetrim needs pydantic-ai-slim >= 2), so
    the processor plugs in only as a capability (`tracetrim_capability`, i.e. ``ProcessHistory``). Should
    the argument come back, this fails: then test the processor through it as well."""
    compactor = tt.Compactor(ScriptedDecisionModel.by_call_id({}, default=(0.9, 0.9)))
    processor = TracetrimHistoryProcessor(compactor)
    with pytest.raises(TypeError, match="history_processors"):
        Agent(FunctionModel(Scripted()), history_processors=[processor])  # type: ignore[call-arg]


async def _budgeted_run(
    records: list[tt.Record], **options: Any
) -> tuple[TracetrimHistoryProcessor, Scripted, ScriptedDecisionModel]:
    processors: list[TracetrimHistoryProcessor] = []
    agent, scripted, decisions, _ = _agent(tt.Mode.SHADOW, records, processors=processors, **options)
    assert (await agent.run("check a.txt, the boot logs, then b.txt")).output == "done"
    return processors[0], scripted, decisions


async def test_budget_defaults_come_from_the_model_context_window() -> None:
    """``ctx.model.context_window`` (the model's profile): 60% of it triggers, 40% is the target."""
    records: list[tt.Record] = []
    processor, scripted, decisions = await _budgeted_run(records, window=3_000)
    assert processor.budget == Budget(1_800, 1_200, 3_000)
    # Small histories were not planned at all; larger ones with the budget on a copy of the config.
    assert decisions.calls and 0 < len(records) < len(scripted.requests)
    assert {r.target_tokens for r in records} == {1_200}
    assert not processor.strategy.config.budgeted  # type: ignore[attr-defined]


async def test_a_large_window_keeps_small_histories_unplanned() -> None:
    records: list[tt.Record] = []
    processor, scripted, decisions = await _budgeted_run(records, window=128_000)
    assert processor.budget == Budget(76_800, 51_200, 128_000)
    assert not decisions.calls and not records
    assert set(_returns(scripted.requests[-1])) == {"c1", "c2", "c3"}


async def test_explicit_budget_wins_over_the_window() -> None:
    records: list[tt.Record] = []
    processor, _, _ = await _budgeted_run(records, window=128_000, trigger_tokens=900, target_tokens=500)
    assert processor.budget == Budget(900, 500, 128_000)
    assert records and {r.target_tokens for r in records} == {500}
    processor, _, _ = await _budgeted_run([], window=128_000, context_window=3_000)
    assert processor.budget == Budget(1_800, 1_200, 3_000)
    # An explicit trigger alone: the target is the window's 40%, or two thirds of a lower trigger.
    processor, _, _ = await _budgeted_run([], window=3_000, trigger_tokens=1_500)
    assert processor.budget == Budget(1_500, 1_200, 3_000)
    processor, _, _ = await _budgeted_run([], window=3_000, trigger_tokens=1_000)
    assert processor.budget == Budget(1_000, 666, 3_000)


async def test_an_unknown_window_means_no_budget() -> None:
    records: list[tt.Record] = []
    processor, _, decisions = await _budgeted_run(records)
    assert processor.budget == Budget()
    assert decisions.calls and records and {r.target_tokens for r in records} == {0}


async def test_a_compactor_with_its_own_budget_keeps_it() -> None:
    records: list[tt.Record] = []
    processor, _, _ = await _budgeted_run(
        records, window=3_000, config={"trigger_tokens": 700, "target_tokens": 300}
    )
    assert processor.budget == Budget()
    assert records and {r.target_tokens for r in records} == {300}


def test_the_last_requests_pieces_are_found_without_converting_again() -> None:
    from pydantic_ai.messages import SystemPromptPart, UserPromptPart

    from tracetrim.formats._pydantic_ai import last_message_ids

    result = ToolReturnPart("read_file", "x", tool_call_id="c1")
    last = ModelRequest(parts=[result, SystemPromptPart("s"), UserPromptPart("u")])
    same = ModelRequest(parts=[UserPromptPart("u")])
    call = ModelResponse(parts=[ToolCallPart("read_file", {"path": "a"}, tool_call_id="c1")])
    for history in ([same, call, last], [same, call, same], [last], [same, same]):
        neutral = from_pydantic_ai(history)
        head = len(from_pydantic_ai(history[:-1]))
        assert last_message_ids(neutral) == [m["id"] for m in neutral[head:]]
        assert len(last_message_ids(neutral)) == (3 if history[-1] is last else 1)


async def test_one_compaction_encodes_the_history_once_plus_its_ids() -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from tests._encode_counter import OWNED_HISTORIES, counting_encodes, enforcing_compactor
    from tests._histories import tool_history
    from tracetrim.formats import to_pydantic_ai

    messages = to_pydantic_ai(tool_history(8, size=12_000, tail=5))
    processor = TracetrimHistoryProcessor(enforcing_compactor(), scope=tt.Scope("u", "a", "s"))
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    native = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    with counting_encodes(from_pydantic_ai(messages), native) as count:
        compacted = await processor(ctx, messages)
    assert len(compacted) < len(messages)
    assert processor.last_result is not None and processor.last_result.archive_ref
    # encoded once (its own conversion), plus one pass over pydantic-ai's messages, which carry no ids:
    # each neutral id is a digest of the message's content
    assert count.histories <= OWNED_HISTORIES + 1.0


async def test_requests_after_a_drop_map_to_gemini_contents_gemini_takes() -> None:
    """Each history the model received, mapped by pydantic-ai's own Google model (no request is sent),
    keeps Gemini's rules: a dropped call's turn is joined to the next model turn, never left beside it."""
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    from tests import _provider_rules as rules

    records: list[tt.Record] = []
    agent, scripted, _, _ = _agent(tt.Mode.ENFORCE, records)
    await agent.run("check a.txt, the boot logs, then b.txt")
    assert "c2" not in _calls(scripted.requests[-1])  # the drop happened
    gemini = GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key="not-used"))
    for request in scripted.requests:
        _, contents = await gemini._map_messages(request, ModelRequestParameters())
        body = {"contents": [dict(content) for content in contents]}
        rules.check_gemini(body, body)
