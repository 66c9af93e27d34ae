"""A compaction encodes the whole history at most twice, on every path: once to copy and fingerprint it
(the bytes an archive then stores), once to check that the host did not change it meanwhile (only when
the plan waited, so that another task could run); an entry point planning its own copy (the CLI, the
service, an adapter) only once. Each adapter's own test (tests/test_adapter_*.py) measures it through
the adapter."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._encode_counter import MAX_HISTORIES, OWNED_HISTORIES, counting_encodes
from tests._histories import tool_history, user
from tracetrim._json import canonical_bytes
from tracetrim._snapshot import copy_messages, encode_each
from tracetrim.archive import FileArchive, KeyValueArchive, MemoryStore, snapshot_document, snapshot_ref
from tracetrim.archive._protocol import snapshot_frame
from tracetrim.decision import BinaryQuestion, DecisionResponse, ScriptedDecisionModel
from tracetrim.formats import HISTORY_FORMATS, to_anthropic, to_openai_chat, to_openai_responses
from tracetrim.harness_adapter import compact_history

SCOPE = tt.Scope("user-1", "agent-1", "session-1")

Archives = Callable[[Path], Any]
ARCHIVES: dict[str, Archives] = {
    "file": lambda root: FileArchive(root),
    "memory": lambda root: KeyValueArchive(MemoryStore()),
}


def _compactor(mode: tt.Mode, archive: Any = None) -> tt.Compactor:
    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4)
    return tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=config,
        execution=tt.ExecutionOptions(mode=mode),
        archive=archive,
    )


def _offload(mode: tt.Mode, archive: Any = None) -> tt.OffloadStrategy:
    config = tt.OffloadConfig(mode="compact", keep_recent_count=2)
    return tt.OffloadStrategy(config=config, execution=tt.ExecutionOptions(mode=mode), archive=archive)


def _history() -> list[dict[str, Any]]:
    return tool_history(8, size=12_000)


STRATEGIES = {"compactor": _compactor, "offload": _offload}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("scope", [None, SCOPE], ids=["no scope", "scope"])
async def test_shadow_encodes_the_history_at_most_twice(strategy: str, scope: tt.Scope | None) -> None:
    history = _history()
    with counting_encodes(history) as count:
        outcome = await STRATEGIES[strategy](tt.Mode.SHADOW).plan(tt.CompactionRequest(history, scope=scope))
    assert (outcome.status, outcome.reason) == (tt.Status.DECIDED, "SHADOW_PROPOSAL")
    # At least once (every message; the list's brackets and commas are not encoded on their own).
    assert 0.99 <= count.histories <= MAX_HISTORIES


async def test_a_plan_that_never_waits_encodes_the_history_once() -> None:
    """The default in-process judge in SHADOW: no other task ran while it planned, so the history is
    not encoded again to check it."""
    history = _history()
    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4)
    compactor = tt.Compactor(config=config, execution=tt.ExecutionOptions(mode=tt.Mode.SHADOW))
    with counting_encodes(history) as count:
        outcome = await compactor.plan(tt.CompactionRequest(history, scope=SCOPE))
    assert outcome.status is tt.Status.DECIDED
    assert 0.99 <= count.histories <= OWNED_HISTORIES


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("archive", ARCHIVES)
async def test_enforce_encodes_the_history_at_most_twice_archive_included(
    strategy: str, archive: str, tmp_path: Path
) -> None:
    history = _history()
    store = ARCHIVES[archive](tmp_path)
    planner = STRATEGIES[strategy](tt.Mode.ENFORCE, store)
    with counting_encodes(history) as count:
        compacted = await planner.compact(tt.CompactionRequest(history, scope=SCOPE))
    assert compacted is not None and len(str(compacted)) < len(str(history))
    assert count.histories <= MAX_HISTORIES
    # what was stored without encoding it again is the history's own snapshot
    ref = snapshot_ref(SCOPE, history)
    assert await store.restore(SCOPE, ref) == history
    assert [entry.ref for entry in await store.list(SCOPE)] == [ref]


@pytest.mark.parametrize("trigger", [None, 10])
async def test_an_adapter_compaction_encodes_the_history_at_most_twice(trigger: int | None) -> None:
    history = _history()
    archive = KeyValueArchive(MemoryStore())
    with counting_encodes(history) as count:
        result = await compact_history(
            _compactor(tt.Mode.ENFORCE, archive), history, scope=SCOPE, trigger_tokens=trigger
        )
    assert result.messages is not None and result.archive_ref == snapshot_ref(SCOPE, history)
    assert count.histories <= MAX_HISTORIES


async def test_an_adapter_below_its_trigger_encodes_the_history_once() -> None:
    history = _history()
    with counting_encodes(history) as count:
        planner = _compactor(tt.Mode.ENFORCE, KeyValueArchive(MemoryStore()))
        result = await compact_history(planner, history, scope=SCOPE, trigger_tokens=10**9)
    assert result.messages is None and not result.planned
    assert count.histories == pytest.approx(1.0, rel=0.01)


def test_the_snapshot_frame_around_the_messages_is_the_snapshot_document() -> None:
    odd = {"role": "user", "z": "é✓\u2028", "content": [{"type": "text", "text": "x", "w": 1e-7}], "a": 2**70}
    for history in ([], [user("m0", "hi")], [*tool_history(2), odd]):
        head, tail = snapshot_frame(SCOPE)
        framed = head + b",".join(canonical_bytes(m) for m in history) + tail
        assert framed == canonical_bytes(snapshot_document(SCOPE, history))


def test_a_history_encoded_beforehand_is_copied_as_if_it_was_not() -> None:
    # 1e-7 and 2**70 are written by json, not orjson: such a message is copied and encoded afresh
    odd = {"role": "user", "content": [{"type": "text", "text": "x", "w": 1e-7, "n": 2**70}]}
    history = [*tool_history(2), odd]
    given = copy_messages(encode_each(history), keep_encoded=True)
    fresh = copy_messages(history, keep_encoded=True)
    assert given == fresh and given.messages == history
    assert given.messages[0] is not history[0]


@pytest.mark.parametrize("mode", [tt.Mode.SHADOW, tt.Mode.ENFORCE])
async def test_a_value_changed_in_place_while_planning_is_noticed(mode: tt.Mode) -> None:
    history = tool_history(4)
    original = copy.deepcopy(history)

    async def meddling(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        history[1]["content"][0]["text"] = "edited while planning"
        return DecisionResponse(model="m", answers=dict.fromkeys(questions, 0.0))

    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4)
    archive = KeyValueArchive(MemoryStore())
    execution = tt.ExecutionOptions(mode=mode)
    compactor = tt.Compactor(meddling, config=config, execution=execution, archive=archive)
    outcome = await compactor.plan(tt.CompactionRequest(history, scope=SCOPE))
    assert (outcome.status, outcome.reason) == (tt.Status.ERROR, "TRANSCRIPT_CHANGED")
    assert history != original


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from tracetrim.cli import main

    assert main(argv) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


ARCHIVE_SCOPE = ["--user", SCOPE.user_id, "--agent", SCOPE.agent_id, "--session", SCOPE.session_id]


WRITERS: dict[str, Callable[[list[dict[str, Any]]], list[Any]]] = {
    "neutral": list,
    "openai": to_openai_chat,
    "anthropic": lambda history: list(to_anthropic(history)["messages"]),
    "responses": to_openai_responses,
}
"""Formats whose messages carry no ids get each neutral id from a digest of the message's content:
one more pass over the history (``also``), so at most twice in all."""


def _in_format(fmt: str) -> tuple[list[Any], list[Any]]:
    """The history in ``fmt`` and, read back, as neutral messages (what the entry point plans)."""
    native = WRITERS[fmt](_history())
    return native, HISTORY_FORMATS[fmt].read(native)


@pytest.mark.parametrize("fmt", WRITERS)
@pytest.mark.parametrize("mode", ["shadow", "enforce"])
def test_cli_compact_encodes_the_history_once(
    mode: str, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    native, history = _in_format(fmt)
    source = tmp_path / "history.json"
    source.write_text(json.dumps(native))
    archive = ["--archive", f"file:{tmp_path / 'archive'}", *ARCHIVE_SCOPE] if mode == "enforce" else []
    argv = ["compact", str(source), "--eligible-tools", "read_file", "--model-backend", "learned"]
    with counting_encodes(history, native if fmt != "neutral" else ()) as count:
        document = _cli([*argv, "--format", fmt, "--mode", mode, *archive], capsys)
    assert document["changed"] is (mode == "enforce") and document["reason"].endswith("_PROPOSAL")
    # its own copy: encoded once (plus the ids' digests where the format has none)
    assert count.histories <= (OWNED_HISTORIES if fmt == "neutral" else MAX_HISTORIES)


@pytest.mark.parametrize("mode", ["shadow", "enforce"])
def test_cli_offload_encodes_the_history_once(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history()
    source = tmp_path / "history.json"
    source.write_text(json.dumps(history))
    archive = ["--archive", f"file:{tmp_path / 'archive'}", *ARCHIVE_SCOPE] if mode == "enforce" else []
    argv = ["offload", str(source), "--mode", "compact", "--keep-recent", "2"]
    with counting_encodes(history) as count:
        document = _cli([*argv, "--max-tool-message-tokens", "100", *archive], capsys)
    assert document["changed"] is (mode == "enforce") and document["reason"].endswith("_PROPOSAL")
    assert count.histories <= OWNED_HISTORIES  # its own copy: encoded once


@pytest.mark.parametrize("fmt", ["neutral", "openai"])
@pytest.mark.parametrize("mode", ["shadow", "enforce"])
def test_a_service_compaction_encodes_the_history_once(
    mode: str, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan's encodes, not the answer's: the answer's bytes carry the history by design, so they
    are rendered here with the standard library, which the counter does not see (as the CLI's output)."""
    pytest.importorskip("uvicorn")
    monkeypatch.setattr(
        "tracetrim.service._app.render_json",
        lambda document: json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode(),
    )
    import httpx

    from tests._asgi import ThreadedServer
    from tracetrim.service import ServiceSettings, create_app

    native, history = _in_format(fmt)
    settings = ServiceSettings(model=ScriptedDecisionModel({}, default=0.0), archive=FileArchive(tmp_path))
    body = {
        "messages": native,
        "format": fmt,
        "eligible_tool_names": ["read_file"],
        "options": {"mode": mode, "preserve_recent_messages": 4},
        "scope": SCOPE.as_dict(),
    }
    also = native if fmt != "neutral" else ()
    app = create_app(settings)
    with ThreadedServer(app, lifespan="on") as server, counting_encodes(history, also) as count:
        answer = httpx.post(f"{server.url}/v1/compact_context", json=body, timeout=30).json()
    assert answer["changed"] is (mode == "enforce") and answer["reason"].endswith("_PROPOSAL")
    # its own copy of the body: encoded once (plus the ids' digests where the format has none)
    assert count.histories <= (OWNED_HISTORIES if fmt == "neutral" else MAX_HISTORIES)


async def test_a_hosts_own_list_through_compact_history_is_still_checked_for_changes() -> None:
    # Only an adapter's own conversion (private=True) skips the final check; a host's list keeps it.
    history = tool_history(4)
    edits: list[str] = []

    async def meddling(state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]) -> DecisionResponse:
        edits.append(f"edit {len(edits)} made while planning")
        history[1]["content"][0]["text"] = edits[-1]
        return DecisionResponse(model="m", answers=dict.fromkeys(questions, 0.0))

    config = tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4)
    execution = tt.ExecutionOptions(mode=tt.Mode.ENFORCE)
    archive = KeyValueArchive(MemoryStore())
    compactor = tt.Compactor(meddling, config=config, execution=execution, archive=archive)
    for trigger in (None, 10):
        result = await compact_history(compactor, history, scope=SCOPE, trigger_tokens=trigger)
        assert result.messages is None and result.outcome is not None
        assert result.outcome.reason == "TRANSCRIPT_CHANGED"
    assert len(edits) == 2
