"""The Microsoft Agent Framework adapter against a real ``Agent`` run: Agent Framework's own tool loop,
tools, session and compaction hook, on a chat client that answers from a script (the only stand-in,
`tests._agent_framework_runs.ScriptedClient`). What each model call was sent is checked the way Agent
Framework's own OpenAI clients and the providers check it."""
# ruff: noqa: E402  (the framework imports follow the check that it is installed)

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import require_module

require_module("agent_framework", "pip install -e '.[test]'")
require_module("agent_framework_openai", "pip install -e '.[test]'")

from agent_framework import CharacterEstimatorTokenizer, Message, TokenBudgetComposedStrategy
from agent_framework._compaction import set_excluded

import tracetrim as tt
from tests._agent_framework_runs import (
    FILLER,
    ScriptedClient,
    chat_messages,
    responses_input,
    run_agent,
    script,
    stored_messages,
)
from tests._provider_rules import check_openai_chat, check_responses
from tracetrim.archive import KeyValueArchive, MemoryStore, RecallTool
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.harness_adapter import TracetrimCompactionStrategy as Lazy
from tracetrim.harness_adapter.agent_framework import TracetrimCompactionStrategy

SCOPE = tt.Scope("u", "coder", "s1")
DROP = (0.05, 0.05)
ANSWERS = {"call_1": DROP, "call_2": DROP, "call_5": DROP, "call_6": (0.9, 0.05)}


def _strategy(
    mode: tt.Mode = tt.Mode.ENFORCE, archive: KeyValueArchive | None = None, **options: Any
) -> TracetrimCompactionStrategy:
    compactor = tt.Compactor(
        ScriptedDecisionModel.by_call_id(ANSWERS, default=(0.95, 0.95)),
        config=tt.CompactorConfig(eligible_tools={"read_file", "run"}, preserve_recent_messages=2),
        execution=tt.ExecutionOptions(mode=mode),
        archive=archive or (KeyValueArchive(MemoryStore()) if mode is tt.Mode.ENFORCE else None),
    )
    return TracetrimCompactionStrategy(compactor, scope=SCOPE, **options)


def _texts(messages: list[dict[str, Any]]) -> list[Any]:
    """What a model reads of each message: roles, contents' types, call ids and texts (ids drawn at
    random left out)."""
    return [
        (m["role"], [(c["type"], c.get("call_id"), c.get("text"), c.get("result")) for c in m["contents"]])
        for m in messages
    ]


async def _plain() -> tuple[ScriptedClient, Any]:
    client = ScriptedClient(script())
    _, session, _ = await run_agent(client)
    return client, session


async def test_each_call_is_sent_a_compacted_history_the_providers_take() -> None:
    plain, plain_session = await _plain()
    archive = KeyValueArchive(MemoryStore())
    strategy = _strategy(archive=archive)
    client = ScriptedClient(script(), compaction_strategy=strategy)
    _, session, response = await run_agent(client)
    assert response.text.endswith("helper_7 multiplies by 7; the test expected 8.")
    assert len(client.requests) == len(plain.requests) == 8
    for sent, original in zip(client.requests, plain.requests, strict=True):
        check_responses(responses_input(sent), responses_input(original), types=False)
        check_openai_chat(chat_messages(sent))
    last = json.dumps(client.requests[-1])
    assert "dropped read_file call call_1" in last and "# src/a.py" not in last
    assert "the result of read_file call call_2" in last  # rs_02 led to call_2 and call_3: call_2 stays
    calls = {c.get("call_id") or c.get("id") for m in client.requests[-1] for c in m["contents"]}
    assert {"call_2", "call_3", "rs_02"} <= calls
    assert "rs_05" not in calls and "call_5" not in calls  # its reasoning went with it
    assert sum(map(len, map(json.dumps, client.requests))) < sum(map(len, map(json.dumps, plain.requests)))
    # the session keeps the run's history whole: compaction changed only what the model was sent
    assert _texts(stored_messages(session)) == _texts(stored_messages(plain_session))
    # each adopted compaction archived what it was given first: a dropped result comes back by call id
    assert len(await archive.list(SCOPE)) >= 3
    assert await RecallTool(archive, SCOPE)("call_1") == f"# src/a.py\n{FILLER}"


async def test_shadow_sends_what_a_run_without_it_sends() -> None:
    plain, _ = await _plain()
    strategy = _strategy(tt.Mode.SHADOW)
    client = ScriptedClient(script(), compaction_strategy=strategy)
    await run_agent(client)
    assert [_texts(r) for r in client.requests] == [_texts(r) for r in plain.requests]
    assert strategy.last_result is not None and strategy.last_result.outcome is not None
    assert strategy.last_result.outcome.reason.name == "SHADOW_PROPOSAL"


async def test_below_the_trigger_the_strategy_is_not_asked() -> None:
    plain, _ = await _plain()
    strategy = _strategy(trigger_tokens=1_000_000)
    client = ScriptedClient(script(), compaction_strategy=strategy)
    await run_agent(client)
    assert [_texts(r) for r in client.requests] == [_texts(r) for r in plain.requests]
    assert strategy.last_result is not None and not strategy.last_result.planned


async def test_one_step_of_the_frameworks_token_budget_composition() -> None:
    budget = TokenBudgetComposedStrategy(
        token_budget=2_500,
        tokenizer=CharacterEstimatorTokenizer(),
        strategies=[_strategy(trigger_tokens=None)],
    )
    client = ScriptedClient(script(), compaction_strategy=budget)
    plain, _ = await _plain()
    await run_agent(client)
    for sent, original in zip(client.requests, plain.requests, strict=True):
        check_responses(responses_input(sent), responses_input(original), types=False)
        check_openai_chat(chat_messages(sent))
    # tracetrim's step ran first; where it fell short of the budget the framework left out the oldest groups
    assert any("dropped read_file call call_1" in json.dumps(r) for r in client.requests)


async def test_in_place_with_the_callers_messages_unchanged_and_excluded_ones_where_they_were() -> None:
    plain, _ = await _plain()
    messages = [Message.from_dict(m) for m in plain.requests[-1]]
    set_excluded(messages[1], excluded=True, reason="tool_call_compaction")
    set_excluded(messages[2], excluded=True, reason="tool_call_compaction")
    before = [m.to_dict() for m in messages]
    excluded = messages[1:3]
    working = list(messages)
    strategy = _strategy()
    assert await strategy(working) is True
    assert [m.to_dict() for m in messages] == before  # every Message object as it was
    assert working[1] is excluded[0] and working[2] is excluded[1]
    decided = {d.call_id for d in strategy.last_result.outcome.plan.decisions}  # type: ignore[union-attr]
    assert "call_1" not in decided and "call_2" in decided
    kept = [m for m in working if m in messages]
    assert [messages.index(m) for m in kept] == sorted(messages.index(m) for m in kept)
    renamed = [m for m in working if m not in messages]
    assert renamed and all("~tt" in (m.message_id or "") for m in renamed if m.message_id)


def test_reachable_lazily_and_refuses_what_is_not_a_strategy() -> None:
    assert Lazy is TracetrimCompactionStrategy
    with pytest.raises(TypeError, match="strategy must be a CompactionStrategy"):
        TracetrimCompactionStrategy(object())  # type: ignore[arg-type]


async def test_as_a_providers_after_strategy_it_compacts_the_stored_history() -> None:
    """``CompactionProvider(after_strategy=...)`` hands the strategy the history the session stores, at
    the end of a turn: there the compaction is kept, and the next turns are sent it."""
    from agent_framework import ChatResponse, CompactionProvider, InMemoryHistoryProvider

    strategy = _strategy(trigger_tokens=None)
    answers = [ChatResponse(messages=[Message("assistant", [f"answer {n}"])]) for n in (2, 3)]
    client = ScriptedClient([*script(), *answers])
    history = InMemoryHistoryProvider()
    compaction = CompactionProvider(after_strategy=strategy, history_source_id=history.source_id)
    agent, session, _ = await run_agent(client, context_providers=[history, compaction])
    before = stored_messages(session)
    for question in ("Thanks. Anything else?", "And the cause?"):
        await agent.run(question, session=session)
    stored = stored_messages(session)
    assert len(stored) < len(before) + 4 and "dropped read_file call call_1" in json.dumps(stored)
    sent = client.requests[-1]  # the third turn was sent the compacted history
    assert "dropped read_file call call_1" in json.dumps(sent)
    check_responses(responses_input(sent), responses_input(client.requests[-2]), types=False)
    check_openai_chat(chat_messages(sent))
