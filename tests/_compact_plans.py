"""Compacting a provider-valid history the way the property tests do: ENFORCE, a scripted judge taking a
drawn action per pair, tombstones on or off, the whole document written back in its own format."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import tracetrim as tt
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS

ACTIONS = {"keep": (0.9, 0.9), "drop_result": (0.9, 0.1), "drop_call": (0.1, 0.1)}
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
plans = st.fixed_dictionaries(
    {
        "actions": st.lists(st.sampled_from(sorted(ACTIONS)), min_size=1, max_size=12),
        "tombstones": st.booleans(),
        "recent": st.integers(1, 3),
    }
)


def _model(actions: list[str]) -> ScriptedDecisionModel:
    def answer(name: str, question: Any, state: Mapping[str, Any]) -> float:
        kind, _, key = name.partition("_")
        p_call, p_result = ACTIONS[actions[int(key.lstrip("t")) % len(actions)]]
        return p_call if kind == "call" else p_result

    return ScriptedDecisionModel(answer)


def compact(neutral: list[dict[str, Any]], plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``neutral`` compacted in ENFORCE by a scripted judge taking ``plan``'s actions, pair by pair."""
    tools = {b["name"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    compactor = tt.Compactor(
        _model(plan["actions"]),
        config=tt.CompactorConfig(
            eligible_tools=tools or {"none"},
            preserve_recent_messages=plan["recent"],
            minimum_reduction=0.0,
            tombstones=plan["tombstones"],
            deduplicate=False,
        ),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    request = tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s"))
    outcome = asyncio.run(compactor.plan(request))
    assert outcome.status in (tt.Status.DECIDED, tt.Status.INCONCLUSIVE, tt.Status.SKIPPED), outcome
    return (
        outcome.plan.messages if outcome.plan is not None and outcome.status is tt.Status.DECIDED else neutral
    )


RESUME_PLANS: dict[str, dict[str, Any] | None] = {
    "as-read": None,
    "drop-all": {"actions": ["drop_call"], "tombstones": True, "recent": 1},
    "shorten-all": {"actions": ["drop_result"], "tombstones": True, "recent": 1},
    "mixed": {"actions": ["drop_call", "keep", "drop_result"], "tombstones": False, "recent": 2},
}
"""The plans the tests that have an agent resume a compacted file run (None: written back as read)."""


def written_with(fmt: str, lines: list[Any], plan: Mapping[str, Any] | None) -> list[Any]:
    """A file of format ``fmt`` (its list of lines or records) compacted with ``plan`` and written back."""
    shape = HISTORY_FORMATS[fmt]
    neutral = shape.read(lines)
    written: list[Any] = shape.write(compact(neutral, plan) if plan is not None else neutral)["messages"]
    return written


def write_back(fmt: str, document: dict[str, Any], plan: Mapping[str, Any]) -> dict[str, Any]:
    """The document compacted and written back whole, in its key order: its other fields as they were
    unless the writer gives them back (Anthropic's ``system``)."""
    shape = HISTORY_FORMATS[fmt]
    key = shape.messages_key
    written = shape.write(compact(shape.read(*shape.split(document)), plan))
    holder = shape.holder(document)
    out = {k: written["messages"] if k == key else written.get(k, v) for k, v in holder.items()}
    out.update({k: v for k, v in written.items() if k != "messages" and k not in out})
    return shape.with_holder(document, out)


def cli_compact(path: Path, archive: Path) -> subprocess.CompletedProcess[str]:
    """``tracetrim compact`` of the file at ``path`` in ENFORCE, every tool eligible, any saving adopted,
    the whole file written back (``--emit history``) on stdout; it must succeed."""
    return subprocess.run(
        [sys.executable, "-m", "tracetrim", "compact", str(path), "--eligible-tools", "*",
         "--minimum-reduction", "0", "--mode", "enforce", "--archive", str(archive),
         "--user", "u", "--agent", "a", "--session", "s", "--emit", "history"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
