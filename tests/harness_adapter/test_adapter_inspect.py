"""The Inspect AI compaction strategy in real Inspect evals: a ``react`` agent on a scripted ``mockllm``
model compacts its conversation through `TracetrimCompaction`; what each model call is sent keeps the
OpenAI chat and Responses rules (through Inspect's own converters), the archive holds what was dropped,
and SHADOW hands over to the fallback strategy.

The model is Inspect's ``mockllm`` with one change: it counts tokens as characters / 4, because
Inspect's default counter loads tiktoken's tables from the network.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pydantic
import pytest

import tracetrim as tt
from tests._provider_rules import check_openai_chat, check_responses
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel

if importlib.util.find_spec("inspect_ai") is None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("inspect-ai is required in CI (pip install tracetrim[inspect])")
    pytest.skip("inspect-ai is not installed (pip install tracetrim[inspect])", allow_module_level=True)

from inspect_ai import Task, eval_async
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.event import CompactionEvent
from inspect_ai.log import EvalLog
from inspect_ai.model import (
    ChatMessage,
    CompactionEdit,
    Model,
    ModelAPI,
    ModelOutput,
    get_model,
    messages_to_openai,
    messages_to_openai_responses,
    modelapi,
)
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import includes
from inspect_ai.tool import tool

from tracetrim.harness_adapter.inspect_ai import TracetrimCompaction

BODY = "".join(f"line {k}: the parser reads token {k} of the stream\n" for k in range(80))
MESSAGES = pydantic.TypeAdapter(list[ChatMessage])
CALLS = [("c1", "a.py"), ("c2", "b.py"), ("c3", "c.py"), ("c4", "d.py")]
SCOPE = tt.Scope("u", "inspect-test", "s")


class CountingMock(MockLLM):
    """``mockllm`` counting tokens as characters / 4 (Inspect's own counter needs tiktoken's tables)."""

    async def count_text_tokens(self, text: str) -> int:
        return len(text) // 4 + 1


@modelapi(name="counting-mock")
def counting_mock() -> type[ModelAPI]:
    return CountingMock


@tool
def read_file() -> Any:
    async def execute(path: str) -> str:
        """Read a file of the repository.

        Args:
            path: The file's path.
        """
        return f"# {path}\n{BODY}"

    return execute


def _model(sent: list[list[ChatMessage]]) -> Model:
    """A model that reads the four files in turn, then submits; ``sent`` gets each call's input."""

    def reply(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        sent.append(list(messages))
        turn = len(sent) - 1
        if turn < len(CALLS):
            call_id, path = CALLS[turn]
            output = ModelOutput.for_tool_call(
                "mockllm/model", "read_file", {"path": path}, tool_call_id=call_id
            )
        else:
            output = ModelOutput.for_tool_call(
                "mockllm/model", "submit", {"answer": "token 7"}, tool_call_id="end"
            )
        return output

    return get_model("counting-mock/model", custom_outputs=reply, memoize=False)


def _compactor(mode: tt.Mode, archive: KeyValueArchive) -> tt.Compactor:
    # c1 goes (call and result), every other result is shortened
    decisions = ScriptedDecisionModel.by_call_id({"c1": (0.1, 0.1)}, default=(0.9, 0.1))
    config = tt.CompactorConfig(
        eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.0
    )
    return tt.Compactor(decisions, config=config, execution=tt.ExecutionOptions(mode=mode), archive=archive)


async def _run(compaction: Any, sent: list[list[ChatMessage]], logs: Path) -> EvalLog:
    task = Task(
        dataset=[Sample(input="Which token does the parser read on line 7?", target="token 7")],
        solver=react(tools=[read_file()], compaction=compaction),
        scorer=includes(),
    )
    [log] = await eval_async(task, model=_model(sent), log_dir=str(logs))
    return log


async def _check_sent(inputs: list[list[ChatMessage]]) -> None:
    for messages in inputs:
        check_openai_chat(await messages_to_openai(messages))
        responses = await messages_to_openai_responses(messages)
        check_responses(responses, responses, types=False)


def _results(messages: list[ChatMessage]) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in messages if m.role == "tool" and m.tool_call_id}


async def test_enforce_compacts_what_the_agent_sends_and_archives_the_original(tmp_path: Path) -> None:
    archive = KeyValueArchive(MemoryStore())
    strategy = TracetrimCompaction(_compactor(tt.Mode.ENFORCE, archive), threshold=2500, scope=SCOPE)
    sent: list[list[ChatMessage]] = []
    log = await _run(strategy, sent, tmp_path)
    assert log.status == "success", log.error
    await _check_sent(sent)
    last = sent[-1]
    assert "c1" not in _results(last) and not any(
        c.id == "c1" for m in last for c in getattr(m, "tool_calls", None) or []
    )
    assert len(_results(last)["c2"]) < len(BODY) and _results(last)["c4"].endswith(BODY)  # c4: recent
    assert log.samples and any(isinstance(e, CompactionEvent) for e in log.samples[0].events)
    # the sample's own messages stay whole; the archive holds what the model stopped seeing
    assert "c1" in _results(log.samples[0].messages)
    result = strategy.last_result
    assert result is not None and result.archive_ref
    restored = await archive.restore(SCOPE, result.archive_ref)
    assert any(b.get("id") == "c1" for m in restored for b in m["content"] if b["type"] == "tool_result")
    ids = [m.id for m in last]
    assert len(set(ids)) == len(ids)


async def test_shadow_changes_nothing_and_hands_over_to_the_fallback(tmp_path: Path) -> None:
    archive = KeyValueArchive(MemoryStore())
    shadow = TracetrimCompaction(
        _compactor(tt.Mode.SHADOW, archive),
        threshold=2500,
        scope=SCOPE,
        fallback=CompactionEdit(keep_tool_uses=1),
    )
    sent: list[list[ChatMessage]] = []
    log = await _run(shadow, sent, tmp_path)
    assert log.status == "success", log.error
    await _check_sent(sent)
    assert shadow.last_result is not None and shadow.last_result.outcome is not None
    assert shadow.last_result.outcome.status is tt.Status.DECIDED  # judged and reported
    assert shadow.last_result.messages is None and not shadow.last_result.archive_ref
    compactions = [e for e in log.samples[0].events if isinstance(e, CompactionEvent)] if log.samples else []
    assert compactions  # Inspect's own CompactionEdit did the editing
    assert "c1" in _results(sent[-1]) and "c2" in _results(sent[-1])  # kept as calls, results cleared


async def test_without_a_fallback_a_conversation_tracetrim_cannot_shorten_fails_as_inspect_says(
    tmp_path: Path,
) -> None:
    shadow = TracetrimCompaction(_compactor(tt.Mode.SHADOW, KeyValueArchive(MemoryStore())), threshold=2500)
    log = await _run(shadow, [], tmp_path)
    assert log.status == "error" and log.error is not None
    assert "Compaction insufficient" in log.error.message


def test_a_fallback_must_be_an_inspect_strategy() -> None:
    with pytest.raises(TypeError, match="fallback must be an Inspect CompactionStrategy"):
        TracetrimCompaction(_compactor(tt.Mode.ENFORCE, KeyValueArchive(MemoryStore())), fallback="edit")  # type: ignore[arg-type]
