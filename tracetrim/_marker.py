"""The marker contract: the metadata key, the notes tracetrim leaves, their parser, the recall tool.

Everything that writes a mark (the rebuild stage, the offload summaries) and everything that reads one
(pair finding, archive recall and rehydration, the harness adapters) imports it from here, so the text
an agent reads and the pattern that recognises it cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from tracetrim._json import strict_loads

MARKER_KEY = "tracetrim"
"""The ``metadata`` key of tracetrim's mark on a block or message it wrote (and the ``name`` of the
messages it writes)."""

RECALL_TOOL_NAME = "recall_tool_result"
"""The tool an agent calls to get an archived result back by call id; the markers point to it."""

PROSE_ACTION_KEY = "tracetrim.prose_action"
"""The ``metadata`` key (value true) of a tool_call block whose call lives in the assistant's own text, as
a text-protocol agent's command does (SWE-agent, mini-swe-agent): removing the call would leave the
command in what the agent said with no output after it, so a drop keeps the call and leaves a stub
result (`keeps_its_place`)."""

FIXED_CALL_KEY = "tracetrim.fixed_call"
"""The ``metadata`` key (value true) of a tool_call block whose message and block must keep their places,
as in a history its agent indexes by position (Cline's truncation range, checkpoints and context edits
name messages by index): a drop keeps the call and leaves a stub result (`keeps_its_place`)."""

REASONED_CALL_KEY = "tracetrim.reasoned_call"
"""The ``metadata`` key of a tool_call that the model's reasoning was sent right before, in a turn whose
reasoning led to more than this call. OpenAI refuses a reasoning item without the item it was sent before
("without its required following item"), and a call or message of that turn without its reasoning
("provided without its required 'reasoning' item"), so the call can go only with everything its reasoning
led to: its value lists the ids of the calls that are all of it (they may go together), or is true when
more than calls follow the reasoning (text, a message: the call keeps its place). Where it cannot go, a
drop keeps it and leaves a stub result (`keeps_its_place`, `reasoned_together`)."""

SHORTENED_ACTION = "drop_result"
"""``metadata.tracetrim.action`` of a tool result cut down to an excerpt."""

SUMMARY_ACTION = "summary"
"""``metadata.tracetrim.action`` of a message standing for a summarised group of messages."""

MARKER_PREFIX = "[tracetrim: the result of "
"""How every shortened-result note starts; formats without block metadata carry only this text."""

_MAX_LISTED_CALLS = 20

_SHORTENED_NOTE = re.compile(
    re.escape(MARKER_PREFIX) + r".* call (?P<call_id>\S+) was shortened from (?P<chars>\d+) to \d+ "
    r"characters(?: \(kept \d+ of \d+ lines\))?(?:; every line of it is in the later result of call \S+)?\. "
    r"(?:The full result is archived under reference (?P<ref>[0-9a-f]{64});|"
    r"The full result was not archived\.)",
    re.DOTALL,
)


class ShortenedNote(NamedTuple):
    """What a shortened-result note says: whose result, how long it was, where the original is."""

    call_id: str
    original_chars: int
    archive_ref: str
    """The 64-hex archive reference, or ``""`` when the original was not archived."""


def shortened_note(
    tool: str,
    call_id: str,
    original_chars: int,
    kept_chars: int,
    archive_ref: str,
    lines: tuple[int, int] | None = None,
    repeated_in: str | None = None,
) -> str:
    """The note left where a result was cut: what, how much (``lines``: kept and total lines of an
    excerpt; ``repeated_in``: the call whose later result shows every line of it), where the original
    is, what to do."""
    where = (
        f"The full result is archived under reference {archive_ref}; recall it by call id {call_id} "
        "instead of running the tool again."
        if archive_ref
        else "The full result was not archived."
    )
    kept_lines = f" (kept {lines[0]} of {lines[1]} lines)" if lines else ""
    repeated = f"; every line of it is in the later result of call {repeated_in}" if repeated_in else ""
    return (
        f"{MARKER_PREFIX}{tool} call {call_id} was shortened from "
        f"{original_chars} to {kept_chars} characters{kept_lines}{repeated}. {where}]"
    )


_REMOVED_NOTE = re.compile(
    re.escape(MARKER_PREFIX) + r".* call (?P<call_id>\S+) \((?P<chars>\d+) characters\) was removed; "
    r"recall it by call id\.\]$",
    re.DOTALL,
)


def removed_note(tool: str, call_id: str, original_chars: int) -> str:
    """The stub left for the result of a dropped call that keeps its place (`keeps_its_place`):
    short, since it stands where masking would leave a placeholder; the call id is all a recall needs."""
    return (
        f"{MARKER_PREFIX}{tool} call {call_id} ({original_chars} characters) was removed; "
        "recall it by call id.]"
    )


def parse_shortened_note(text: str) -> ShortenedNote | None:
    """The note that ends ``text`` (the last one, as the rebuild stage appends it); None if it has none.

    A `removed_note` names no archive reference (``""``): a recall searches the scope's snapshots."""
    removed = _REMOVED_NOTE.match(text)
    if removed is not None:
        return ShortenedNote(removed.group("call_id"), int(removed.group("chars")), "")
    if not text.rstrip().endswith("]"):
        return None
    # Only the last prefix can start the note rebuild appended. Matching from every earlier one (a
    # result may quote the prefix any number of times) made this quadratic in the result's length.
    start = text.rfind(MARKER_PREFIX)
    found = _SHORTENED_NOTE.match(text, start) if start >= 0 else None
    if found is None:
        return None
    return ShortenedNote(found.group("call_id"), int(found.group("chars")), found.group("ref") or "")


def shortened_mark(archive_ref: str, original_chars: int) -> dict[str, Any]:
    """The ``metadata.tracetrim`` of a shortened tool result."""
    return {"action": SHORTENED_ACTION, "archive_ref": archive_ref, "original_chars": original_chars}


def summary_note(
    count: int, message_ids: Sequence[str], call_ids: Sequence[str], tokens: int, ref: str
) -> str:
    """The note opening a summary message: how many messages it stands for, where they are archived,
    and (up to 20 of) the call ids among them."""
    ids = message_ids
    span = "" if not ids else f" ({ids[0]})" if len(ids) == 1 else f" ({ids[0]} to {ids[-1]})"
    where = (
        f"archived under reference {ref}; restore that reference, or recall a tool result by its call id, "
        "instead of running a tool again"
        if ref
        else "not archived"
    )
    calls = ""
    if call_ids:
        more = len(call_ids) - _MAX_LISTED_CALLS
        listed = ", ".join(call_ids[:_MAX_LISTED_CALLS]) + (f" and {more} more" if more > 0 else "")
        calls = f" Tool calls among them: {listed}."
    return (
        f"[tracetrim: summary of {count} earlier messages{span}, about {tokens:,} tokens, "
        f"which are {where}.{calls}]"
    )


def summary_mark(
    count: int, message_ids: Sequence[str], call_ids: Sequence[str], tokens: int, ref: str
) -> dict[str, Any]:
    """The ``metadata.tracetrim`` of a summary message."""
    return {
        "action": SUMMARY_ACTION,
        "archive_ref": ref,
        "messages": count,
        "message_ids": list(message_ids),
        "call_ids": list(call_ids),
        "original_tokens": tokens,
    }


def has_mark(item: Mapping[str, Any]) -> bool:
    """True when a block or message carries ``metadata.tracetrim`` at all (whatever its value)."""
    metadata = item.get("metadata")
    return isinstance(metadata, Mapping) and MARKER_KEY in metadata


def mark_of(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A block's or message's ``metadata.tracetrim`` when it is an object; None otherwise."""
    metadata = item.get("metadata")
    mark = metadata.get(MARKER_KEY) if isinstance(metadata, Mapping) else None
    return mark if isinstance(mark, dict) else None


def is_shortened(block: Mapping[str, Any]) -> bool:
    """True for a tool_result the planner shortened (its ``metadata.tracetrim.action`` is drop_result)."""
    mark = mark_of(block)
    return mark is not None and mark.get("action") == SHORTENED_ACTION


def summary_ref(message: Mapping[str, Any]) -> str | None:
    """The archive reference of a summary message (``""`` when it was not archived); None otherwise."""
    mark = mark_of(message)
    if mark is None or mark.get("action") != SUMMARY_ACTION:
        return None
    ref = mark.get("archive_ref")
    return ref if isinstance(ref, str) else ""


TOMBSTONE_ACTION = "drop_call"
"""``metadata.tracetrim.action`` of the text block left where a dropped call stood."""

TOMBSTONE_PREFIX = "[tracetrim: dropped "
"""How every tombstone starts; formats without block metadata carry only this text."""

GIST_CHARS = 60
"""At most this much of a dropped call's input goes into its tombstone: enough to tell which file or
query it was, never the bulk of a heredoc (every character of a tombstone is paid on every turn)."""

_TOMBSTONE = re.compile(
    re.escape(TOMBSTONE_PREFIX) + r"\S+ call (?P<call_id>\S+) \(.*\); "
    r"(?:recall_tool_result\(\S+\) restores it|not archived)\]\Z",
    re.DOTALL,
)


def gist(text: str) -> str:
    """A one-line reminder of a call's input: a JSON object's values (the command, the path, the query)
    rather than its syntax, its text values first (a flag such as ``"replace_all": false`` tells no
    call from another), whitespace collapsed, cut to `GIST_CHARS` with an ellipsis."""
    try:
        value = strict_loads(text)
    except (ValueError, RecursionError):
        value = text
    if isinstance(value, dict):
        values = list(value.values())
        texts = [v for v in values if isinstance(v, str)]
        rest = [v for v in values if not isinstance(v, (str, bool)) and v is not None]
        value = " ".join(str(v) for v in [*texts, *rest] or values)
    flat = " ".join(str(value).split())
    return flat if len(flat) <= GIST_CHARS else flat[: GIST_CHARS - 1] + "…"


def tombstone_note(tool: str, call_id: str, call_input: str, archive_ref: str) -> str:
    """The one line left where a dropped call stood: which tool and call, a gist of its input, and
    how to get it back (the recall tool finds a call by its id alone)."""
    where = f"{RECALL_TOOL_NAME}({call_id}) restores it" if archive_ref else "not archived"
    return f"{TOMBSTONE_PREFIX}{tool} call {call_id} ({gist(call_input)}); {where}]"


def tombstone_block(tool: str, call_id: str, call_input: str, archive_ref: str) -> dict[str, Any]:
    """The text block left where a dropped call stood, marked so it is never judged or kept on restore."""
    return {
        "type": "text",
        "text": tombstone_note(tool, call_id, call_input, archive_ref),
        "metadata": {MARKER_KEY: {"action": TOMBSTONE_ACTION, "call_id": call_id}},
    }


def is_tombstone(block: Mapping[str, Any]) -> bool:
    """True for a tombstone: by its mark, or (formats without block metadata) by its whole text."""
    if block.get("type") != "text":
        return False
    mark = mark_of(block)
    if mark is not None:
        return mark.get("action") == TOMBSTONE_ACTION
    text = block.get("text")
    return isinstance(text, str) and _TOMBSTONE.match(text) is not None


def tombstone_call_id(block: Mapping[str, Any]) -> str | None:
    """The call id a tombstone stands for (from its mark, or its text where formats dropped the mark);
    None when ``block`` is not a tombstone."""
    if not is_tombstone(block):
        return None
    mark = mark_of(block)
    if mark is not None and isinstance(mark.get("call_id"), str):
        return str(mark["call_id"])
    found = _TOMBSTONE.match(str(block.get("text", "")))
    return found.group("call_id") if found else None


def keeps_its_place(block: Mapping[str, Any]) -> bool:
    """True for a tool_call a drop must not remove: one a reader found in the assistant's prose
    (`PROSE_ACTION_KEY`), one whose place its agent indexes (`FIXED_CALL_KEY`) or one its turn's reasoning
    was sent before (`REASONED_CALL_KEY`)."""
    metadata = block.get("metadata")
    return isinstance(metadata, Mapping) and (
        any(metadata.get(key) is True for key in (PROSE_ACTION_KEY, FIXED_CALL_KEY))
        or metadata.get(REASONED_CALL_KEY) not in (None, False)
    )


def reasoned_together(block: Mapping[str, Any]) -> frozenset[str]:
    """The ids of the calls a reasoned call (`REASONED_CALL_KEY`) may go with, all of them at once (empty:
    it never goes)."""
    metadata = block.get("metadata")
    ids = metadata.get(REASONED_CALL_KEY) if isinstance(metadata, Mapping) else None
    return frozenset(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else frozenset()


def prose_action_metadata() -> dict[str, Any]:
    """The ``metadata`` a reader puts on a tool_call it synthesised from the assistant's prose."""
    return {PROSE_ACTION_KEY: True}


def fixed_call_metadata() -> dict[str, Any]:
    """The ``metadata`` a reader puts on a tool_call whose message and block must keep their places."""
    return {FIXED_CALL_KEY: True}


def mark_reasoned_call(block: dict[str, Any], led: Sequence[Mapping[str, Any]]) -> None:
    """Mark a tool_call ``block`` (the reader's own) as the one its turn's reasoning was sent before, in
    a turn whose reasoning led to more (`REASONED_CALL_KEY`). ``led`` is every block the reasoning led
    to, ``block`` first: when they are all calls, the mark lists their ids (they may go together), else
    the call keeps its place."""
    calls_only = all(b.get("type") == "tool_call" for b in led)
    block.setdefault("metadata", {})[REASONED_CALL_KEY] = [b["id"] for b in led] if calls_only else True
