"""One output contract at every entry point: ``messages`` safe to continue with, ``proposal`` when not
adopted, ``changed`` only when the history you got differs from the one you sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests.conftest import SCENARIOS, load_scenario
from tracetrim._contract import answer
from tracetrim._json import canonical_json
from tracetrim.cli import main

USER = ["--user", "u", "--agent", "a", "--session", "s"]


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def _same(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def test_the_library_answer_for_each_kind_of_outcome() -> None:
    scenario = load_scenario("payment_retry")
    sent = scenario["messages"]
    config = tt.CompactorConfig(eligible_tools=scenario["eligible_tool_names"])
    shadow = asyncio.run(tt.Compactor(config=config).plan(tt.CompactionRequest(sent)))
    assert shadow.plan is not None
    got = answer(shadow, sent)
    assert not got.changed and got.messages == sent and got.proposal == shadow.plan.messages
    assert shadow.adopted is got.changed  # the library's Outcome says the same
    skipped = asyncio.run(tt.Compactor().plan(tt.CompactionRequest(sent)))  # nothing eligible
    got = answer(skipped, sent)
    assert not got.changed and got.messages == sent and got.proposal is None


def test_compact_in_shadow_mode_continues_with_what_was_sent(capsys: pytest.CaptureFixture[str]) -> None:
    path = SCENARIOS / "payment_retry.json"
    document = _cli(["compact", str(path)], capsys)
    assert document["reason"] == "SHADOW_PROPOSAL" and document["changed"] is False
    assert _same(document["messages"], json.loads(path.read_text())["messages"])
    assert document["proposal"] is not None and not _same(document["proposal"], document["messages"])


def test_compact_in_enforce_mode_continues_with_the_adopted_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = SCENARIOS / "payment_retry.json"
    archive = ["--archive", f"sqlite:{tmp_path / 'a.db'}"]
    document = _cli(["compact", str(path), "--mode", "enforce", *archive, *USER], capsys)
    assert document["reason"] == "ARCHIVED_PROPOSAL" and document["changed"] is True
    assert document["proposal"] is None
    assert len(canonical_json(document["messages"])) == document["stats"]["chars_after"]


def test_offload_in_shadow_mode_answers_the_same_way(capsys: pytest.CaptureFixture[str]) -> None:
    path = SCENARIOS / "payment_retry.json"
    flags = ["--mode", "compact", "--trigger-tokens", "1000", "--max-tool-message-tokens", "100"]
    document = _cli(["offload", str(path), *flags], capsys)
    assert document["reason"] == "SHADOW_PROPOSAL" and document["changed"] is False
    assert _same(document["messages"], json.loads(path.read_text())["messages"])
    assert document["proposal"] is not None and not _same(document["proposal"], document["messages"])


@pytest.mark.parametrize("mode", [tt.Mode.SHADOW, tt.Mode.ENFORCE])
@pytest.mark.parametrize("strategy", ["compactor", "offload"])
def test_an_adapter_answers_the_same_way(mode: tt.Mode, strategy: str) -> None:
    from tracetrim.archive import KeyValueArchive, MemoryStore
    from tracetrim.harness_adapter import compact_history
    from tracetrim.harness_adapter._turns import join_bared_turns

    scenario = load_scenario("payment_retry")
    sent = scenario["messages"]
    execution = tt.ExecutionOptions(mode=mode)
    archive = KeyValueArchive(MemoryStore())
    planner: tt.Compactor | tt.OffloadStrategy
    if strategy == "compactor":
        config = tt.CompactorConfig(eligible_tools=scenario["eligible_tool_names"])
        planner = tt.Compactor(config=config, execution=execution, archive=archive)
    else:
        offload = tt.OffloadConfig(mode="compact", trigger_tokens=1000, max_tool_message_tokens=100)
        planner = tt.OffloadStrategy(config=offload, execution=execution, archive=archive)
    scope = tt.Scope("u", "a", "s")
    result = asyncio.run(compact_history(planner, sent, scope=scope))
    assert result.outcome is not None and result.outcome.plan is not None
    got = answer(result.outcome, sent)
    # the adapter hands back a history only when it changed; otherwise the host continues with its own
    assert got.changed is (mode is tt.Mode.ENFORCE) is result.outcome.adopted
    assert (result.messages is not None) is got.changed
    if got.changed:
        # the same history, with an assistant turn a drop left without its calls joined to the next one
        assert result.messages == join_bared_turns(sent, got.messages)
        assert got.proposal is None and result.archive_ref
    else:
        assert got.messages == sent and got.proposal == result.outcome.plan.messages != sent
