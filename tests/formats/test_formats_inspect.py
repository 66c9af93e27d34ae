"""Inspect AI eval logs: read as Inspect reads them (``.json`` and zstd ``.eval`` archives), each sample a
run; what a compaction writes back is a sample Inspect loads, whose messages Inspect's own converters turn
into OpenAI chat and Responses requests those APIs accept.

The committed logs (tests/data/agents/inspect_log.*) were written by Inspect itself (`tests._inspect_runs`);
the tests also run that script against the installed Inspect.
"""

from __future__ import annotations

import copy
import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pydantic
import pytest
from inspect_ai.log import EvalSample, read_eval_log, write_eval_log
from inspect_ai.model import ChatMessage, messages_to_openai, messages_to_openai_responses

import tracetrim as tt
from tests._inspect_runs import TOOLS, write_logs
from tests._provider_rules import check_openai_chat, check_responses
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats import (
    HISTORY_FORMATS,
    FormatError,
    TrajectoryListError,
    _eval_archive,
    detect_format,
    parse_history_text,
    trajectory_items,
    trajectory_list,
)

DATA = Path(__file__).parents[1] / "data" / "agents"
SHAPE = HISTORY_FORMATS["inspect"]
MESSAGES = pydantic.TypeAdapter(list[ChatMessage])
DROP = ScriptedDecisionModel({}, default=0.0)
SHORTEN = ScriptedDecisionModel(lambda name, q, s: 0.9 if name.startswith("call_") else 0.0)


def _sample(path: Path) -> dict[str, Any]:
    log = parse_history_text(path.read_bytes())
    assert trajectory_list(log) == "inspect"
    sample: dict[str, Any] = trajectory_items(log)[0]
    return sample


def _read(sample: dict[str, Any]) -> list[Any]:
    return SHAPE.read(sample["messages"], {k: v for k, v in sample.items() if k != "messages"})


async def _compacted(sample: dict[str, Any], model: Any, *, tombstones: bool) -> dict[str, Any]:
    neutral = _read(sample)
    config = tt.CompactorConfig(eligible_tools=set(TOOLS), preserve_recent_messages=1, tombstones=tombstones)
    compactor = tt.Compactor(
        model,
        config=config,
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    outcome = await compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s")))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    written: dict[str, Any] = SHAPE.write_document(list(outcome.plan.messages))
    return written


async def _check_sendable(messages: list[Any], sent: list[Any]) -> None:
    """What Inspect sends for ``messages`` through OpenAI chat and Responses keeps those APIs' rules."""
    check_openai_chat(await messages_to_openai(MESSAGES.validate_python(messages)))
    before = await messages_to_openai_responses(MESSAGES.validate_python(sent))
    check_responses(
        await messages_to_openai_responses(MESSAGES.validate_python(messages)), before, types=False
    )


@pytest.fixture(scope="module")
def live_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The task run by the installed Inspect, once as a ``.json`` log and once as an ``.eval``."""
    return write_logs(tmp_path_factory.mktemp("inspect"))


@pytest.mark.parametrize("suffix", ["json", "eval"])
def test_a_log_reads_as_inspect_reads_it(suffix: str, live_logs: dict[str, Path]) -> None:
    for path in (DATA / f"inspect_log.{suffix}", live_logs[suffix]):
        sample = _sample(path)
        theirs = read_eval_log(str(path)).samples
        assert theirs is not None
        assert MESSAGES.validate_python(sample["messages"]) == theirs[0].messages
        events = {"events", "events_data"}  # Inspect's reader expands the events' shared data
        assert EvalSample.model_validate(copy.deepcopy(sample)).model_dump(exclude=events) == theirs[
            0
        ].model_dump(exclude=events)
        assert SHAPE.write_document(_read(sample)) == sample  # read then written back: the same sample


def test_a_log_is_a_list_of_samples() -> None:
    log = parse_history_text((DATA / "inspect_log.eval").read_bytes())
    assert detect_format(trajectory_items(log)[0]) == "inspect"
    assert detect_format(trajectory_items(log)[0]["messages"]) == "inspect"  # a bare message list too
    with pytest.raises(TrajectoryListError, match="1 inspect trajectories"):
        detect_format(log)


@pytest.mark.parametrize("tombstones", [False, True], ids=["plain", "tombstones"])
@pytest.mark.parametrize("model", [DROP, SHORTEN], ids=["drop", "shorten"])
async def test_compacted_samples_load_in_inspect_and_send_valid_requests(
    model: Any, tombstones: bool, live_logs: dict[str, Path]
) -> None:
    for path in (DATA / "inspect_log.eval", live_logs["eval"]):
        sample = _sample(path)
        written = await _compacted(sample, model, tombstones=tombstones)
        EvalSample.model_validate(copy.deepcopy(written))  # its validators fill fields in place
        assert {k: v for k, v in written.items() if k != "messages"} == {
            k: v for k, v in sample.items() if k != "messages"
        }
        await _check_sendable(written["messages"], sample["messages"])
        ids = [m["id"] for m in written["messages"]]
        assert len(set(ids)) == len(ids)
        before = {m["id"]: m for m in sample["messages"]}
        for message in written["messages"]:  # kept messages keep their ids; changed ones get new ones
            assert (message["id"] in before) == (before.get(message["id"]) == message)
        assert len(json.dumps(written)) < len(json.dumps(sample))


async def test_reasoning_goes_with_the_call_it_was_sent_before() -> None:
    """OpenAI refuses a reasoning item without its required following item: reasoning sent right before
    a call goes with it, and a turn left with nothing is not written."""
    sample = _sample(DATA / "inspect_log.json")
    turn = next(m for m in sample["messages"] if isinstance(m["content"], list))
    turn["content"] = [p for p in turn["content"] if p["type"] == "reasoning"]
    for tombstones in (False, True):
        written = await _compacted(sample, DROP, tombstones=tombstones)
        await _check_sendable(written["messages"], sample["messages"])
        assert "reasoning" not in json.dumps(written["messages"])
        assert any(m["id"].startswith(turn["id"]) for m in written["messages"]) == tombstones


async def test_inspect_writes_and_reads_back_a_compacted_log(tmp_path: Path) -> None:
    log = read_eval_log(str(DATA / "inspect_log.eval"))
    assert log.samples
    written = await _compacted(_sample(DATA / "inspect_log.eval"), DROP, tombstones=True)
    log.samples = [EvalSample.model_validate(written)]
    for fmt in ("eval", "json"):
        path = tmp_path / f"compacted.{fmt}"
        write_eval_log(log, str(path), format=fmt)
        assert _sample(path)["messages"] == written["messages"]


def test_the_cli_writes_each_sample_of_an_eval_log_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compact", str(DATA / "inspect_log.eval"), "--all", "--output-dir", str(tmp_path)]
    args += ["--eligible-tools", ",".join(TOOLS), "--minimum-reduction", "0", "--emit", "history"]
    assert main(args) == 0
    assert "inspect_log.eval[0]: read as inspect (--format auto)" in capsys.readouterr().err
    [out] = tmp_path.iterdir()
    assert out.name == "inspect_log-0.json"
    EvalSample.model_validate(json.loads(out.read_text(encoding="utf-8")))


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_bad_eval_archive_is_named_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    header = json.dumps({"version": 2, "status": "success", "eval": {}}).encode()
    with pytest.raises(FormatError, match="not a readable zip archive"):
        parse_history_text(b"PK\x03\x04 truncated")
    with pytest.raises(FormatError, match=r"without header\.json: not an Inspect \.eval log"):
        parse_history_text(_zip({"other.json": b"{}"}))
    with pytest.raises(FormatError, match=r"entry samples/1_epoch_1.json is not JSON"):
        parse_history_text(_zip({"header.json": header, "samples/1_epoch_1.json": b"{nope"}))
    good = _zip({"header.json": header, "samples/1_epoch_1.json": b'{"id": 1, "epoch": 1, "messages": []}'})
    assert parse_history_text(good)["samples"] == [{"id": 1, "epoch": 1, "messages": []}]
    monkeypatch.setattr(_eval_archive, "MAX_ARCHIVE_BYTES", 10)
    with pytest.raises(FormatError, match="unpacks to more than 10 bytes"):
        parse_history_text(good)


def test_a_corrupt_zstd_entry_is_refused() -> None:
    data = bytearray((DATA / "inspect_log.eval").read_bytes())
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = next(i for i in archive.infolist() if i.filename.startswith("samples/"))
    assert info.compress_type == 93  # Inspect writes zstd
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle] ^= 0xFF
    with pytest.raises(FormatError, match=f"entry {info.filename}"):
        parse_history_text(bytes(data))


def test_a_call_inspect_could_not_parse_is_carried_not_judged() -> None:
    sample = copy.deepcopy(_sample(DATA / "inspect_log.json"))
    turn = next(m for m in sample["messages"] if m.get("tool_calls"))
    turn["tool_calls"][0]["parse_error"] = "Expecting value: line 1 column 1"
    neutral = _read(sample)
    calls = {b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"}
    assert turn["tool_calls"][0]["id"] not in calls
    assert SHAPE.write_document(neutral) == sample


def test_replay_walks_each_sample_of_an_eval_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "replay.json"
    args = ["replay", str(DATA / "inspect_log.eval"), "--json", str(out), "--strategies", "none,mask"]
    assert main([*args, "--mask-keep", "1", "--trigger-tokens", "1500", "--target-tokens", "800"]) == 0
    capsys.readouterr()
    runs = json.loads(out.read_text(encoding="utf-8"))["runs"]
    assert {r["dataset"] for r in runs} == {"inspect"}
    assert {(r["steps"], r["uses"]) for r in runs} == {(4, 1)}  # four model turns, one reusing a result
    none, masked = sorted(runs, key=lambda r: r["strategy"] != "none")
    assert masked["compactions"] >= 1 and masked["billed_tokens"] < none["billed_tokens"]


def test_without_zstandard_a_zstd_archive_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard now raises ImportError
    with pytest.raises(FormatError, match=r"^this \.eval file is zstd-compressed: .*pip install zstandard"):
        parse_history_text((DATA / "inspect_log.eval").read_bytes())


def test_a_sample_file_restores_byte_for_byte_after_enforce(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A sample as ``--all`` writes it, compacted in ENFORCE through the CLI, then restored as sent:
    the exact bytes of the file."""
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(_sample(DATA / "inspect_log.eval"), indent=2) + "\n", encoding="utf-8")
    archive = ["--archive", f"file:{tmp_path / 'archive'}", "--user", "u", "--agent", "a", "--session", "s"]
    argv = ["compact", str(path), "--mode", "enforce", "--eligible-tools", ",".join(TOOLS)]
    assert main([*argv, "--preserve-recent", "1", "--minimum-reduction", "0", *archive]) == 0
    result = json.loads(capsysbinary.readouterr().out)
    assert result["changed"], (result["reason"], result["detail"])
    assert main(["restore", result["archive_ref"], "--format", "sent", *archive]) == 0
    assert capsysbinary.readouterr().out == path.read_bytes()
