"""The shared quality scoring: label checks, masking baselines, the upper bound and the table."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import Any

from tracetrim.learn._quality import (
    Case,
    Count,
    Labels,
    clear_tool_uses,
    evaluate,
    example_rows,
    format_table,
    keep_last_n,
    label_model,
    score_labels,
    standard_strategies,
    total,
    tracetrim_strategy,
)


def _history(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "go"}]}
    ]
    for i in range(1, n + 1):
        messages.append(
            {
                "id": f"m{i}",
                "role": "assistant",
                "content": [
                    {"type": "tool_call", "id": f"c{i}", "name": "read", "input": "{}", "state": "finished"},
                    {
                        "type": "tool_result",
                        "id": f"c{i}",
                        "name": "read",
                        "output": f"line {i}\n" * 50,
                        "state": "success",
                    },
                ],
            }
        )
    return messages


def _outputs(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    return {b["id"]: b["output"] for m in messages for b in m["content"] if b["type"] == "tool_result"}


def test_keep_last_n_masks_older_eligible_results_only() -> None:
    case = Case(
        name="h", messages=_history(6), eligible_tools=frozenset({"read"}), preserve_recent_messages=1
    )
    original = copy.deepcopy(case.messages)
    out = asyncio.run(keep_last_n(2)(case)).messages
    outputs = _outputs(out)
    assert [k for k, v in outputs.items() if v.startswith("[Old tool output omitted")] == [
        "c1",
        "c2",
        "c3",
        "c4",
    ]
    assert outputs["c5"] == _outputs(original)["c5"]
    assert case.messages == original  # never mutated


def test_clear_tool_uses_counts_eligible_results() -> None:
    # The last message is protected (recent), so its result neither counts nor changes.
    case = Case(
        name="h", messages=_history(6), eligible_tools=frozenset({"read"}), preserve_recent_messages=1
    )
    outputs = _outputs(asyncio.run(clear_tool_uses(3)(case)).messages)
    cleared = [k for k, v in outputs.items() if v.startswith("[cleared")]
    assert cleared == ["c1", "c2"]


def test_score_labels_counts_each_kind() -> None:
    original = _history(4)
    compacted = copy.deepcopy(original)
    compacted[2]["content"][1]["output"] = "short"  # c2 shortened
    del compacted[3]["content"][:]  # c3 dropped
    compacted[4]["content"][0]["input"] = '{"x": 1}'  # c4's call changed
    labels = Labels(
        critical=frozenset({"c1", "c2"}),
        needed=frozenset({"c3", "c4"}),
        irrelevant=frozenset({"c3"}),
        superseded=frozenset({"c2"}),
        protected=frozenset({"c1", "c4"}),
        must_contain=("line 1", "line 2"),
    )
    score = score_labels(original, compacted, labels)
    assert score.critical == Count(1, 2)
    assert score.needed == Count(1, 2)
    assert score.irrelevant == Count(1, 1)
    assert score.superseded == Count(1, 1)
    assert score.protected == Count(1, 2)
    assert score.must_contain == Count(1, 2)
    assert not score.meets_targets


def test_label_upper_bound_meets_label_targets(scenario: dict[str, Any]) -> None:
    case = Case.from_scenario(scenario)
    row = asyncio.run(evaluate(case, [("labels", tracetrim_strategy(model_for=label_model))]))[0]
    assert row.labels is not None and row.labels.meets_targets
    assert row.labels.irrelevant.complete and row.labels.needed.complete
    assert row.requests == 1


def test_example_rows_and_table() -> None:
    rows = asyncio.run(example_rows(["payment_retry"]))
    assert [r.strategy for r in rows] == [name for name, _ in standard_strategies()]
    table = format_table([*rows, total("all", "tracetrim", [r for r in rows if r.strategy == "tracetrim"])])
    assert table.splitlines()[0].startswith("| history | strategy | chars before")
    assert "critical verbatim" in table and "| all | tracetrim |" in table
    assert len(table.splitlines()) == len(rows) + 3


def test_extra_columns_and_totals() -> None:
    case = Case(name="h", messages=_history(3), eligible_tools=frozenset({"read"}))

    def check(case: Case, messages: Any) -> dict[str, Count]:
        return {"kept": Count(1, 2)}

    rows = asyncio.run(evaluate(case, [("k", keep_last_n(1))], [check]))
    summed = total("sum", "k", rows + rows)
    assert summed.extra["kept"] == Count(2, 4)
    assert summed.chars_before == 2 * rows[0].chars_before
    assert "| kept |" in format_table(rows)
