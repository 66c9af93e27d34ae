"""Google ADK sessions: a session ``adk run --save_session`` wrote (the real ``google-adk``), compacted by
the CLI, loads back into ADK and resumes as ``adk run --resume`` does; the contents ADK's own request
builder then sends keep Gemini's rules. The model is a scripted ``BaseLlm`` (no network)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.events._internal_metadata import mark_restored
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.sessions import Session
from google.genai import types

from tests._agent_rules import check_adk
from tests._compact_plans import cli_compact
from tracetrim._snapshot import SnapshotError
from tracetrim.formats import HISTORY_FORMATS, detect_format, from_adk, to_adk

SESSION = Path(__file__).parents[1] / "data" / "agents" / "adk_session.json"


class _Recording(BaseLlm):
    """Answers every request with one line of text and keeps the contents it was sent."""

    model: str = "scripted"
    sent: list[list[dict[str, Any]]]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.sent.append(
            [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in llm_request.contents]
        )
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


def _read_file(path: str) -> str:
    """Read a file."""
    return path


async def _resume(text: str) -> list[dict[str, Any]]:
    """What ADK sends the model on the next turn of a session resumed from ``text``, as ``adk run
    --resume`` resumes one (a new session, the file's events appended as restored)."""
    model = _Recording(sent=[])
    runner = InMemoryRunner(agent=LlmAgent(name="coder", model=model, tools=[_read_file]), app_name="fixer")
    loaded = Session.model_validate_json(text)
    session = await runner.session_service.create_session(app_name="fixer", user_id="u1", state=loaded.state)
    for event in loaded.events:
        await runner.session_service.append_event(session, mark_restored(event))
    message = types.Content(role="user", parts=[types.Part(text="and now?")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        pass
    return model.sent[0]


def test_a_saved_session_reads_and_writes_back_as_it_was() -> None:
    session = json.loads(SESSION.read_text(encoding="utf-8"))
    sent = copy.deepcopy(session)
    assert detect_format(session) == "adk"
    assert detect_format(session["events"]) == "adk"
    shape = HISTORY_FORMATS["adk"]
    neutral = shape.read(session["events"], {k: v for k, v in session.items() if k != "events"})
    assert session == sent, "the caller's session was mutated"
    back = shape.write_document(neutral)
    assert back == session and list(back) == list(session)
    ids = [e["id"] for e in session["events"] if e.get("content")]
    assert [m["id"] for m in neutral if m["content"]] == ids  # each message is its event


def test_compacted_by_the_cli_it_resumes_in_adk(tmp_path: Path) -> None:
    out = cli_compact(SESSION, tmp_path / "archive")
    assert "read as adk" in out.stderr
    written = json.loads(out.stdout)
    original = json.loads(SESSION.read_text(encoding="utf-8"))
    check_adk(written, original)
    assert len(out.stdout) < len(SESSION.read_text(encoding="utf-8")), "nothing was compacted"
    Session.model_validate_json(out.stdout)  # ADK loads it
    contents = asyncio.run(_resume(out.stdout))
    check_adk(
        {"events": [{"id": str(n), "invocationId": "i", "content": c} for n, c in enumerate(contents)]},
        {"events": []},
    )
    # ADK takes its own call ids off before it sends: calls and answers meet by name, in order
    calls = [p["functionCall"]["name"] for c in contents for p in c["parts"] if "functionCall" in p]
    answers = [p["functionResponse"]["name"] for c in contents for p in c["parts"] if "functionResponse" in p]
    assert calls == answers and calls


def test_adk_compaction_and_quiet_events_are_carried_in_place() -> None:
    session = json.loads(SESSION.read_text(encoding="utf-8"))
    events = session["events"]
    summary = {"role": "model", "parts": [{"text": "what came before"}]}
    compacted = {
        **events[0],
        "content": None,
        "id": "cmp",
        "actions": {"compaction": {"compactedContent": summary}},
    }
    quiet = {**events[0], "id": "state", "actions": {"stateDelta": {"k": 1}}}
    del compacted["content"], quiet["content"]
    mixed = [*events[:3], compacted, *events[3:5], quiet, *events[5:]]
    neutral = from_adk(mixed)
    judged = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    before = {
        p["functionCall"]["id"] for e in events[:3] for p in e["content"]["parts"] if "functionCall" in p
    }
    assert before and not before & judged  # ADK shows its summary instead: never judged
    assert to_adk(neutral) == mixed


@pytest.mark.parametrize(
    ("events", "where"),
    [
        ("not a list", "must be a list"),
        (["x"], "message 0"),
        ([{"author": "user", "invocationId": "i", "content": []}], "message 0, field 'content'"),
        (
            [{"author": "user", "invocationId": "i", "content": {"role": "bot", "parts": [{"text": "x"}]}}],
            "message 0, field 'role'",
        ),
        (  # named by the event, not by its place among the turns
            [
                {"author": "user", "invocationId": "i", "actions": {"stateDelta": {"k": 1}}},
                {"author": "user", "invocationId": "i", "content": {"role": "user", "parts": ["not a part"]}},
            ],
            "message 1, block 0",
        ),
    ],
)
def test_bad_events_name_their_place(events: Any, where: str) -> None:
    with pytest.raises(SnapshotError) as caught:
        from_adk(events)
    assert where in str(caught.value)


def test_an_event_written_for_a_message_that_had_none_resumes_as_a_turn() -> None:
    """A message the session held no event for (a summary offload wrote, a note a host added) becomes an
    event with the author ADK needs: a user turn the user's, a model turn the session's agent's. ADK
    sends both as turns, not as an unknown agent's quoted transcript."""
    session = json.loads(SESSION.read_text(encoding="utf-8"))
    shape = HISTORY_FORMATS["adk"]
    neutral = shape.read(session["events"], {k: v for k, v in session.items() if k != "events"})
    neutral += [
        {"id": "note", "role": "user", "content": [{"type": "text", "text": "A note the host added."}]},
        {"id": "reply", "role": "assistant", "content": [{"type": "text", "text": "Noted, going on."}]},
    ]
    written = shape.write_document(neutral)
    authors = [e.get("author") for e in written["events"][-2:]]
    agent = next(e["author"] for e in session["events"] if e.get("author") not in (None, "user"))
    assert authors == ["user", agent]
    assert shape.write_document(neutral) == written  # the same ids each time
    contents = asyncio.run(_resume(json.dumps(written)))
    texts = [p.get("text") for c in contents for p in c["parts"]]
    assert "A note the host added." in texts and "Noted, going on." in texts
    assert not any("For context" in (t or "") for t in texts)


def test_a_history_from_another_format_is_refused_naming_why() -> None:
    """A history no ADK session held does not say which agent wrote its model turns: refused."""
    from tests._foreign_histories import foreign_histories

    with pytest.raises(SnapshotError, match="name the agent"):
        HISTORY_FORMATS["adk"].write_document(foreign_histories()["agentscope"])
