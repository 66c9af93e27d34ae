"""OpenCode exports written back after any plan: OpenCode orders a message's parts by id and shows the
model only what follows its own last compaction, so every part id stays unique and in order, a kept
tool part changes at most its output, and what OpenCode's compaction hid comes back untouched.
(`test_opencode_resumes.py` runs OpenCode itself on compacted exports.)"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given

from tests._compact_plans import SETTINGS, compact, plans
from tests._opencode_runs import FIXTURE
from tracetrim.formats import HISTORY_FORMATS, detect_format

SHAPE = HISTORY_FORMATS["opencode"]


def _session() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return document


def _written(document: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    neutral = SHAPE.read(document["messages"], {"info": document["info"]})
    return SHAPE.write_document(compact(neutral, plan))


def _tool_parts(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["callID"]: p for m in document["messages"] for p in m["parts"] if p.get("type") == "tool"}


def _compacted_before(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` after OpenCode's own compaction: a user turn holding a ``compaction`` part and the
    summary answering it, appended after the session's messages, then a turn with a tool and an answer."""
    out = copy.deepcopy(document)
    session = out["info"]["id"]
    user = {"id": "msg_zz0compact", "sessionID": session, "role": "user", "time": {"created": 1}}
    part = {
        "type": "compaction",
        "auto": True,
        "id": "prt_zz0",
        "sessionID": session,
        "messageID": user["id"],
    }
    summary = {"id": "msg_zz1summary", "sessionID": session, "role": "assistant", "parentID": user["id"],
               "summary": True, "finish": "stop"}  # fmt: skip
    text = {"type": "text", "text": "Summary: parse_date returns its input.", "id": "prt_zz1",
            "sessionID": session, "messageID": summary["id"]}  # fmt: skip
    later = copy.deepcopy(out["messages"][1])
    later["info"]["id"] = "msg_zz2later"
    for k, p in enumerate(later["parts"]):
        p["id"] = f"prt_zz2{k}"
        p["messageID"] = "msg_zz2later"
        if p.get("type") == "tool":
            p["callID"] = "toolu_later"
    answer = copy.deepcopy(out["messages"][-1])
    out["messages"] += [{"info": user, "parts": [part]}, {"info": summary, "parts": [text]}, later, answer]
    return out


@SETTINGS
@given(plan=plans)
def test_parts_stay_in_id_order_and_tool_parts_change_only_their_output(plan: dict[str, Any]) -> None:
    document = _session()
    written = _written(document, plan)
    assert detect_format(written) == "opencode"
    before = _tool_parts(document)
    for message in written["messages"]:
        ids = [p["id"] for p in message["parts"]]
        assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
        assert all(p["messageID"] == message["info"]["id"] for p in message["parts"])
        assert message["info"] in [m["info"] for m in document["messages"]]
    for call_id, part in _tool_parts(written).items():
        sent = before[call_id]
        assert {**part, "state": {**part["state"], "output": None}} == {
            **sent,
            "state": {**sent["state"], "output": None},
        }
        assert part["state"]["output"] == sent["state"]["output"] or "tracetrim" in part["state"]["output"]
    assert SHAPE.read(written["messages"], {"info": written["info"]})  # reads again


def test_what_opencode_compacted_itself_is_kept_in_place_and_never_judged() -> None:
    document = _compacted_before(_session())
    neutral = SHAPE.read(document["messages"], {"info": document["info"]})
    judged = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert judged == ["toolu_later"]  # the calls before the compaction are no longer sent
    drop = {"actions": ["drop_call"], "tombstones": True, "recent": 1}
    written = SHAPE.write_document(compact(neutral, drop))
    assert written["messages"][:-2] == document["messages"][:-2]
    assert written["messages"][-1] == document["messages"][-1]
    assert [p["type"] for p in written["messages"][-2]["parts"]] == ["step-start", "text", "step-finish"]


def test_a_pruned_tool_part_is_kept_as_it_is() -> None:
    """OpenCode's prune marks an old tool part ``state.time.compacted``: its output is no longer sent."""
    document = _session()
    part = _tool_parts(document)["toolu_01"]
    part["state"]["time"]["compacted"] = 1
    neutral = SHAPE.read(document["messages"], {"info": document["info"]})
    assert "toolu_01" not in [b.get("id") for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert SHAPE.write_document(neutral) == document


def test_a_summary_not_finished_hides_nothing_yet() -> None:
    document = _compacted_before(_session())
    summary = document["messages"][-3]["info"]
    assert summary["summary"] is True
    del summary["finish"]
    neutral = SHAPE.read(document["messages"], {"info": document["info"]})
    judged = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert judged == ["toolu_01", "toolu_02", "toolu_03", "toolu_later"]


def _reasoning_turn(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with a turn whose reasoning led to two tool parts (``toolu_02`` and ``toolu_03``), as
    a Responses model answers through the AI SDK: OpenCode sends the reasoning as a reasoning item."""
    out = copy.deepcopy(document)
    messages = out["messages"]
    second, third = messages[2], messages[3]
    tool = next(p for p in third["parts"] if p["type"] == "tool")
    reasoning = {
        "id": second["parts"][0]["id"] + "0",
        "sessionID": second["info"]["sessionID"],
        "messageID": second["info"]["id"],
        "type": "reasoning",
        "text": "Both files say where the helper is.",
        "metadata": {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "ZW5j"}},
        "time": {"start": 1, "end": 2},
    }
    moved = {**tool, "id": second["parts"][1]["id"] + "0", "messageID": second["info"]["id"]}
    second["parts"] = [second["parts"][0], reasoning, second["parts"][1], moved, *second["parts"][2:]]
    del messages[3]
    return out


def test_a_tool_its_reasoning_led_to_among_others_goes_only_with_them() -> None:
    """OpenAI refuses the second call without the reasoning, and the reasoning without the first call:
    a drop of the first tool alone leaves it with a stub output; a drop of both takes the reasoning."""
    document = _reasoning_turn(_session())
    # the scripted judge takes the actions by pair key: t1 the second, t2 the third, t3 the first
    for both in (False, True):
        plan = {
            "actions": ["drop_call" if both else "keep", "keep", "drop_call"],
            "tombstones": False,
            "recent": 1,
        }
        turn = _written(document, plan)["messages"][2]["parts"]
        kinds = [p["type"] for p in turn]
        if both:
            assert kinds == ["step-start", "step-finish"]
            continue
        assert kinds == ["step-start", "reasoning", "tool", "tool", "step-finish"]
        assert "recall it by call id" in turn[2]["state"]["output"]
        assert turn[3]["state"]["output"] == document["messages"][2]["parts"][3]["state"]["output"]
