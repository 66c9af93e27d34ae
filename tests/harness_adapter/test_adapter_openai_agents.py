"""The openai-agents adapters against a real ``Runner`` loop with the SDK's own ``ScriptedModel``."""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import json
from typing import Any

import pytest

import tracetrim as tt
from tests.conftest import require_module
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool, rehydrate
from tracetrim.decision import ScriptedDecisionModel

require_module("agents", "pip install tracetrim[openai-agents]")

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from tracetrim.formats import from_openai_responses
from tracetrim.harness_adapter import restore_markers
from tracetrim.harness_adapter._window import Budget
from tracetrim.harness_adapter.openai_agents import (
    CompactingSession,
    TracetrimInputFilter,
    model_context_window,
)

BIG = 3000


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"<{path}>\n" + "r" * BIG


@function_tool
def search_logs(query: str) -> str:
    """Search the logs."""
    return f"logs for {query}\n" + "l" * BIG


def _step(item: Any, n: int) -> ModelStep:
    return ModelStep(output=[item], response_id=f"resp-{n}")


Setup = tuple[tt.Compactor, ScriptedDecisionModel, KeyValueArchive | None]


def _compactor(mode: tt.Mode, records: list[tt.Record], recent: int) -> Setup:
    decisions = ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))
    archive = KeyValueArchive(MemoryStore()) if mode is tt.Mode.ENFORCE else None
    compactor = tt.Compactor(
        decisions,
        config=tt.CompactorConfig(
            eligible_tools={"read_file", "search_logs"}, preserve_recent_messages=recent
        ),
        execution=tt.ExecutionOptions(mode=mode, observer=records.append),
        archive=archive,
    )
    return compactor, decisions, archive


def _outputs(items: Any) -> dict[str, str]:
    return {i["call_id"]: str(i["output"]) for i in items if i.get("type") == "function_call_output"}


def _calls(items: Any) -> list[str]:
    return [i["call_id"] for i in items if i.get("type") == "function_call"]


def _assert_paired(items: Any) -> None:
    assert sorted(_calls(items)) == sorted(_outputs(items))


async def _filter_run(
    mode: tt.Mode,
    records: list[tt.Record],
    *,
    model_name: str | None = None,
    filters: list[TracetrimInputFilter] | None = None,
    **settings: Any,
) -> tuple[ScriptedModel, ScriptedDecisionModel, KeyValueArchive | None, Any]:
    """A run whose scripted model holds ``model_name`` in ``.model`` as the SDK's own models do (None:
    no name); the filter is appended to ``filters`` when given."""
    compactor, decisions, archive = _compactor(mode, records, recent=2)
    model = ScriptedModel(
        [
            _step(function_call("read_file", {"path": "a.txt"}, call_id="c1"), 1),
            _step(function_call("search_logs", {"query": "boot"}, call_id="c2"), 2),
            _step(function_call("read_file", {"path": "b.txt"}, call_id="c3"), 3),
            _step(assistant_message("done", item_id="m1"), 4),
        ]
    )
    if model_name is not None:
        model.model = model_name  # type: ignore[attr-defined]
    agent = Agent(name="bot", instructions="You read files.", model=model, tools=[read_file, search_logs])
    model_filter = TracetrimInputFilter(compactor, **settings)
    if filters is not None:
        filters.append(model_filter)
    config = RunConfig(call_model_input_filter=model_filter, tracing_disabled=True)
    result = await Runner.run(agent, "check a.txt, the boot logs, then b.txt", run_config=config)
    return model, decisions, archive, result


async def test_input_filter_enforce() -> None:
    records: list[tt.Record] = []
    model, _, archive, result = await _filter_run(tt.Mode.ENFORCE, records)
    assert archive is not None
    for call in model.calls:
        _assert_paired(call.input)
    sent = model.calls[-1].input
    outputs = _outputs(sent)
    assert "c2" not in outputs and "c2" not in _calls(sent)
    assert len(outputs["c1"]) < 1000 and "[tracetrim:" in outputs["c1"]
    assert len(outputs["c3"]) > BIG
    # The run's own items are not touched by a filter.
    assert "c2" in _outputs(result.to_input_list())

    scope = tt.Scope("openai-agents", "bot", "default")
    entries = await archive.list(scope)
    assert entries
    assert await RecallTool(archive, scope)("c1") == f"<a.txt>\n{'r' * BIG}"
    assert any(r.reason == "ARCHIVED_PROPOSAL" for r in records)


@pytest.mark.parametrize("mode", [tt.Mode.SHADOW, tt.Mode.OFF])
async def test_input_filter_shadow_and_off_change_nothing(mode: tt.Mode) -> None:
    records: list[tt.Record] = []
    model, decisions, _, _ = await _filter_run(mode, records)
    sent = model.calls[-1].input
    assert set(_outputs(sent)) == {"c1", "c2", "c3"}
    assert "[tracetrim:" not in json.dumps(sent)
    if mode is tt.Mode.SHADOW:
        assert decisions.calls and any(r.reason == "SHADOW_PROPOSAL" for r in records)
    else:
        assert not decisions.calls and all(r.reason == "DISABLED" for r in records)


async def _session_runs(
    mode: tt.Mode, records: list[tt.Record], **settings: Any
) -> tuple[ScriptedModel, CompactingSession, ScriptedDecisionModel, KeyValueArchive | None]:
    compactor, decisions, archive = _compactor(mode, records, recent=2)
    model = ScriptedModel(
        [
            _step(function_call("read_file", {"path": "a.txt"}, call_id="c1"), 1),
            _step(function_call("search_logs", {"query": "boot"}, call_id="c2"), 2),
            _step(assistant_message("a.txt is fine", item_id="m1"), 3),
            _step(function_call("read_file", {"path": "b.txt"}, call_id="c3"), 4),
            _step(assistant_message("done", item_id="m2"), 5),
        ]
    )
    agent = Agent(name="bot", instructions="You read files.", model=model, tools=[read_file, search_logs])
    session = CompactingSession(SQLiteSession("s1"), compactor, **settings)
    config = RunConfig(tracing_disabled=True)
    await Runner.run(agent, "check a.txt and the boot logs", session=session, run_config=config)
    await Runner.run(agent, "now read b.txt", session=session, run_config=config)
    return model, session, decisions, archive


async def test_session_compacts_between_runs() -> None:
    records: list[tt.Record] = []
    model, session, _, archive = await _session_runs(tt.Mode.ENFORCE, records)
    assert archive is not None
    second_run_first_call = model.calls[3].input
    _assert_paired(second_run_first_call)
    assert "[tracetrim:" in _outputs(second_run_first_call)["c1"]  # compacted after the first run

    stored = await session.get_items()
    _assert_paired(stored)
    assert "c2" not in _outputs(stored) and "c2" not in _calls(stored)
    assert len(_outputs(stored)["c1"]) < 1000
    assert len(_outputs(stored)["c3"]) > BIG
    assert [i.get("id") for i in stored if i.get("id")] == ["c1", "m1", "c3", "m2"]  # c2 pair gone, ids kept

    scope = tt.Scope("openai-agents", "session", "s1")
    entries = await archive.list(scope)
    assert len(entries) >= 2
    full = f"<a.txt>\n{'r' * BIG}"
    assert await RecallTool(archive, scope)("c1") == full
    original = await archive.restore(scope, entries[0].ref)
    restored = rehydrate(restore_markers(from_openai_responses(stored)), original, ["c1"])
    block = next(b for m in restored for b in m["content"] if b["type"] == "tool_result" and b["id"] == "c1")
    assert block["output"] == full


@pytest.mark.parametrize("mode", [tt.Mode.SHADOW, tt.Mode.OFF])
async def test_session_shadow_and_off_keep_history(mode: tt.Mode) -> None:
    records: list[tt.Record] = []
    _, session, decisions, _ = await _session_runs(mode, records)
    stored = await session.get_items()
    assert set(_outputs(stored)) == {"c1", "c2", "c3"}
    assert "[tracetrim:" not in json.dumps(stored)
    assert bool(decisions.calls) is (mode is tt.Mode.SHADOW)
    assert records and all(r.mode == mode.value for r in records)


# --- the budget from the model's context window ------------------------------------------------------


def test_model_context_window_reads_the_sdk_table() -> None:
    assert model_context_window("gpt-4o") == 128_000
    assert model_context_window("openai/gpt-4.1") == 1_047_576
    model = ScriptedModel([])
    assert model_context_window(model) is None
    model.model = "o3"  # type: ignore[attr-defined]
    assert model_context_window(model) == 200_000
    assert model_context_window("a-local-model") is None
    assert model_context_window(None) is None


async def test_filter_budget_defaults_come_from_the_agent_model() -> None:
    """An OpenAI model the SDK knows: 60% of its window triggers, 40% is the target."""
    records: list[tt.Record] = []
    filters: list[TracetrimInputFilter] = []
    model, decisions, _, _ = await _filter_run(tt.Mode.ENFORCE, records, model_name="gpt-4o", filters=filters)
    assert filters[0].budget == Budget(76_800, 51_200, 128_000)
    assert not decisions.calls and not records
    assert set(_outputs(model.calls[-1].input)) == {"c1", "c2", "c3"}


async def test_filter_budget_with_a_small_window_plans_to_the_target() -> None:
    records: list[tt.Record] = []
    filters: list[TracetrimInputFilter] = []
    model, decisions, _, _ = await _filter_run(
        tt.Mode.SHADOW, records, model_name="gpt-4o", filters=filters, context_window=3_000
    )
    assert filters[0].budget == Budget(1_800, 1_200, 3_000)
    assert decisions.calls and 0 < len(records) < len(model.calls)
    assert {r.target_tokens for r in records} == {1_200}
    assert not filters[0].strategy.config.budgeted  # type: ignore[attr-defined]


async def test_filter_explicit_budget_and_unknown_window() -> None:
    records: list[tt.Record] = []
    filters: list[TracetrimInputFilter] = []
    await _filter_run(
        tt.Mode.SHADOW, records, model_name="gpt-4o", filters=filters, trigger_tokens=900, target_tokens=500
    )
    assert filters[0].budget == Budget(900, 500, 128_000)
    assert records and {r.target_tokens for r in records} == {500}
    records.clear()
    _, decisions, _, _ = await _filter_run(tt.Mode.SHADOW, records, filters=filters)
    assert filters[1].budget == Budget()
    assert decisions.calls and records and {r.target_tokens for r in records} == {0}


async def test_session_budget_from_the_named_model() -> None:
    records: list[tt.Record] = []
    _, session, decisions, _ = await _session_runs(tt.Mode.SHADOW, records, model="gpt-4.1")
    assert session.budget == Budget(628_545, 419_030, 1_047_576)
    assert not decisions.calls and not records
    records.clear()
    _, session, decisions, _ = await _session_runs(tt.Mode.SHADOW, records, model="a-local-model")
    assert session.budget == Budget()
    assert decisions.calls and records
    with pytest.raises(TypeError, match="model must be a model name"):
        CompactingSession(SQLiteSession("s2"), _compactor(tt.Mode.SHADOW, [], 2)[0], model=ScriptedModel([]))  # type: ignore[arg-type]


# --- server-managed conversation state ---------------------------------------------------------------


def _call(call_id: str, name: str, args: dict[str, str]) -> dict[str, Any]:
    arguments = json.dumps(args)
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


LOCAL_HISTORY: list[Any] = [
    {"role": "user", "content": "check a.txt and the boot logs"},
    _call("c1", "read_file", {"path": "a.txt"}),
    {"type": "function_call_output", "call_id": "c1", "output": f"<a.txt>\n{'r' * BIG}"},
    _call("c2", "search_logs", {"query": "boot"}),
    {"type": "function_call_output", "call_id": "c2", "output": f"logs for boot\n{'l' * BIG}"},
    {"type": "message", "id": "m0", "role": "assistant",
     "content": [{"type": "output_text", "text": "fine", "annotations": []}]},
    {"role": "user", "content": "now read b.txt and c.txt"},
]  # fmt: skip


def _server_steps() -> list[Any]:
    return [
        function_call("read_file", {"path": "b.txt"}, call_id="c3"),
        function_call("read_file", {"path": "c.txt"}, call_id="c4"),
        assistant_message("done", item_id="m1"),
    ]


def _server_view(model: ScriptedModel, outputs: list[Any]) -> list[Any]:
    """What the server holds after the run: each request's input, then the response's output item."""
    held: list[Any] = []
    for call, output in zip(model.calls, outputs, strict=True):
        held.extend(call.input)
        held.append(output.model_dump(exclude_unset=True))
    return held


@pytest.mark.parametrize(
    "state",
    [{"previous_response_id": "resp-0"}, {"auto_previous_response_id": True}, {"conversation_id": "conv-1"}],
    ids=["previous_response_id", "auto_previous_response_id", "conversation_id"],
)
async def test_input_filter_with_server_managed_state(state: dict[str, Any]) -> None:
    """The SDK sends only what the server lacks and offers again any item it handed the filter that was
    not sent as that very object; what the filter shortened or dropped must stay out of later requests,
    or the server would hold a result twice (the API rejects that) and get the dropped pair back."""
    records: list[tt.Record] = []
    compactor, _, archive = _compactor(tt.Mode.ENFORCE, records, recent=2)
    steps = _server_steps()
    model = ScriptedModel([_step(item, n) for n, item in enumerate(steps, start=1)])
    agent = Agent(name="bot", instructions="You read files.", model=model, tools=[read_file, search_logs])
    input_filter = TracetrimInputFilter(compactor)
    config = RunConfig(call_model_input_filter=input_filter, tracing_disabled=True)
    history = json.loads(json.dumps(LOCAL_HISTORY))
    result = await Runner.run(agent, history, run_config=config, **state)
    assert result.final_output == "done"
    assert history == LOCAL_HISTORY  # the caller's input is not mutated

    # The first request carries the local history, compacted; later ones only the new tool outputs.
    first = model.calls[0].input
    _assert_paired(first)
    assert "c2" not in _outputs(first) and "c2" not in _calls(first)
    assert len(_outputs(first)["c1"]) < 1000 and "[tracetrim:" in _outputs(first)["c1"]
    assert [list(_outputs(call.input)) for call in model.calls[1:]] == [["c3"], ["c4"]]
    assert [_calls(call.input) for call in model.calls[1:]] == [[], []]
    if "conversation_id" in state:
        assert {call.conversation_id for call in model.calls} == {"conv-1"}
    else:
        assert [call.previous_response_id for call in model.calls[1:]] == ["resp-1", "resp-2"]

    # The server's copy: every output once, after its call; the shortened c1 and no c2 at all.
    held = _server_view(model, steps)
    outputs = [i["call_id"] for i in held if i.get("type") == "function_call_output"]
    assert sorted(outputs) == sorted(set(outputs)) == ["c1", "c3", "c4"]
    assert _calls(held) == ["c1", "c3", "c4"]
    assert len(_outputs(held)["c1"]) < 1000

    # The run's own items keep the full history; the archive holds what the server never saw.
    assert "c2" in _outputs(result.to_input_list())
    assert archive is not None
    scope = tt.Scope("openai-agents", "bot", "default")
    assert await RecallTool(archive, scope)("c1") == f"<a.txt>\n{'r' * BIG}"
    assert [r.reason for r in records] == ["ARCHIVED_PROPOSAL"]  # the deltas are not planned


async def test_one_compaction_encodes_the_history_once_plus_its_ids() -> None:
    from agents.run_config import CallModelData, ModelInputData

    from tests._encode_counter import OWNED_HISTORIES, counting_encodes, enforcing_compactor
    from tests._histories import tool_history
    from tracetrim.formats import to_openai_responses

    items = to_openai_responses(tool_history(8, size=12_000, tail=5))
    flt = TracetrimInputFilter(enforcing_compactor(), scope=tt.Scope("u", "a", "s"))
    model_input = ModelInputData(input=items, instructions=None)
    data = CallModelData(model_data=model_input, agent=Agent(name="a"), context=None)
    with counting_encodes(from_openai_responses(items), items) as count:
        sent = await flt(data)
    assert len(sent.input) < len(items)
    assert flt.last_result is not None and flt.last_result.archive_ref
    # Encoded once (its own conversion), plus one pass over Responses items without an id (messages,
    # tool outputs: each neutral id is a digest of the item's content). The items not sent are
    # remembered by their call ids (server-managed state may offer them again), which costs no pass.
    assert count.histories <= OWNED_HISTORIES + 1.0
