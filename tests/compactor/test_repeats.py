"""One copy of what is repeated: an older result a later whole result shows again becomes a pointer."""

from __future__ import annotations

import copy
import tempfile
from typing import Any

import tracetrim as tt
from tests._histories import assistant, blocks_by_id, call, result, text, user
from tracetrim import Action
from tracetrim._marker import parse_shortened_note
from tracetrim.archive import FileArchive, RecallTool, rehydrate
from tracetrim.compactor._outcome import Action as PairAction
from tracetrim.compactor._pairs import Pair
from tracetrim.compactor._repeats import REPEATED, repeated_results
from tracetrim.decision import ScriptedDecisionModel

SCOPE = tt.Scope(user_id="u", agent_id="a", session_id="s")
FILE = "".join(f"{n:4d}  def step_{n}(state): return state + {n}\n" for n in range(60))
EDITED = FILE.replace("return state + 7\n", "return state - 7\n")


def _history(*outputs: str, tail: int = 6) -> list[dict[str, Any]]:
    """A task, one read of ``parser.py`` per output (ids c1, c2, ...), then ``tail`` short messages."""
    messages = [user("m0", "Fix the off-by-one in parser.py.")]
    for n, output in enumerate(outputs, start=1):
        messages.append(
            assistant(
                f"a{n}",
                text(f"Reading parser.py again ({n})."),
                call(f"c{n}", args={"path": "parser.py"}),
                result(f"c{n}", output=output),
            )
        )
    for n in range(tail):
        messages.append(user(f"r{n}", f"recent {n}") if n % 2 == 0 else assistant(f"r{n}", text("ok")))
    return messages


def _keep_all(**config: Any) -> tt.Compactor:
    return tt.Compactor(
        ScriptedDecisionModel({}, default=1.0),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0, **config),
    )


async def test_a_region_read_twice_keeps_one_verbatim_copy_and_a_pointer_to_it() -> None:
    messages = _history(FILE, FILE)
    sent = copy.deepcopy(messages)
    plan = (await _keep_all().plan(tt.CompactionRequest(messages))).plan
    assert plan is not None and messages == sent
    decisions = {d.call_id: d for d in plan.decisions}
    assert (decisions["c1"].action, decisions["c1"].reason) == (Action.DROP_RESULT, REPEATED)
    assert decisions["c2"].action is Action.KEEP
    results = blocks_by_id(plan.messages, "tool_result")
    assert results["c2"]["output"] == FILE
    pointer = results["c1"]["output"]
    assert "every line of it is in the later result of call c2" in pointer and len(pointer) < 400
    note = parse_shortened_note(pointer)
    assert note is not None and (note.call_id, note.original_chars) == ("c1", len(FILE))
    assert set(blocks_by_id(plan.messages, "tool_call")) == {"c1", "c2"}  # still paired


async def test_a_changed_file_is_not_a_repeat_and_a_chain_points_to_the_newest_copy() -> None:
    plan = (await _keep_all().plan(tt.CompactionRequest(_history(FILE, EDITED)))).plan
    assert plan is not None
    assert all(d.action is Action.KEEP for d in plan.decisions)  # line 7 changed in between

    plan = (await _keep_all().plan(tt.CompactionRequest(_history(FILE, FILE, FILE)))).plan
    assert plan is not None
    results = blocks_by_id(plan.messages, "tool_result")
    assert "later result of call c3" in results["c1"]["output"]
    assert "later result of call c3" in results["c2"]["output"]
    assert results["c3"]["output"] == FILE


async def test_a_narrower_earlier_read_points_to_the_whole_file_read_later() -> None:
    head = "".join(FILE.splitlines(keepends=True)[10:30])
    plan = (await _keep_all().plan(tt.CompactionRequest(_history(head, FILE)))).plan
    assert plan is not None
    assert "later result of call c2" in blocks_by_id(plan.messages, "tool_result")["c1"]["output"]
    # The other way round the whole file holds lines the later region lacks: both stay.
    plan = (await _keep_all().plan(tt.CompactionRequest(_history(FILE, head)))).plan
    assert plan is not None
    assert all(d.action is Action.KEEP for d in plan.decisions)


async def test_deduplicate_off_keeps_both_copies_and_a_second_pass_changes_nothing() -> None:
    plan = (await _keep_all(deduplicate=False).plan(tt.CompactionRequest(_history(FILE, FILE)))).plan
    assert plan is not None and all(d.action is Action.KEEP for d in plan.decisions)

    first = (await _keep_all().plan(tt.CompactionRequest(_history(FILE, FILE)))).plan
    assert first is not None
    again = (await _keep_all().plan(tt.CompactionRequest(first.messages))).plan
    assert again is not None and again.messages == first.messages


async def test_the_pointer_is_recalled_and_rehydrated_like_any_shortened_result() -> None:
    messages = _history(FILE, FILE)
    original = copy.deepcopy(messages)
    with tempfile.TemporaryDirectory() as folder:
        archive = FileArchive(folder)
        compactor = tt.Compactor(
            ScriptedDecisionModel({}, default=1.0),
            config=tt.CompactorConfig(eligible_tools={"read_file"}, minimum_reduction=0.0),
            execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
            archive=archive,
        )
        outcome = await compactor.plan(tt.CompactionRequest(messages, scope=SCOPE))
        assert outcome.adopted and outcome.plan is not None
        assert FILE in await RecallTool(archive, SCOPE).answer("c1")
        assert rehydrate(outcome.plan.messages, original) == original


def _pair(key: str, output: str, *, candidate: bool = True) -> Pair:
    n = int(key[1:])
    return Pair(
        key,
        f"c{n}",
        "read_file",
        (n, 0),
        (n, 1),
        reason="" if candidate else "recent_message",
        result_text=output,
        result_chars=len(output),
    )


def test_a_dropped_or_unmovable_copy_is_never_what_a_pointer_names() -> None:
    pairs = [_pair("t1", FILE), _pair("t2", FILE), _pair("t3", FILE, candidate=False)]
    keep = {p.key: (PairAction.KEEP, "") for p in pairs[:2]}
    assert {k: p.key for k, p in repeated_results(pairs, keep, {"t1", "t2"}).items()} == {
        "t1": "t3",
        "t2": "t3",
    }
    # Only movable pairs become pointers; a later copy the plan drops cannot be pointed to.
    assert set(repeated_results(pairs, keep, {"t1"})) == {"t1"}
    dropped = {"t2": (PairAction.DROP_CALL, "")}
    assert repeated_results(pairs[:2], dropped, {"t1", "t2"}) == {}
    assert repeated_results([_pair("t1", "x\n" * 50), _pair("t2", "x\n" * 50)], {}, {"t1"}) == {}
