"""The Google ADK plugin against real ADK runs (``InMemoryRunner``) with a scripted ``BaseLlm``: what each
request sends keeps Gemini's rules, the session's events stay whole, and the budget and modes behave."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncGenerator
from typing import Any

import pytest

import tracetrim as tt
from tests._provider_rules import check_gemini
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.decision import ScriptedDecisionModel

if importlib.util.find_spec("google.adk") is None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("google-adk is required in CI (pip install tracetrim[adk])")
    pytest.skip("google-adk is not installed (pip install tracetrim[adk])", allow_module_level=True)

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from tracetrim.harness_adapter.adk import TracetrimPlugin

BODY = "\n".join(f"line {k}: the parser reads token {k}" for k in range(120))


def _calls(*calls: tuple[str, str]) -> types.Content:
    """A model turn calling ``read_file`` once per (call id, path); several make a parallel turn."""
    parts = [
        types.Part(function_call=types.FunctionCall(id=c, name="read_file", args={"path": p}))
        for c, p in calls
    ]
    return types.Content(role="model", parts=parts)


SCRIPT = [
    _calls(("c1", "a.py"), ("c2", "b.py")),
    _calls(("c3", "c.py")),
    _calls(("c4", "d.py")),
    types.Content(role="model", parts=[types.Part(text="done")]),
]


class Scripted(BaseLlm):
    """Replies from SCRIPT; keeps the contents of every request, as the SDK would send them."""

    model: str = "scripted"
    sent: list[list[dict[str, Any]]]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.sent.append(
            [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in llm_request.contents]
        )
        yield LlmResponse(content=SCRIPT[len(self.sent) - 1])


def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}\n{BODY}"


def _compactor(mode: tt.Mode = tt.Mode.ENFORCE, **config: Any) -> tt.Compactor:
    # c1 and c3 go (call and result), c2 is shortened, the rest stays
    decisions = ScriptedDecisionModel.by_call_id(
        {"c1": (0.1, 0.1), "c2": (0.9, 0.1), "c3": (0.1, 0.1)}, default=(0.9, 0.9)
    )
    settings = {"eligible_tools": {"read_file"}, "preserve_recent_messages": 2, "minimum_reduction": 0.0}
    return tt.Compactor(
        decisions,
        config=tt.CompactorConfig(**{**settings, **config}),
        execution=tt.ExecutionOptions(mode=mode),
        archive=KeyValueArchive(MemoryStore()),
    )


async def _run(plugin: TracetrimPlugin) -> tuple[Scripted, list[Any]]:
    model = Scripted(sent=[])
    runner = InMemoryRunner(agent=LlmAgent(name="coder", model=model, tools=[read_file]), app_name="fixer")
    runner.plugin_manager.register_plugin(plugin)
    session = await runner.session_service.create_session(app_name="fixer", user_id="u1", session_id="s1")
    message = types.Content(role="user", parts=[types.Part(text="read the parser files")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        pass
    stored = await runner.session_service.get_session(app_name="fixer", user_id="u1", session_id="s1")
    assert stored is not None
    return model, stored.events


def _ids(contents: list[dict[str, Any]], kind: str) -> list[str]:
    return [p[kind]["id"] for c in contents for p in c["parts"] if kind in p]


async def test_each_request_is_compacted_and_keeps_geminis_rules() -> None:
    plugin = TracetrimPlugin(_compactor())
    model, events = await _run(plugin)
    last = model.sent[-1]
    assert _ids(last, "functionCall") == ["c2", "c4"] == _ids(last, "functionResponse")
    shortened = next(p for c in last for p in c["parts"] if p.get("functionResponse", {}).get("id") == "c2")
    assert "[tracetrim:" in shortened["functionResponse"]["response"]["result"]  # ADK's own key kept
    for contents in model.sent:
        check_gemini({"contents": contents}, {"contents": contents})
    assert plugin.last_result is not None and plugin.last_result.archive_ref
    # ADK keeps the session whole: every response is there in full
    kept = [p.function_response for e in events for p in (e.content.parts if e.content else []) or []]
    assert sorted(r.id for r in kept if r is not None) == ["c1", "c2", "c3", "c4"]
    assert all(BODY in (r.response or {})["result"] for r in kept if r is not None)


async def test_the_scope_comes_from_the_session() -> None:
    plugin = TracetrimPlugin(_compactor())
    await _run(plugin)
    outcome = plugin.last_result.outcome if plugin.last_result else None
    assert outcome is not None
    archive = plugin.strategy.archive  # type: ignore[attr-defined]
    assert await archive.list(tt.Scope("u1", "coder", "s1"))


async def test_shadow_sends_the_history_unchanged() -> None:
    model, _ = await _run(TracetrimPlugin(_compactor(tt.Mode.SHADOW)))
    assert _ids(model.sent[-1], "functionCall") == ["c1", "c2", "c3", "c4"]


async def test_below_the_trigger_nothing_is_planned() -> None:
    plugin = TracetrimPlugin(_compactor(), context_window=1_000_000)
    model, _ = await _run(plugin)
    assert plugin.budget.trigger_tokens == 600_000 and plugin.last_result is not None
    assert plugin.last_result.outcome is None  # not asked
    assert _ids(model.sent[-1], "functionCall") == ["c1", "c2", "c3", "c4"]


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="context_window"):
        TracetrimPlugin(_compactor(), context_window=-1)
