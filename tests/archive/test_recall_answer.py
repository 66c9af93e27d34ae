"""`RecallTool.answer` / `.function`: what the model is given never raises for a wrong or missing id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._archive_support import compact_by_hand, make_history
from tracetrim._scope import Scope
from tracetrim.archive import (
    CallNotFoundError,
    FileArchive,
    KeyValueArchive,
    MemoryStore,
    RecallTool,
    snapshot_ref,
)

SCOPE = Scope(user_id="u", agent_id="a", session_id="s")


async def test_nothing_archived_is_a_sentence_for_the_model() -> None:
    tool = RecallTool(KeyValueArchive(MemoryStore()), SCOPE)
    answer = await tool.function("c1", None)
    assert answer.startswith("[tracetrim: nothing to recall:") and "'c1'" in answer
    assert "nothing is archived" in answer and "run the tool again" in answer
    with pytest.raises(CallNotFoundError, match="nothing is archived"):
        await tool("c1")  # code that calls the instance still learns it as an exception


async def test_unknown_id_bad_and_unknown_reference_are_answered() -> None:
    archive = KeyValueArchive(MemoryStore())
    original = make_history(3, seed=4)
    ref = await archive.save(SCOPE, original)
    tool = RecallTool(archive, SCOPE)
    assert await tool.answer("c1") == original[4]["content"][0]["output"]  # found: the text itself
    unknown = await tool.answer("c9")
    assert "nothing to recall" in unknown and "'c9'" in unknown and "1 newest snapshots" in unknown
    bad = await tool.answer("c1", "../etc/passwd")
    assert bad.startswith("[tracetrim: cannot recall tool call 'c1':")
    other = snapshot_ref(SCOPE, compact_by_hand(original, {"c1": "drop_call"}, ref))
    assert "nothing to recall" in await tool.answer("c1", other)
    assert "nothing to recall" in await tool.answer("", None)


async def test_an_unreadable_archive_is_answered_too(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "a")
    ref = await archive.save(SCOPE, make_history(1, seed=5))
    for path in (tmp_path / "a").rglob(f"{ref}.json"):
        path.write_bytes(b"{broken")
    answer = await RecallTool(archive, SCOPE).answer("c0", ref)
    assert answer.startswith("[tracetrim: cannot recall tool call 'c0':") and ref in answer
