"""The baselines as their documentation and source define them: triggers, what they keep, what they write."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests._histories import assistant, call, result, text, user
from tests._replay_runs import lookup_run
from tracetrim.learn import Trajectory
from tracetrim.learn._frontier import MASK_PLACEHOLDER
from tracetrim.replay import (
    DEFAULT_HOST,
    AnthropicClearToolUses,
    KeepLastN,
    LangChainClearToolUses,
    MessageBook,
    OpenAIToolOutputTrimmer,
    ReplayStrategy,
    model_turns,
)
from tracetrim.replay._baselines import CLEARED_PLACEHOLDER, langchain_tokens


def prompt(strategy: ReplayStrategy, run: Trajectory, at: int | None = None) -> Sequence[dict[str, Any]]:
    """The strategy's prompt for the model call at message ``at`` (default: the last one)."""
    book = MessageBook()
    session = strategy.start(run, DEFAULT_HOST, book)
    turns = model_turns(run.messages)
    at = turns[-1] if at is None else at
    return asyncio.run(session.prompt(run.messages[:at], turns.index(at))).messages


def outputs(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Tool result outputs by call id."""
    return {b["id"]: b["output"] for m in messages for b in m["content"] if b["type"] == "tool_result"}


def test_masking_keeps_the_last_n_results_and_every_call() -> None:
    run = lookup_run()
    shown = outputs(prompt(KeepLastN(3), run))
    assert [k for k, v in shown.items() if v == MASK_PLACEHOLDER] == ["c1", "c2", "c3", "c4", "c5"]
    assert all(v.startswith(f"order ORD_{k[1:]}_XYZ") for k, v in shown.items() if k in ("c6", "c7", "c8"))
    calls = [b["id"] for m in prompt(KeepLastN(3), run) for b in m["content"] if b["type"] == "tool_call"]
    assert calls == [f"c{n}" for n in range(1, 9)]


def test_anthropic_clears_all_but_three_tool_uses_once_the_prompt_passes_its_trigger() -> None:
    run = lookup_run()
    book = MessageBook()
    last = model_turns(run.messages)[-1]
    size = book.total(run.messages[:last])
    assert AnthropicClearToolUses().trigger == 100_000 and size < 100_000
    assert outputs(prompt(AnthropicClearToolUses(), run)) == outputs(
        run.messages
    )  # default: never fires here
    shown = outputs(prompt(AnthropicClearToolUses(trigger=size - 1), run))
    assert [k for k, v in shown.items() if v == CLEARED_PLACEHOLDER] == [f"c{n}" for n in range(1, 6)]
    assert outputs(prompt(AnthropicClearToolUses(trigger=size), run)) == outputs(run.messages)  # "exceeds"
    # clear_at_least: an edit that would clear less than that is not applied at all.
    assert outputs(prompt(AnthropicClearToolUses(trigger=size - 1, clear_at_least=10**6), run)) == outputs(
        run.messages
    )
    # The input tokens it triggers on count the system prompt: the same run without it stays under.
    no_system = Trajectory("x", "fixture", "x", run.messages[1:], run.eligible_tools)
    system = book.tokens(run.messages[0])
    assert outputs(prompt(AnthropicClearToolUses(trigger=size - system), no_system)) == outputs(
        no_system.messages
    )


def test_langchain_counts_approximately_and_stops_once_clear_at_least_is_reclaimed() -> None:
    run = lookup_run()
    last = model_turns(run.messages)[-1]
    size = langchain_tokens(run.messages[:last])
    shown = outputs(prompt(LangChainClearToolUses(trigger=size - 1), run))
    assert [k for k, v in shown.items() if v == CLEARED_PLACEHOLDER] == [f"c{n}" for n in range(1, 6)]
    # With clear_at_least it clears oldest first only until that much is reclaimed (Anthropic: all or none).
    partial = outputs(prompt(LangChainClearToolUses(trigger=size - 1, clear_at_least=600), run))
    assert [k for k, v in partial.items() if v == CLEARED_PLACEHOLDER] == ["c1", "c2"]
    assert outputs(prompt(LangChainClearToolUses(), run)) == outputs(run.messages)
    assert LangChainClearToolUses().trigger == 100_000 and LangChainClearToolUses().keep == 3


def _chat(turns: int) -> Trajectory:
    """A customer-service run: a user turn, then a lookup with a long and a short result, ``turns`` times."""
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages += [
            user(f"u{n}", f"question {n}"),
            assistant(f"a{n}", call(f"long{n}", "search", {"q": n}), call(f"short{n}", "get", {"id": n})),
            assistant(
                f"r{n}", result(f"long{n}", "search", "x" * 900), result(f"short{n}", "get", "y" * 400)
            ),
            assistant(f"t{n}", text(f"answer {n}")),
        ]
    return Trajectory("chat", "fixture", "chat", messages, None)


def test_openai_trimmer_cuts_long_outputs_before_the_second_to_last_user_turn() -> None:
    run = _chat(3)
    shown = outputs(prompt(OpenAIToolOutputTrimmer(), run))
    header = "[Trimmed: search output — 900 chars → 200 char preview]\n"
    assert shown["long0"] == header + "x" * 200 + "..."
    assert shown["short0"] == "y" * 400  # 500 characters or fewer: kept
    # The last two user turns and everything after them are never trimmed.
    assert shown["long1"] == shown["long2"] == "x" * 900


def test_openai_trimmer_trims_nothing_with_fewer_user_turns_than_its_window() -> None:
    # A single-task coding agent has one user message, so nothing is ever old.
    run = lookup_run()
    assert outputs(prompt(OpenAIToolOutputTrimmer(), run)) == outputs(run.messages)
    # Even a window of one: everything from the last user message on is recent, and that is the task.
    assert outputs(prompt(OpenAIToolOutputTrimmer(recent_turns=1), run)) == outputs(run.messages)
    assert outputs(prompt(OpenAIToolOutputTrimmer(recent_turns=1), _chat(2)))["long1"] == "x" * 900
    assert outputs(prompt(OpenAIToolOutputTrimmer(recent_turns=1), _chat(2)))["long0"].startswith("[Trimmed:")


@pytest.mark.parametrize(
    "strategy",
    [
        KeepLastN(3),
        AnthropicClearToolUses(trigger=10),
        LangChainClearToolUses(trigger=10),
        OpenAIToolOutputTrimmer(),
    ],
    ids=lambda s: s.name,
)
def test_per_request_edits_leave_the_run_alone_and_reuse_their_edited_messages(
    strategy: ReplayStrategy,
) -> None:
    run = _chat(4)
    before = [dict(m) for m in run.messages]
    book = MessageBook()
    session = strategy.start(run, DEFAULT_HOST, book)
    turns = model_turns(run.messages)
    first = asyncio.run(session.prompt(run.messages[: turns[-2]], len(turns) - 2)).messages
    second = asyncio.run(session.prompt(run.messages[: turns[-1]], len(turns) - 1)).messages
    assert run.messages == before
    # A message edited the same way at both calls is the same object: the cache model sees it unchanged.
    shared = [i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a == b]
    assert shared and all(first[i] is second[i] for i in shared)
    assert strategy.models and len(strategy.models.splitlines()) == 1


def test_each_baseline_names_the_defaults_it_models() -> None:
    assert (
        "trigger 100,000 input tokens, keep 3 tool uses, clear_at_least none"
        in AnthropicClearToolUses().models
    )
    assert (
        "trigger 100,000 approximate tokens, keep 3 results, clear_at_least 0"
        in LangChainClearToolUses().models
    )
    assert (
        "recent_turns 2, outputs over 500 chars cut to a 200-char preview" in OpenAIToolOutputTrimmer().models
    )
    assert "all but the last 10 tool results" in KeepLastN().models
