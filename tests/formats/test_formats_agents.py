"""The history files today's agents write: Claude Code, Codex CLI, Kimi CLI, OpenHands (SDK and V0),
ATIF, Roo Code, Cline, tau2-bench, Inspect AI eval logs, Google ADK sessions and request bodies are
detected by shape, read, written back unchanged, and compacted in ENFORCE into a file of the same format
whose other entries stay where they were.

Fixtures are in tests/data/agents (see its README for where each shape comes from).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._compact_plans import RESUME_PLANS, compact
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import (
    HISTORY_FORMATS,
    FormatError,
    JsonLines,
    TrajectoryListError,
    detect_format,
    dump_jsonl,
    parse_history_text,
    trajectory_items,
    trajectory_list,
)

DATA = Path(__file__).parents[1] / "data" / "agents"
SCOPE = tt.Scope("user-1", "agent-1", "session-1")

# file, format, the tools the agent calls (all eligible)
FILES = [
    ("claude_code_session.jsonl", "claude-code", ("Read", "Bash", "Grep")),
    ("codex_rollout.jsonl", "codex", ("shell",)),
    ("openhands_events.json", "openhands", ("terminal",)),
    ("openhands_v0_trajectory.json", "openhands-v0", ("execute_bash", "str_replace_editor", "think")),
    ("atif_trajectory.json", "atif", ("bash",)),
    ("tau2_results.json", "tau2", ("get_user_details", "get_reservation_details", "cancel_reservation")),
    ("request_openai.json", "openai", ("read_file", "run")),
    ("request_anthropic.json", "anthropic", ("read_file", "run")),
    ("request_responses.json", "responses-request", ("read_file", "run")),
    ("adk_session.json", "adk", ("read_file",)),
    ("inspect_log.json", "inspect", ("read_file", "run")),
    ("opencode_session.json", "opencode", ("read", "bash")),
    ("pi_session.jsonl", "pi", ("read", "bash", "edit")),
    ("qwen_code_session.jsonl", "qwen-code", ("read_file", "run_shell_command", "edit")),
    ("kimi_cli_context.jsonl", "kimi-cli", ("ReadFile", "Grep", "Shell", "StrReplaceFile")),
    ("roo_code_history.json", "roo-code", ("read_file", "execute_command", "apply_diff")),
    ("roo_code_history_v2.json", "roo-code", ("read_file", "search_files", "apply_diff", "execute_command")),
    ("cline_history.json", "cline", ("read_file", "execute_command", "search_files", "replace_in_file")),
    ("cline_history_text_tools.json", "cline", ("read_file", "execute_command", "search_files")),
    ("agent_framework_messages.json", "agent-framework", ("read_file", "run")),
    ("agent_framework_session.json", "agent-framework", ("read_file", "run")),
    ("continue_session.json", "continue", ("Read", "List", "Bash", "Edit")),
    ("copilot_cli_session.jsonl", "copilot-cli", ("view", "bash", "edit")),
]
IDS = [f[0].split(".")[0] if f[1] in ("roo-code", "cline", "agent-framework") else f[1] for f in FILES]
TOOLS = {fmt: tools for _, fmt, tools in FILES if fmt not in ("roo-code", "cline")}


def _text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _one(name: str) -> Any:
    """The file's one history (the first simulation of a tau2 results file)."""
    data = parse_history_text(_text(name))
    return trajectory_items(data)[0] if trajectory_list(data) else data


def _split(data: Any, fmt: str) -> tuple[list[Any], dict[str, Any]]:
    """The list a reader takes and the file's other fields, as the CLI splits them."""
    if isinstance(data, list):
        return data, {}
    key = HISTORY_FORMATS[fmt].messages_key
    holder = HISTORY_FORMATS[fmt].holder(data)
    return holder[key], {k: v for k, v in holder.items() if k != key}


def _written(data: Any, fmt: str, neutral: list[Any]) -> Any:
    """What the format writes for ``neutral``, shaped as ``data`` (a list, or the whole object)."""
    if isinstance(data, list):
        return HISTORY_FORMATS[fmt].write(neutral)["messages"]
    return HISTORY_FORMATS[fmt].with_holder(data, HISTORY_FORMATS[fmt].write_document(neutral))


def _dumped(data: Any, original: str) -> str:
    if isinstance(data, JsonLines):
        return dump_jsonl(data)
    return json.dumps(data, indent=2, ensure_ascii=False) + ("\n" if original.endswith("\n") else "")


def _calls_and_results(fmt: str, neutral: list[Any]) -> tuple[set[str], set[str]]:
    calls = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    results = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"}
    return calls, results


@pytest.mark.parametrize(("name", "fmt", "tools"), FILES, ids=IDS)
def test_detected_by_shape(name: str, fmt: str, tools: tuple[str, ...]) -> None:
    assert detect_format(_one(name)) == fmt


@pytest.mark.parametrize(("name", "fmt", "tools"), FILES, ids=IDS)
def test_read_then_written_back_is_the_same_file_byte_for_byte(
    name: str, fmt: str, tools: tuple[str, ...]
) -> None:
    text = _text(name)
    data = _one(name)
    original = copy.deepcopy(data)
    messages, fields = _split(data, fmt)
    neutral = HISTORY_FORMATS[fmt].read(messages, fields)
    back = _written(data, fmt, neutral)
    assert data == original  # the caller's input is never mutated
    assert back == data and list(back) == list(data)
    calls, results = _calls_and_results(fmt, neutral)
    assert calls and calls == results  # every call the agent made is read, with its result
    # a results file or log holds more than the one run read here; Kimi CLI writes its records and its
    # messages in two JSON styles, which restore gives back from the bytes sent (test_formats_kimi_cli)
    if fmt not in ("tau2", "inspect", "kimi-cli"):
        assert _dumped(back, text) == text


async def _enforce(
    neutral: list[Any], tools: tuple[str, ...], model: Any, *, tombstones: bool = False
) -> list[Any]:
    config = tt.CompactorConfig(eligible_tools=set(tools), preserve_recent_messages=2, tombstones=tombstones)
    archive = KeyValueArchive(MemoryStore())
    compactor = tt.Compactor(
        model,
        config=config,
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE, budget_s=10.0),
        archive=archive,
    )
    outcome = await compactor.plan(tt.CompactionRequest(neutral, scope=SCOPE))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    assert await archive.restore(SCOPE, outcome.plan.archive_ref) == neutral
    return list(outcome.plan.messages)


def _others(data: Any, fmt: str) -> Any:
    """What a file holds besides the tool traffic tracetrim may judge: the entries and fields a
    compaction must keep as they were."""
    if fmt == "cline":  # every message in its place, with its role and Cline's fields
        return [{k: v for k, v in m.items() if k != "content"} for m in data]
    if fmt == "agent-framework":  # what the user said, as it was, and a session's other keys
        messages, _ = _split(data, fmt)
        fields = {k: v for k, v in data.items() if k != "state"} if isinstance(data, dict) else {}
        return [m for m in messages if m["role"] in ("user", "system")], fields
    if fmt == "roo-code":  # the messages Roo Code no longer sends, and a versioned file's version
        from tracetrim.formats._carrier import split_carriers

        items, fields = _split(data, fmt)
        carried, _ = split_carriers(HISTORY_FORMATS[fmt].read(items, fields), "roo_code")
        return [entry for run in carried for entry in run], fields
    if fmt == "kimi-cli":  # its records, their token counts aside (brought down by what went)
        from tracetrim.formats._carrier import split_carriers

        carried, _ = split_carriers(HISTORY_FORMATS[fmt].read(data, {}), "kimi_cli")
        return [{k: v for k, v in e.items() if k != "token_count"} for run in carried for e in run]
    if fmt == "copilot-cli":  # its other events but a dropped call's own; one whose parent went names another
        from tracetrim.formats._carrier import split_carriers

        carried, _ = split_carriers(HISTORY_FORMATS[fmt].read(data, {}), "copilot_cli")
        events = [e for run in carried for e in run if "toolCallId" not in e["data"]]
        return [{k: v for k, v in e.items() if k != "parentId"} for e in events]
    if fmt in ("claude-code", "codex", "openhands", "openhands-v0", "pi", "qwen-code"):
        from tracetrim.formats._carrier import split_carriers
        from tracetrim.formats._table import HISTORY_FORMATS as table

        neutral = table[fmt].read(data, {})
        meta = {"claude-code": "claude_code", "codex": "codex", "qwen-code": "qwen_code"}.get(fmt, fmt)
        carried, _ = split_carriers(neutral, meta)
        if fmt == "pi":  # a pi entry whose parent (first kept entry, origin) went names one kept instead
            relinked = ("parentId", "firstKeptEntryId", "fromId")
            return [{k: v for k, v in e.items() if k not in relinked} for run in carried for e in run]
        if fmt == "qwen-code":  # so does a Qwen Code record
            return [{k: v for k, v in e.items() if k != "parentUuid"} for run in carried for e in run]
        return [entry for run in carried for entry in run]
    return {k: v for k, v in data.items() if k != HISTORY_FORMATS[fmt].messages_key}


DROP_ALL = ScriptedDecisionModel({}, default=0.0)


def _shorten_all() -> ScriptedDecisionModel:
    return ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.0)


@pytest.mark.parametrize("tombstones", [False, True], ids=["plain", "tombstones"])
@pytest.mark.parametrize(("name", "fmt", "tools"), FILES, ids=IDS)
async def test_dropping_every_pair_keeps_the_rest_and_the_format(
    name: str, fmt: str, tools: tuple[str, ...], tombstones: bool
) -> None:
    data = _one(name)
    messages, fields = _split(data, fmt)
    neutral = HISTORY_FORMATS[fmt].read(messages, fields)
    compacted = await _enforce(neutral, tools, ScriptedDecisionModel({}, default=0.0), tombstones=tombstones)
    written = _written(data, fmt, compacted)
    if isinstance(data, JsonLines):
        written = parse_history_text(dump_jsonl(written))
    assert detect_format(written) == fmt
    again = HISTORY_FORMATS[fmt].read(*_split(written, fmt))
    calls, results = _calls_and_results(fmt, again)
    assert calls == results  # no call without its result, no result without its call
    before, _ = _calls_and_results(fmt, neutral)
    if fmt == "cline":  # Cline names its messages by index: a drop keeps the call and leaves a stub result
        assert calls == before and "was removed; recall it by call id" in json.dumps(written)
        assert [len(m["content"]) for m in written] == [len(m["content"]) for m in data]
    else:
        assert calls < before  # something was dropped
    assert _others(written, fmt) == _others(data, fmt)
    assert _dumped(written, "") != _dumped(data, "")


@pytest.mark.parametrize(("name", "fmt", "tools"), FILES, ids=IDS)
async def test_shortened_results_keep_every_call_with_its_result(
    name: str, fmt: str, tools: tuple[str, ...]
) -> None:
    data = _one(name)
    messages, fields = _split(data, fmt)
    neutral = HISTORY_FORMATS[fmt].read(messages, fields)
    compacted = await _enforce(neutral, tools, _shorten_all())
    written = _written(data, fmt, compacted)
    assert detect_format(written) == fmt
    again = HISTORY_FORMATS[fmt].read(*_split(written, fmt))
    calls, results = _calls_and_results(fmt, again)
    assert calls == results == _calls_and_results(fmt, neutral)[0]
    assert _others(written, fmt) == _others(data, fmt)
    assert len(json.dumps(written)) < len(json.dumps(data))


def test_claude_code_before_the_last_compact_boundary_is_never_judged() -> None:
    data = _one("claude_code_session.jsonl")
    neutral = HISTORY_FORMATS["claude-code"].read(data, {})
    calls, _ = _calls_and_results("claude-code", neutral)
    assert "toolu_01Old" not in calls and {"toolu_01A", "toolu_01B", "toolu_01C"} <= calls


async def test_claude_code_chain_stays_whole_after_a_drop() -> None:
    data = _one("claude_code_session.jsonl")
    neutral = HISTORY_FORMATS["claude-code"].read(data, {})
    compacted = await _enforce(neutral, ("Read", "Bash", "Grep"), ScriptedDecisionModel({}, default=0.0))
    written = HISTORY_FORMATS["claude-code"].write(compacted)["messages"]
    uuids = {e["uuid"] for e in written if "uuid" in e}
    assert all(e["parentUuid"] in uuids for e in written if e.get("parentUuid") is not None)


def test_codex_before_the_last_compacted_line_is_never_judged() -> None:
    data = _one("codex_rollout.jsonl")
    calls, _ = _calls_and_results("codex", HISTORY_FORMATS["codex"].read(data, {}))
    assert calls == {"call_A", "call_B", "call_C"}


async def test_atif_steps_are_numbered_in_order_after_a_drop() -> None:
    data = _one("atif_trajectory.json")
    neutral = HISTORY_FORMATS["atif"].read(*_split(data, "atif"))
    compacted = await _enforce(neutral, ("bash",), ScriptedDecisionModel({}, default=0.0))
    written = HISTORY_FORMATS["atif"].write_document(compacted)
    assert [s["step_id"] for s in written["steps"]] == list(range(1, len(written["steps"]) + 1))
    assert len(written["steps"]) < len(data["steps"])  # step 4 held nothing but its call
    atif = pytest.importorskip("atif")
    atif.Trajectory.model_validate(written)


def test_atif_fixture_follows_the_atif_models() -> None:
    atif = pytest.importorskip("atif")
    atif.Trajectory.model_validate(_one("atif_trajectory.json"))


def test_tau2_results_file_is_a_list_of_simulations() -> None:
    data = parse_history_text(_text("tau2_results.json"))
    assert trajectory_list(data) == "tau2"
    assert [s["id"] for s in trajectory_items(data)] == ["sim-7-0", "sim-8-0"]
    with pytest.raises(TrajectoryListError, match="2 tau2 trajectories"):
        detect_format(data)


def test_jsonl_is_recognised_and_errors_say_what_a_file_looks_like() -> None:
    assert isinstance(parse_history_text('{"a": 1}\n{"b": 2}\n'), JsonLines)
    assert parse_history_text('{"a": 1}') == {"a": 1}
    with pytest.raises(FormatError, match="JSONL line 2 is not valid JSON"):
        parse_history_text('{"a": 1}\n{"b": \n')
    with pytest.raises(FormatError, match="not valid JSON"):
        parse_history_text('{"a": ')
    with pytest.raises(FormatError, match=r"JSONL of 2 lines whose first has type 'x'.*claude-code"):
        detect_format(parse_history_text('{"type": "x"}\n{"type": "y"}\n'))
    with pytest.raises(FormatError, match="a JSON object with keys a, b, c: not a history format"):
        detect_format({"a": 1, "b": 2, "c": 3})


def test_openhands_events_are_not_taken_for_openai_chat() -> None:
    events = _one("openhands_events.json")
    assert detect_format(events) == "openhands"
    assert detect_format([e for e in events if e["kind"] == "MessageEvent"]) == "openhands"


@pytest.mark.parametrize(("name", "fmt", "tools"), FILES[:3], ids=IDS[:3])
def test_the_cli_reads_the_file_as_its_format(
    name: str, fmt: str, tools: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compact", str(DATA / name), "--eligible-tools", "*", "--minimum-reduction", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"read as {fmt} (--format auto)" in captured.err
    document = json.loads(captured.out)
    assert document["format"] == fmt and document["status"] == "DECIDED"


def test_the_cli_picks_a_tau2_simulation_and_names_an_unsupported_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = DATA / "tau2_results.json"
    assert main(["compact", str(path), "--eligible-tools", "*"]) != 0
    assert "a list of 2 tau2 trajectories" in capsys.readouterr().err
    assert (
        main(["compact", str(path), "--item", "1", "--eligible-tools", "*", "--minimum-reduction", "0"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["format"] == "tau2"
    other = tmp_path / "other.jsonl"
    other.write_text('{"event": "start"}\n{"event": "stop"}\n', encoding="utf-8")
    assert main(["compact", str(other), "--eligible-tools", "*"]) != 0
    err = capsys.readouterr().err
    assert "JSONL of 2 lines whose first has keys event" in err and "claude-code" in err
    assert "Extra data" not in err


def test_openhands_v0_evaluation_lines_hold_their_history() -> None:
    """An OpenHands evaluation's ``output.jsonl`` line holds the events under ``history`` (where a
    SWE-agent ``.traj`` holds messages); a file of such lines is a list of trajectories."""
    events = _one("openhands_v0_trajectory.json")
    line = {"instance_id": "dates-1", "instruction": "fix", "history": events, "metrics": {}, "error": None}
    assert detect_format(line) == "openhands-v0"
    assert detect_format({"history": [{"role": "user", "content": "hi", "agent": "main"}]}) == "swe-agent"
    assert trajectory_list(JsonLines([line, line])) == "openhands-v0"
    shape = HISTORY_FORMATS["openhands-v0"]
    assert shape.write_document(shape.read(events))["history"] == events


async def test_openhands_v0_a_response_that_keeps_a_call_lists_only_the_calls_left() -> None:
    """V0 sends a response only once every call its ``model_response`` lists is observed: where one of
    two calls goes, the other's response lists it alone and says the tombstone, or it would never be
    sent."""
    events = _one("openhands_v0_trajectory.json")
    shape = HISTORY_FORMATS["openhands-v0"]
    neutral = shape.read(events)
    model = ScriptedDecisionModel(lambda name, q, s: 0.1 if name in ("call_t1", "result_t1") else 0.9)
    written = shape.write(await _enforce(neutral, TOOLS["openhands-v0"], model, tombstones=True))["messages"]
    kept = next(e for e in written if e.get("tool_call_metadata", {}).get("tool_call_id") == "toolu_02")
    said = kept["tool_call_metadata"]["model_response"]["choices"][0]["message"]
    assert [c["id"] for c in said["tool_calls"]] == ["toolu_02"]
    assert kept["tool_call_metadata"]["total_calls_in_response"] == 1
    assert said["content"].startswith("Let me look at the repository first.\n[tracetrim: ")
    assert "toolu_01" in said["content"]
    assert not any(e.get("tool_call_metadata", {}).get("tool_call_id") == "toolu_01" for e in written)


def test_openhands_observation_parts_come_back_as_they_were_sent() -> None:
    """An observation's text is held once, in its block: written back, it is cut into the parts it
    came in; a snapshot archived with the whole event in its metadata writes back the same."""
    events = _one("openhands_events.json")
    observation = next(e for e in events if e["kind"] == "ObservationEvent")
    observation["observation"]["content"] = [
        {"cache_prompt": False, "type": "text", "text": "first part"},
        {"cache_prompt": True, "type": "text", "text": "second\npart"},
    ]
    shape = HISTORY_FORMATS["openhands"]
    neutral = shape.read(events)
    assert "second\npart" not in json.dumps([m.get("metadata") for m in neutral])
    assert shape.write(neutral)["messages"] == events
    whole = {e["id"]: e for e in events}
    for message in neutral:
        meta = message.get("metadata", {}).get("tracetrim.openhands", {})
        if "lengths" in meta:
            meta.pop("lengths")
            meta["event"] = copy.deepcopy(whole[meta["event"]["id"]])
    assert shape.write(neutral)["messages"] == events


_OWN_IDS = ("uuid", "id", "condenseId", "truncationId")


def _entry_ids(items: list[Any]) -> set[str]:
    """The ids of a file's entries (lines, records, events, messages): each one's own ``uuid`` or
    ``id`` (an OpenCode message's under ``info``; a Roo Code summary's ``condenseId``, a truncation
    marker's ``truncationId``)."""
    found: set[str] = set()
    for item in items:
        if isinstance(item, dict):
            for own in (item, item.get("info")):
                if isinstance(own, dict):
                    found.update(v for k in _OWN_IDS if isinstance(v := own.get(k), str))
    return found


def _named(value: Any, key: Any = None) -> list[tuple[Any, str]]:
    """Every string in ``value`` with the key it stands under, the entry's own ids left out."""
    if isinstance(value, dict):
        return [n for k, v in value.items() if k not in _OWN_IDS for n in _named(v, k)]
    if isinstance(value, list):
        return [n for v in value for n in _named(v, key)]
    return [(key, value)] if isinstance(value, str) else []


@pytest.mark.parametrize(("name", "fmt", "tools"), FILES, ids=IDS)
@pytest.mark.parametrize("plan", [p for p in RESUME_PLANS if p != "as-read"])
def test_no_entry_written_back_names_an_entry_that_went(
    name: str, fmt: str, tools: tuple[str, ...], plan: str
) -> None:
    """Where a plan took entries out, no entry left names one of them (a parent, a compaction's first
    kept entry, a branch's start or origin, a label's target): every reference still leads somewhere."""
    data = _one(name)
    items, fields = _split(data, fmt)
    shape = HISTORY_FORMATS[fmt]
    written = shape.write(compact(shape.read(items, fields), RESUME_PLANS[plan]))["messages"]
    gone = _entry_ids(items) - _entry_ids(written)
    assert not [(key, text) for entry in written for key, text in _named(entry) if text in gone]
