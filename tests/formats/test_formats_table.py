"""The format table: each format is told by shape, and reads and writes back losslessly (on the small
fixtures in ``tests/data/whole_files``, and on every real run in the shared data)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, SHAPES, require_data
from tracetrim._json import canonical_bytes
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.formats import (
    HISTORY_FORMATS,
    MESSAGES_KEY,
    READERS,
    FormatError,
    TrajectoryListError,
    detect_format,
    from_openai_chat,
    history_format,
    to_swe_agent_history,
    trajectory_list,
)

FILES = SHAPES / "whole_files"
TAU_RUNS = 6
SWE = sorted((DATA / "swe-agent").glob("*.traj"))
MINI = sorted((DATA / "mini-swe-agent").glob("*.traj.json"))


def _tau() -> list[dict[str, Any]]:
    """A tau-bench results list: the fixture's item once per task id."""
    item = json.loads((FILES / "airline.tau.json").read_text(encoding="utf-8"))
    return [{**item, "task_id": n} for n in range(TAU_RUNS)]


def _neutral_from_tau(n: int = 3) -> list[dict[str, Any]]:
    return from_openai_chat(_tau()[n]["traj"])


def _documents() -> dict[str, Any]:
    """One history per format: the fixtures as they are, the others written from the tau-bench run."""
    neutral = _neutral_from_tau()
    swe = json.loads((FILES / "fix.traj").read_text(encoding="utf-8"))
    mini = json.loads((FILES / "run.v1.traj.json").read_text(encoding="utf-8"))
    return {
        "neutral": {"messages": neutral, "goal": "rebook"},
        "openai": _tau()[3]["traj"],
        "responses": HISTORY_FORMATS["responses"].write_messages(neutral),
        "anthropic": HISTORY_FORMATS["anthropic"].write_messages(neutral),
        "bedrock": HISTORY_FORMATS["bedrock"].write_document(neutral),
        "gemini": HISTORY_FORMATS["gemini"].write_document(neutral),
        "langchain": HISTORY_FORMATS["langchain"].write_messages(neutral),
        "pydantic-ai": HISTORY_FORMATS["pydantic-ai"].write_messages(neutral),
        "swe-agent": swe,
        "mini-swe-agent": mini,
        "tau-bench": _tau()[3],
    }


def _native(document: Any, name: str) -> Any:
    """The part of a file a format's writer gives back: its messages (Anthropic: with ``system``)."""
    if isinstance(document, list):
        return document
    if name in ("anthropic", "bedrock"):
        return {k: document[k] for k in ("system", "messages") if k in document}
    if name == "gemini":  # the writer's list is "messages"; the file's, "contents"
        return {"systemInstruction": document["systemInstruction"], "messages": document["contents"]}
    return document[HISTORY_FORMATS[name].messages_key]


def test_the_table_covers_every_format_and_its_views_agree() -> None:
    assert list(HISTORY_FORMATS) == [
        "neutral",
        "openai",
        "responses",
        "anthropic",
        "bedrock",
        "gemini",
        "ollama",
        "ai-sdk",
        "agent-framework",
        "pydantic-ai",
        "langchain",
        "swe-agent",
        "mini-swe-agent",
        "tau-bench",
        "responses-request",
        "tau2",
        "inspect",
        "claude-code",
        "codex",
        "gemini-cli",
        "adk",
        "openhands",
        "openhands-v0",
        "opencode",
        "atif",
        "pi",
        "qwen-code",
        "kimi-cli",
        "roo-code",
        "cline",
        "continue",
        "copilot-cli",
    ]
    assert set(READERS) == set(HISTORY_FORMATS)
    assert MESSAGES_KEY == {
        "swe-agent": "history",
        "tau-bench": "traj",
        "gemini": "contents",
        "responses-request": "input",
        "atif": "steps",
        "adk": "events",
        "openhands-v0": "history",
        "continue": "history",
    }
    assert HISTORY_FORMATS["mini-swe-agent"].default_tools == ("bash",)
    with pytest.raises(FormatError, match=r"unknown format 'yaml'.*neutral"):
        history_format("yaml")


# the formats a shared tau-bench run can be written in; test_formats_agents covers the agents' own files
SHARED_FORMATS = (
    "neutral",
    "openai",
    "responses",
    "anthropic",
    "bedrock",
    "gemini",
    "langchain",
    "pydantic-ai",
    "swe-agent",
    "mini-swe-agent",
    "tau-bench",
)


@pytest.mark.parametrize("name", SHARED_FORMATS)
def test_each_format_is_told_by_shape_and_round_trips(name: str) -> None:
    document = _documents()[name]
    original = copy.deepcopy(document)
    assert detect_format(document) == name
    fmt = HISTORY_FORMATS[name]
    fields = document if isinstance(document, dict) else {}
    messages = document if isinstance(document, list) else document[fmt.messages_key]
    neutral = validate_messages(fmt.read(messages, fields))
    back = fmt.write_messages(neutral)
    assert canonical_bytes(back) == canonical_bytes(_native(document, name))
    assert document == original  # the caller's objects are never mutated
    calls = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    results = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    assert results and results <= calls


def test_bare_message_lists_are_told_apart() -> None:
    docs = _documents()
    assert detect_format(docs["anthropic"]["messages"]) == "anthropic"
    assert detect_format(docs["neutral"]["messages"]) == "neutral"
    assert detect_format(docs["mini-swe-agent"]["messages"]) == "mini-swe-agent"
    assert detect_format([]) == "neutral"
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    text = [{"type": "text", "text": "hi"}]
    assert detect_format([{"role": "system", "content": text}, {"role": "user", "content": text}]) == "openai"
    assert detect_format([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]) == "openai"
    assert detect_format([{"role": "user", "content": text}]) == "anthropic"  # no ids: not neutral
    assert detect_format([{"id": "m0", "role": "user", "content": text}]) == "neutral"


def test_a_list_of_trajectories_says_so_and_how_to_pick_one() -> None:
    data = _tau()
    assert trajectory_list(data) == "tau-bench"
    says = rf"list of {TAU_RUNS} tau-bench trajectories.*--item N \(0\.\.{TAU_RUNS - 1}\).*--all"
    with pytest.raises(TrajectoryListError, match=says):
        detect_format(data)
    runs = [{"messages": m["messages"]} for m in [_documents()["mini-swe-agent"]] * 2]
    assert trajectory_list(runs) == "mini-swe-agent"
    assert trajectory_list(data[3]["traj"]) is None  # a list of messages is one history
    with pytest.raises(FormatError, match="a JSON str: not a history format"):
        detect_format("text")
    with pytest.raises(FormatError, match="a JSON object with keys steps: not a history format"):
        detect_format({"steps": []})
    # another tool's history (a Continue session's items hold a message each) is not a SWE-agent .traj
    continue_session = {"sessionId": "s", "history": [{"message": {"role": "user", "content": "hi"}}]}
    with pytest.raises(FormatError, match="keys sessionId, history: not a history format"):
        detect_format(continue_session)
    assert detect_format({"history": [{"role": "system", "content": "x"}, 7]}) == "swe-agent"
    assert trajectory_list([continue_session, continue_session]) is None


@pytest.mark.data
def test_every_swe_agent_trajectory_writes_back_exactly() -> None:
    if not SWE:
        require_data(DATA / "swe-agent" / "function_calling_simple.traj")
    for path in SWE:
        history = json.loads(path.read_text(encoding="utf-8"))["history"]
        neutral = HISTORY_FORMATS["swe-agent"].read(history)
        assert canonical_bytes(to_swe_agent_history(neutral)) == canonical_bytes(history), path.name


def test_swe_agent_writer_keeps_a_shortened_observation_as_the_user_turn() -> None:
    history = [
        {"role": "system", "content": "you are an agent", "agent": "main"},
        {"role": "assistant", "content": "look\n```\nls -a\n```", "thought": "look", "action": "ls -a\n"},
        {"role": "user", "content": "README.md\nsetup.py", "agent": "main"},
    ]
    neutral = HISTORY_FORMATS["swe-agent"].read(history)
    neutral[2]["content"][0]["output"] = "README.md [shortened]"
    back = to_swe_agent_history(neutral)
    assert back[2] == {"role": "user", "content": "README.md [shortened]", "agent": "main"}
    assert back[1] == history[1]
    neutral[2]["content"][0]["output"] = [{"type": "image", "url": "x"}]
    with pytest.raises(SnapshotError, match=r"message 2.*must be text"):
        to_swe_agent_history(neutral)


@pytest.mark.data
@pytest.mark.parametrize("path", MINI[:: max(1, len(MINI) // 12)], ids=lambda p: p.name.split(".")[0])
def test_mini_swe_agent_runs_round_trip_with_every_call_paired(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    fmt = HISTORY_FORMATS[detect_format(data)]
    assert fmt.name == "mini-swe-agent"
    neutral = fmt.read(data["messages"])
    assert fmt.write_messages(neutral) == data["messages"]
    ids = [m["id"] for m in neutral]
    assert ids == [f"m{i}" for i in range(len(neutral))]  # derived from positions, stable across reads
    assert fmt.read(data["messages"]) == neutral


def test_langchain_reads_dumpd_form_too() -> None:
    from langchain_core.load import dumpd

    from tracetrim.formats import from_langchain_json, to_langchain

    neutral = _neutral_from_tau()
    dumped = [dumpd(m) for m in to_langchain(neutral)]
    assert detect_format(dumped) == "langchain"
    assert from_langchain_json(dumped) == from_langchain_json(
        HISTORY_FORMATS["langchain"].write_messages(neutral)
    )
    with pytest.raises(SnapshotError, match="message 1: expected a LangChain message as JSON"):
        from_langchain_json([dumped[0], {"kind": "human"}])
    with pytest.raises(SnapshotError, match="message 0: not a valid LangChain message"):
        from_langchain_json([{"type": "ai", "data": {"content": 3}}])


def test_anthropic_reads_the_top_level_system() -> None:
    doc = _documents()["anthropic"]
    fmt = HISTORY_FORMATS["anthropic"]
    neutral = fmt.read(doc["messages"], doc)
    assert neutral[0]["role"] == "system"
    assert fmt.write(neutral)["system"] == doc["system"]
    with pytest.raises(SnapshotError, match="'system' must be a string"):
        fmt.read(doc["messages"], {"system": 3})
