"""OpenCode itself writes a session and goes on with the one tracetrim writes back: the real CLI
(``opencode-linux-x64``, pinned in ``tests/js``) runs a scripted task (a file read and shell commands on real
files), its session is exported, compacted, imported again (``opencode import``) and resumed
(``opencode run --session``). The Anthropic request OpenCode then sends keeps the Messages API's rules:
every ``tool_use`` answered by a ``tool_result`` in the next message, no result without its call; every
call as first sent, every result as first sent or marked shortened, and only the calls the file keeps.

OpenCode talks to a stub of the Messages API on 127.0.0.1 (`tests._api_stub`: the real API is not
reachable here). ``.ci/run`` installs the CLI (``npm ci --prefix tests/js``); without it the tests skip
outside CI and fail in CI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._compact_plans import RESUME_PLANS, compact
from tests._opencode_runs import CLI, FIXTURE, resumed, session_opencode_writes
from tests.conftest import service_unavailable
from tracetrim.formats import HISTORY_FORMATS, detect_format


def _cli() -> None:
    if not CLI.exists():
        service_unavailable("OpenCode is not installed (npm ci --prefix tests/js, on Linux x64)")


def _written(document: dict[str, Any], plan: dict[str, Any] | None) -> dict[str, Any]:
    shape = HISTORY_FORMATS["opencode"]
    neutral = shape.read(document["messages"], {"info": document["info"]})
    return shape.write_document(compact(neutral, plan) if plan is not None else neutral)


def _blocks(messages: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    key = "id" if kind == "tool_use" else "tool_use_id"
    return {
        b[key]: b
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == kind
    }


def _check(messages: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    """The Messages API's pairing rules on what OpenCode sent; calls and results as first sent."""
    calls, results = _blocks(sent, "tool_use"), _blocks(sent, "tool_result")
    for k, message in enumerate(messages):
        content = message["content"] if isinstance(message["content"], list) else []
        assert content or message["content"], ("an empty message", k)
        for block in content:
            if block.get("type") == "tool_use":
                assert {**block, "cache_control": None} == {**calls[block["id"]], "cache_control": None}
                answers = messages[k + 1]["content"] if k + 1 < len(messages) else []
                assert any(b.get("tool_use_id") == block["id"] for b in answers), ("unanswered", block["id"])
            elif block.get("type") == "tool_result":
                before = messages[k - 1]["content"] if k else []
                assert any(b.get("id") == block["tool_use_id"] for b in before), (
                    "no call",
                    block["tool_use_id"],
                )
                same = {**block, "cache_control": None} == {
                    **results[block["tool_use_id"]],
                    "cache_control": None,
                }
                assert same or "tracetrim" in json.dumps(block), (
                    "a result not as sent",
                    block["tool_use_id"],
                )


@pytest.fixture(scope="module")
def written_by_opencode(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _cli()
    return session_opencode_writes(tmp_path_factory.mktemp("opencode-run"))


def test_a_session_opencode_exports_reads_and_writes_back_as_exported(
    written_by_opencode: dict[str, Any],
) -> None:
    document = written_by_opencode
    assert detect_format(document) == "opencode"
    assert _written(document, None) == document
    neutral = HISTORY_FORMATS["opencode"].read(document["messages"], {"info": document["info"]})
    assert [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"] == [
        "toolu_01",
        "toolu_02",
        "toolu_03",
    ]


PLANS = {**RESUME_PLANS, "drop-all-silently": {"actions": ["drop_call"], "tombstones": False, "recent": 1}}
"""The agents' resume plans, and every pair dropped without tombstones: assistant messages left with only
their step parts, which OpenCode does not send."""


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_opencode_resumes_what_tracetrim_writes(
    plan: str, written_by_opencode: dict[str, Any], tmp_path: Path
) -> None:
    document = written_by_opencode
    written = _written(document, PLANS[plan])
    assert (written == document) == (plan == "as-read")
    sent = resumed(document, tmp_path / "before")
    after = resumed(written, tmp_path / "after")
    _check(sent, sent)
    _check(after, sent)
    kept = {p["callID"] for m in written["messages"] for p in m["parts"] if p.get("type") == "tool"}
    assert set(_blocks(after, "tool_use")) == set(_blocks(sent, "tool_use")) & kept
    if plan == "drop-all":
        assert not kept and "tracetrim" in json.dumps(after)


def test_the_fixture_is_a_session_opencode_wrote() -> None:
    """The file in tests/data (written by `python tests/_opencode_runs.py`) reads and writes back whole."""
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert document["info"]["version"] and detect_format(document) == "opencode"
    assert _written(document, None) == document


def test_a_compacted_session_replaces_its_original_in_place(tmp_path: Path) -> None:
    """The flow a user runs: export, compact, delete the session, import the compacted one into the
    same OpenCode, go on: the dropped calls are no longer sent, their tombstones are."""
    _cli()
    home = tmp_path / "run"
    document = session_opencode_writes(home)
    sent = resumed(document, tmp_path / "elsewhere")
    written = _written(document, PLANS["drop-all"])
    after = resumed(written, home, replacing=True)
    _check(after, sent)
    assert not _blocks(after, "tool_use") and not _blocks(after, "tool_result")
    assert json.dumps(after).count("[tracetrim: dropped") == 3
