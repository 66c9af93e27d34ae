"""Roo Code task histories: what Roo Code no longer sends (its condensing and truncation) is kept and never
judged, reasoning goes with the turn it led to, a summary is never joined away, and a compacted file
restores byte for byte.

The fixtures follow Roo Code's persistence and condense code (see tests/data/agents/README.md); what
Roo Code sends is `tests._provider_rules.roo_code_sent`, written from its source.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests import _provider_rules as rules
from tests._compact_plans import compact
from tracetrim import SnapshotError
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format
from tracetrim.formats._carrier import split_carriers

ROO = HISTORY_FORMATS["roo-code"]
DATA = Path(__file__).parents[1] / "data" / "agents"
DROP_ALL = {"actions": ["drop_call"], "tombstones": False, "recent": 1}


def _legacy() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((DATA / "roo_code_history.json").read_text(encoding="utf-8"))
    return data


def _versioned() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "roo_code_history_v2.json").read_text(encoding="utf-8"))
    return data


def _carried(items: list[dict[str, Any]], fields: dict[str, Any] | None = None) -> list[Any]:
    carried, _ = split_carriers(ROO.read(items, fields or {}), "roo_code")
    return [value for run in carried for value in run]


def _step(n: int, call: str, *, tags: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """An assistant turn calling ``read_file`` and the user turn answering it (a long result)."""
    tags = tags or {}
    use = {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": f"f{n}.py"}}
    result = {"type": "tool_result", "tool_use_id": call, "content": f"line of f{n}.py\n" * 200}
    return [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"Reading f{n}.py."}, use],
            "ts": 10 * n,
            **tags,
        },
        {"role": "user", "content": [result, {"type": "text", "text": f"env {n}"}], "ts": 10 * n + 1, **tags},
    ]


def test_what_a_summary_or_marker_replaced_is_carried_and_what_roo_sends_is_judged() -> None:
    items = _legacy()
    assert _carried(items) == [m for m in items if "condenseParent" in m]
    document = _versioned()
    assert _carried(document["messages"], {"version": 2}) == [
        m for m in document["messages"] if "truncationParent" in m
    ]
    # a message tagged with a summary that does not stand after it, or that is gone, is still sent
    task = {"role": "user", "content": "fix it", "ts": 1}
    summary = {"role": "assistant", "content": "Summary.", "ts": 2, "isSummary": True, "condenseId": "c1"}
    after = {"role": "user", "content": "go on", "ts": 3, "condenseParent": "c1"}
    orphan = {"role": "assistant", "content": "ok", "ts": 4, "condenseParent": "gone"}
    assert _carried([task, summary, after, orphan]) == []
    assert _carried([task, {**after, "condenseParent": "c1"}, summary]) == [after]


def test_a_summary_keeps_its_place_when_the_call_it_kept_goes() -> None:
    """Roo Code's summary keeps the calls whose results it did not condense; when a plan drops such a
    pair, the turn after the results joins the summary, never the other way round: the messages the
    summary replaced name it, and Roo Code would send them all again were it gone."""
    condensed = {"condenseParent": "c1"}
    summary = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Summary of the work so far."},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "f2.py"}},
        ],
        "ts": 29,
        "isSummary": True,
        "condenseId": "c1",
    }
    items = [
        {"role": "user", "content": "fix it", "ts": 1},
        *_step(1, "t1", tags=condensed),
        summary,
        {**_step(2, "t2")[1], "content": _step(2, "t2")[1]["content"][:1]},  # its result alone
        *_step(4, "t4"),
        *_step(5, "t5"),
        {"role": "user", "content": "and now?", "ts": 99},
    ]
    before = rules.roo_code_sent(items)
    written = ROO.write(compact(ROO.read(items), DROP_ALL))["messages"]
    assert [m for m in written if "condenseParent" in m] == [m for m in items if "condenseParent" in m]
    [kept] = [m for m in written if m.get("isSummary")]
    assert kept["condenseId"] == "c1" and kept["content"][0] == summary["content"][0]
    after = rules.roo_code_sent(written)
    rules.check_roo_code(after, before)
    assert all(m.get("condenseParent") != "c1" for m in after)  # the condensed messages stay unsent


def test_reasoning_goes_with_the_turn_it_led_to() -> None:
    document = _versioned()
    written = ROO.write(compact(ROO.read(document["messages"], {"version": 2}), DROP_ALL))["messages"]
    sent = rules.roo_code_sent(written)
    rules.check_roo_code(sent, rules.roo_code_sent(document["messages"]))
    live = [m for m in written if "truncationParent" not in m]
    reasoning = [m["id"] for m in live if "role" not in m]
    assert "rs_02" not in reasoning and "rs_04" not in reasoning  # their turns held calls alone
    assert "rs_03" in reasoning  # its turn keeps its text
    # inline: an Anthropic turn of reasoning and calls goes whole; one with text keeps its reasoning
    items = [
        {"role": "user", "content": "fix it", "ts": 1},
        *_step(1, "t1"),
        *_step(2, "t2"),
        {"role": "user", "content": "and now?", "ts": 99},
    ]
    encrypted = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA", "id": "rs_1"}
    items[1]["content"] = [encrypted, items[1]["content"][1]]
    items[3]["content"] = [dict(encrypted, id="rs_2"), *items[3]["content"]]
    written = ROO.write(compact(ROO.read(items), DROP_ALL))["messages"]
    assert "rs_1" not in json.dumps(written) and "rs_2" in json.dumps(written)
    rules.check_roo_code(rules.roo_code_sent(written), rules.roo_code_sent(items))


def test_detected_by_what_only_roo_code_writes() -> None:
    items = _legacy()
    assert detect_format(items) == "roo-code"
    plain = [{k: v for k, v in m.items() if k not in rules.ROO_FIELDS} for m in items]
    plain = [m for m in plain if m["content"][0].get("type") != "reasoning"]
    # untagged, it is told from Cline's file only by its <environment_details>, and read as Cline's,
    # keeping every message in its place (Roo Code reads such a file as it is)
    assert detect_format(plain) == "cline"
    bare = [
        {**m, "content": [b for b in m["content"] if "environment_details" not in b.get("text", "")]}
        for m in plain
    ]
    assert detect_format(bare) == "anthropic"
    signed = copy.deepcopy(plain)
    signed[1]["content"].append({"type": "thoughtSignature", "thoughtSignature": "c2ln"})
    assert detect_format(signed) == "roo-code"
    assert detect_format(_versioned()) == "roo-code"
    roo_only = {*rules.ROO_FIELDS, "ts"}
    ai_sdk = [
        {k: v for k, v in m.items() if k not in roo_only} for m in _versioned()["messages"] if "role" in m
    ]
    assert detect_format(ai_sdk) == "ai-sdk"
    responses = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "encrypted_content": "gAAA", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    ]
    assert detect_format(responses) == "responses"


def test_bad_input_names_the_message() -> None:
    with pytest.raises(SnapshotError, match=r"message 1.*role"):
        ROO.read([{"role": "user", "content": "x", "ts": 1}, {"role": "system", "content": "y"}])
    with pytest.raises(SnapshotError, match="no system messages"):
        ROO.write([{"id": "s", "role": "system", "content": [{"type": "text", "text": "rules"}]}])


@pytest.mark.parametrize("name", ["roo_code_history.json", "roo_code_history_v2.json"])
def test_restore_gives_back_the_file_sent(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Roo Code writes its history as compact JSON; a compacted file's original comes back byte for byte."""
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(json.loads((DATA / name).read_text(encoding="utf-8")), ensure_ascii=False))
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(path), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(path.read_text(encoding="utf-8"))
    assert detect_format(json.loads(written)) == "roo-code"
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == path.read_bytes()
