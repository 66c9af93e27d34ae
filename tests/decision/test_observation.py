"""The observation: what a remote model sees, and fitting it under the state budget in stages."""

from __future__ import annotations

from typing import Any

import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, thinking, tool_history, user
from tracetrim._json import canonical_json
from tracetrim._render import shorten
from tracetrim._snapshot import validate_messages
from tracetrim._tokens import estimate_tokens
from tracetrim.compactor._pairs import find_pairs, protected_messages
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.decision._remote._observation import STAGES, StateOverBudget, observe


def _observe(messages: list[dict[str, Any]], max_tokens: int, *, preview: int = 500, recent: int = 4) -> Any:
    messages = validate_messages(messages)
    protected = protected_messages(messages, preserve_recent=recent, protected_ids=(), pinned_ids=())
    pairs = find_pairs(messages, eligible_tools={"read_file"}, protected=protected, protected_call_ids=())
    return observe(
        messages,
        pairs,
        goal="fix the parser",
        next_action="edit parser.py",
        preserve_recent=recent,
        preview_chars=preview,
        max_tokens=max_tokens,
        count_tokens=estimate_tokens,
    )


def test_state_carries_goal_text_and_call_records_but_never_thinking() -> None:
    messages = [
        user("m0", "Fix the parser."),
        assistant("a1", thinking("SECRET-THOUGHT"), text("Reading it."), call("c1"), result("c1")),
        assistant("a2", call("c2", state="pending")),
        *tool_history(0, tail=4)[1:],
    ]
    observation = _observe(messages, 25_000)
    state = observation.state
    assert state["goal"] == "fix the parser" and state["next_action"] == "edit parser.py"
    assert "SECRET-THOUGHT" not in canonical_json(state)
    history = state["history"]
    assert history[0] == {"message": 0, "role": "user", "text": "Fix the parser."}
    calls = [entry["call"] for entry in history if "call" in entry]
    assert calls[0]["key"] == "t1" and calls[0]["tool"] == "read_file" and calls[0]["call_id"] == "c1"
    assert calls[0]["result"]["state"] == "success" and calls[0]["result"]["chars"] > 0
    assert calls[1]["key"] == "pending" and calls[1]["result"]["state"] == "pending"
    assert observation.stage == "full" and observation.tokens == estimate_tokens(canonical_json(state))


def test_preview_zero_keeps_result_bodies_on_the_host() -> None:
    messages = tool_history(3)
    state = _observe(messages, 25_000, preview=0).state
    body = messages[1]["content"][2]["output"]
    assert body[:40] not in canonical_json(state)
    assert all("preview" not in e["call"]["result"] for e in state["history"] if "call" in e)


def test_preview_is_head_and_tail() -> None:
    assert shorten("a" * 50 + "b" * 50, 30).startswith("a" * 20)
    assert shorten("a" * 50 + "b" * 50, 30).endswith("b" * 10)
    assert shorten("short", 30) == "short"


def _long_inputs(n: int, chars: int) -> list[dict[str, Any]]:
    messages = [user("m0", "Fix the parser.")]
    for k in range(1, n + 1):
        messages.append(
            assistant(
                f"a{k}", call(f"c{k}", args={"path": f"f{k}.py", "q": "x" * chars}), result(f"c{k}", size=100)
            )
        )
    return messages + tool_history(0, tail=4)[1:]


@pytest.mark.parametrize(
    ("budget", "stage"), [(5_000, "inputs_1000"), (1_900, "inputs_200"), (900, "inputs_60")]
)
def test_fits_only_after_shortening_inputs(budget: int, stage: str) -> None:
    observation = _observe(_long_inputs(10, 3000), budget, preview=0)
    assert observation.stage == stage and observation.tokens <= budget


def test_old_text_is_shortened_then_omitted_but_first_and_recent_stay() -> None:
    first = "TASK " + "t" * 3000
    recent = "RECENT " + "r" * 3000
    messages = [user("m0", first)]
    messages += [user(f"u{k}", f"old note {k} " + "n" * 2000) for k in range(8)]
    messages += [assistant("a1", text("calling"), call("c1"), result("c1"))]
    messages += [
        user("z1", recent),
        assistant("z2", text("ok")),
        user("z3", "q"),
        assistant("z4", text("ok")),
    ]
    full = _observe(messages, 100_000, preview=0)
    shortened = _observe(messages, full.tokens - 100, preview=0)
    assert shortened.stage == "old_text_shortened"
    omitted = _observe(messages, 1_800, preview=0)
    assert omitted.stage == "old_text_omitted"
    texts = [e["text"] for e in omitted.state["history"] if "text" in e]
    assert first in texts and recent in texts
    assert not any(t.startswith("old note") for t in texts)


def test_old_protected_calls_are_merged_last() -> None:
    messages = [user("m0", "task")]
    for k in range(40):
        messages.append(
            assistant(
                f"w{k}",
                call(f"w{k}", "write_file", args={"path": f"out{k}.py"}),
                result(f"w{k}", "write_file", output="written"),
            )
        )
    messages += [assistant("a1", call("c1"), result("c1")), *tool_history(0, tail=4)[1:]]
    full = _observe(messages, 100_000)
    merged = _observe(messages, full.tokens // 3)
    assert merged.stage == "protected_merged"
    runs = [e for e in merged.state["history"] if "merged_protected_calls" in e]
    assert runs == [{"message": 1, "merged_protected_calls": 40, "tools": {"write_file": 40}}]
    assert any(e.get("call", {}).get("key") == "t41" for e in merged.state["history"])


def test_nothing_fits_raises() -> None:
    with pytest.raises(StateOverBudget, match="max_state_tokens"):
        _observe(tool_history(20), 50)


async def test_state_over_budget_makes_no_model_call() -> None:
    model = ScriptedDecisionModel({}, default=0.0)
    first = "TASK " + "t" * 8000  # the first message is never shortened, so nothing can fit
    messages = [user("m0", first), *tool_history(3)[1:]]
    config = tt.CompactorConfig(eligible_tools={"read_file"}, max_state_tokens=1000, max_request_tokens=2000)
    outcome = await tt.Compactor(model, config=config).plan(tt.CompactionRequest(messages))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "STATE_OVER_BUDGET")
    assert model.calls == []


async def test_host_token_counter_is_used() -> None:
    counted: list[str] = []

    def counter(value: str) -> int:
        counted.append(value)
        return len(value.split())

    model = ScriptedDecisionModel({}, default=0.0)
    config = tt.CompactorConfig(eligible_tools={"read_file"}, token_counter=counter)
    outcome = await tt.Compactor(model, config=config).plan(tt.CompactionRequest(tool_history(3)))
    assert outcome.plan is not None
    assert outcome.plan.stats.state_tokens == len(canonical_json(model.calls[0].state).split())
    assert counted


def test_stages_are_ordered_as_designed() -> None:
    assert [s.name for s in STAGES] == [
        "full",
        "inputs_1000",
        "inputs_200",
        "inputs_60",
        "old_text_shortened",
        "old_text_omitted",
        "protected_merged",
    ]
    assert [s.input_limit for s in STAGES[1:]] == [1000, 200, 60, 60, 60, 60]
