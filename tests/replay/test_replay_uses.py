"""What each model call used: `tracetrim.learn.evidence`'s labels, per step, and where the model calls are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._histories import assistant, call, result, text, user
from tests._replay_runs import SECRET, lookup_run
from tests.conftest import DATA, require_data
from tracetrim.formats import from_anthropic
from tracetrim.learn import cut_points, evidence, from_file, mini_swe_agent, swe_agent, tau_bench
from tracetrim.replay import model_turns, step_uses


def test_a_value_first_shown_by_a_result_is_a_use_of_that_result_where_it_is_written() -> None:
    uses = step_uses(lookup_run().messages)
    assert list(uses) == [18]
    (use,) = uses[18]
    assert (use.call_id, use.strings) == ("c2", frozenset({SECRET}))
    assert use.result_tokens > 400


def test_what_the_task_or_the_agent_said_first_is_nobodys_use_and_quoted_lines_count() -> None:
    line = "def parse_config(path, strict=True):"
    messages = [
        user("u", "Fix parse_config in cfg.py; the error is ERR_77."),
        assistant("a1", text("Reading."), call("c1", "read", {"path": "cfg.py"})),
        assistant(
            "r1", result("c1", "read", f"{line}\n    return load(path)  # ERR_77 raised here\nTOKEN_9 = 1")
        ),
        assistant(
            "a2", text(f"I will change:\n{line}\nand keep TOKEN_9. ERR_77 is known."), call("c2", "edit")
        ),
    ]
    uses = step_uses(messages)
    (use,) = uses[3]
    # parse_config and ERR_77 were in the task first; the line and TOKEN_9 were first shown by c1.
    assert use.call_id == "c1" and use.strings == frozenset({line, "TOKEN_9"})
    assert model_turns(messages) == [1, 3]  # a message of tool results only is no model call


def test_a_message_of_tool_results_only_is_not_a_model_call() -> None:
    run = lookup_run(3)
    assert model_turns(run.messages) == [2, 4, 6, 8]
    assert all(run.messages[i]["role"] == "assistant" for i in model_turns(run.messages))


def test_a_user_turn_of_results_and_text_is_not_a_model_call(tmp_path: Path) -> None:
    """An Anthropic user turn holding tool results and text (Cline's environment details after every
    result) is an assistant message in the neutral form; the host wrote it, so no model call is there,
    read from the messages or from a file as the replay reads it (`tracetrim.learn.from_file`)."""
    messages = [
        {"role": "user", "content": "Fix cfg.py."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"},
                {"type": "text", "text": "<environment_details>\n</environment_details>"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    assert model_turns(from_anthropic(messages)) == [1, 3]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"model": "m", "max_tokens": 1, "messages": messages}), encoding="utf-8")
    (run,) = from_file(path)
    turns = model_turns(run.messages)  # after the carrier of the request's fields
    assert run.dataset == "anthropic" and [run.messages[i]["content"][0]["type"] for i in turns] == [
        "tool_call",
        "text",
    ]


@pytest.mark.data
def test_the_uses_after_each_cut_are_the_evidence_at_that_cut_on_real_runs() -> None:
    runs = (
        mini_swe_agent(require_data(DATA / "mini-swe-agent"), 15)
        + tau_bench(require_data(DATA / "tau-bench" / "gpt-4o-airline.json"), 15)
        + swe_agent(require_data(DATA / "swe-agent"))[:8]
    )
    labelled = recovered = extra = 0
    for run in runs:
        uses = step_uses(run.messages)
        for cut in cut_points(run.messages):
            before = {
                str(b["id"]) for m in run.messages[:cut] for b in m["content"] if b["type"] == "tool_result"
            }
            union: dict[str, set[str]] = {}
            for at, found in uses.items():
                for use in found:
                    if at >= cut and use.call_id in before:
                        union.setdefault(use.call_id, set()).update(use.strings)
            for call_id, item in evidence(run.messages, cut).items():
                labelled += len(item.strings)
                recovered += len(item.strings & union.get(call_id, set()))
                extra += len(union.get(call_id, set()) - item.strings)
    assert labelled > 500
    # Lines are matched within one call's text rather than all later text: a few differ, no more.
    assert recovered >= 0.98 * labelled and extra <= 0.01 * labelled, (labelled, recovered, extra)
