"""Labels from what an agent actually did: which earlier results its later steps used.

A real trajectory labels itself. Cut it at an assistant turn; the turns after the cut show which
results before the cut the agent still needed: identifiers and values it first saw in a result and
then wrote into a later call or message, and lines first shown by a result that it quoted later (an
edit's old text, a line it reasons about). Plain words do not count: a later script that says
"return" or "value" did not need the first file that happened to contain them. Those strings are the
result's *evidence*; a compaction keeps the result "findable" when every one of them is still
somewhere in the compacted history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim.decision._reuse import WORD, Evidence, all_text, credited, evidence

_WORD = WORD
"""The evidence word pattern under its older name (`tracetrim.replay` reads it here)."""

__all__ = ["Evidence", "credited", "evidence", "findable", "history_text"]


def findable(evidence_item: Evidence, haystack: str) -> bool:
    """True when every evidence string is still somewhere in ``haystack`` (the compacted history's text)."""
    return all(s in haystack for s in evidence_item.strings)


def history_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """Every text, input and output of a history, joined: what "still findable" searches."""
    return "\n".join(all_text(m) for m in messages)
