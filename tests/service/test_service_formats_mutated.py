"""Real agent files broken in a few places, sent to ``POST /v1/compact_context`` in their own format.

The same seeds and mutations as ``tests/formats/test_formats_mutated.py`` (`tests._format_mutations`),
through the service's path instead of the command line's: the ``messages`` of each file (with its
``system``), its format named or left to ``auto``, planned in ENFORCE with a real file archive or in
SHADOW by the embedded judge. Whatever the file, the answer is a 4xx naming a field or a 200; a
history the service hands back (``messages`` when changed, ``proposal`` in SHADOW) is one the service
reads again in that format; and the archived original comes back from ``/v1/restore`` with ``format:
"sent"`` as the very array that was sent.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._format_mutations import Seed, mutate, seeds
from tests._service_app import require_service_extra
from tracetrim.archive import FileArchive
from tracetrim.decision import LearnedDecisionModel
from tracetrim.formats import HISTORY_FORMATS

SCOPE = {"user_id": "u", "agent_id": "a", "session_id": "s"}
SEEDS = tuple(seed for seed in seeds() if not seed.runs)  # a file of many runs is not one history


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    require_service_extra()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from tracetrim.service import ServiceSettings, create_app

    archive = FileArchive(Path(tmp_path_factory.mktemp("mutated")))
    app = create_app(ServiceSettings(model=LearnedDecisionModel(), archive=archive, budget_s=20))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as test_client:
        yield test_client


def _parts(seed: Seed, value: Any) -> tuple[Any, Any]:
    """A file's ``messages`` and ``system`` as a client sends them (the file itself where it is a list)."""
    if not isinstance(value, dict):
        return value, None
    fmt = HISTORY_FORMATS[seed.format]
    try:
        holder = fmt.holder(value)  # an Agent Framework session keeps its messages in its state
    except ValueError:
        holder = value
    return holder.get(fmt.messages_key), holder.get("system")


@functools.cache
def _tools(name: str) -> list[str]:
    """The tool names the unbroken file calls: what a client would make eligible."""
    seed = next(s for s in SEEDS if s.name == name)
    messages, system = _parts(seed, seed.value())
    fmt = HISTORY_FORMATS[seed.format]
    neutral = fmt.read(messages, {"system": system} if system is not None else {})
    return sorted({b["name"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}) or ["bash"]


@st.composite
def requests(draw: st.DrawFn) -> tuple[Seed, dict[str, Any]]:
    """A seed and the body of a compaction request for its file with one to three places broken."""
    seed = draw(st.sampled_from(SEEDS))
    messages, system = _parts(seed, mutate(seed.value(), draw(st.data())))
    keep = draw(st.sampled_from([0.5, 0.999]))
    body: dict[str, Any] = {
        "messages": messages,
        "format": draw(st.sampled_from([seed.format, "auto"])),
        "eligible_tool_names": _tools(seed.name),
        "scope": SCOPE,
        "options": {
            "mode": draw(st.sampled_from(["enforce", "shadow"])),
            "keep_threshold": keep,
            "preserve_recent_messages": draw(st.sampled_from([0, 2])),
            "minimum_reduction": 0,
        },
    }
    if system is not None:
        body["system"] = system
    return seed, body


def _again(client: Any, body: dict[str, Any], answer: dict[str, Any], key: str) -> None:
    """The history the service handed back under ``key`` is read again in its format."""
    resent = {**body, "messages": answer[key], "format": answer.get("format", "neutral")}
    resent["options"] = {**body["options"], "mode": "shadow"}
    if "system" in answer:
        resent["system"] = answer["system"]
    response = client.post("/v1/compact_context", json=resent)
    assert response.status_code == 200, (key, response.text[:600])


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(request=requests())
def test_broken_files_are_compacted_or_refused_by_field(
    client: Any, request: tuple[Seed, dict[str, Any]]
) -> None:
    seed, body = request
    response = client.post("/v1/compact_context", json=body)
    assert response.status_code < 500, (seed.name, response.text[:600])
    answer = response.json()
    if response.status_code != 200:
        assert answer["error"]["field"], (seed.name, answer)
        return
    assert answer["reason"] != "INTERNAL_ERROR", (seed.name, answer["detail"])
    if answer["proposal"] is not None:
        _again(client, body, answer, "proposal")
    if not answer["changed"]:
        return
    _again(client, body, answer, "messages")
    restore = {"scope": SCOPE, "archive_ref": answer["archive_ref"], "format": "sent"}
    restored = client.post("/v1/restore", json=restore)
    assert restored.status_code == 200, restored.text[:600]
    sent = json.loads(restored.json()["sent"])
    expected = (
        body["messages"] if "system" not in body else {"system": body["system"], "messages": body["messages"]}
    )
    assert sent == expected, seed.name
