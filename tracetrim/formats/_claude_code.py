"""Converters between neutral messages and Claude Code session files (``~/.claude/projects/*/*.jsonl``).

Shape, from Claude Code's own session files (``@anthropic-ai/claude-code`` on npm writes them; the
entry types are those its SDK's ``SDKMessage`` and transcript reader use): one JSON object a line.
``user`` / ``assistant`` entries hold ``message`` in Anthropic Messages shape (``tool_use`` /
``tool_result`` blocks; an assistant turn is often one entry per content block, sharing
``message.id``) and chain by ``uuid`` / ``parentUuid``; ``summary`` entries (``leafUuid``),
``system`` entries (subtype ``compact_boundary`` marks Claude Code's own compaction), user entries
with ``isCompactSummary``, ``file-history-snapshot`` and other bookkeeping lines sit between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._common import (
    ValidatedHistory,
    attach_meta,
    copied,
    derived_uuid,
    format_meta,
    history_uuid,
    neutral_input,
    require_dict,
    require_sequence,
    tag,
)
from tracetrim.formats._layout import results_apart
from tracetrim.formats._order import order_of, reorder
from tracetrim.formats._shape import JsonLines

FORMAT = "claude_code"
ENTRY_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot"})
"""Entry types that mark a Claude Code session line (with a ``uuid``, ``leafUuid`` or ``messageId``)."""
_MARKS = ("uuid", "leafUuid", "messageId")
_PLACE = "\x00tracetrim.message"
_NOTHING = object()


def is_claude_code_entry(entry: Any) -> bool:
    """Whether ``entry`` is a line of a Claude Code session, by shape."""
    return (
        isinstance(entry, dict)
        and tag(entry.get("type")) in ENTRY_TYPES
        and "payload" not in entry
        and any(k in entry for k in _MARKS)
    )


def _is_boundary(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("type") == "system"
        and entry.get("subtype") == "compact_boundary"
    )


def _is_live(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("type") in ("user", "assistant")
        and not entry.get("isSidechain")
        and isinstance(entry.get("message"), dict)
        and entry["message"].get("role") in ("user", "assistant")
    )


def from_claude_code(entries: Sequence[Any]) -> list[Message]:
    """Convert the entries of a Claude Code session to neutral messages.

    Only what follows the last ``compact_boundary`` is live context: everything up to it, and every
    line that is not a main-chain user or assistant message, rides in carriers in place (never judged).
    Each live entry becomes one neutral message (id: its ``uuid``) through `from_anthropic`; the rest of
    the entry is kept in ``metadata["tracetrim.claude_code"]`` so `to_claude_code` writes it back.
    """
    require_sequence(entries, "a Claude Code session", "entries")
    for i, entry in enumerate(entries):
        require_dict(entry, "a session entry", message=i)
    start = max((i + 1 for i, e in enumerate(entries) if _is_boundary(e)), default=0)
    uuids = {e["uuid"] for e in entries if isinstance(e.get("uuid"), str)}
    live = [i for i in range(start, len(entries)) if _is_live(entries[i])]
    converted = from_anthropic([entries[i]["message"] for i in live])
    by_index = dict(zip(live, converted, strict=True))
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    for i, entry in enumerate(entries):
        neutral = by_index.get(i)
        if neutral is None:
            run.hold(entry)
            continue
        shell = {k: (_PLACE if k == "message" else copied(v)) for k, v in entry.items()}
        meta: dict[str, Any] = {"entry": shell, "order": order_of(entry["message"])}
        if tag(entry.get("parentUuid")) in uuids:
            meta["chained"] = True
        if isinstance(entry.get("uuid"), str) and entry["uuid"]:
            neutral["id"] = entry["uuid"]
        run.add(attach_meta(neutral, FORMAT, meta))
    return run.messages()


def _relink(entries: list[Any], chained: set[int]) -> None:
    """Point an entry whose parent was dropped at the entry written before it, so the ``parentUuid``
    chain Claude Code resumes from stays whole: a message entry read chained, and any other line of the
    chain (an ``attachment`` after a tool result) whose parent is no longer there."""
    present = {e["uuid"] for e in entries if isinstance(e, dict) and isinstance(e.get("uuid"), str)}
    previous: str | None = None
    for n, entry in enumerate(entries):
        parent = entry.get("parentUuid") if isinstance(entry, dict) else None
        lost = n not in chained and isinstance(parent, str) and parent not in present
        if (n in chained or lost) and parent not in present and not entry.get("isSidechain"):
            if lost:
                entries[n] = entry = {**entry, "parentUuid": previous}
            else:
                entry["parentUuid"] = previous
        if isinstance(entry, dict) and isinstance(entry.get("uuid"), str) and not entry.get("isSidechain"):
            previous = entry["uuid"]


def to_claude_code(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to Claude Code session entries (the inverse of `from_claude_code`).

    Carried lines come back as they were; each other message becomes its entry again with the
    message written by `to_anthropic`. A message with no entry of its own (added by a host) becomes a
    plain entry of its role; a system message, which no session entry holds, is refused. Where
    compaction removed an entry, the next one's ``parentUuid`` points at the entry before it.
    """
    kinds: list[tuple[str, Any]] = []
    live: list[Message] = []
    for i, message in enumerate(neutral_input(messages)):
        value = carried(message, FORMAT)
        if value is not None:
            kinds.append(("carried", value))
        else:
            if message.get("role") == "system":
                # Claude Code keeps its system prompt out of the session: no entry could carry it
                raise SnapshotError("a Claude Code session holds no system messages", message=i, field="role")
            for part in results_apart([message]):
                kinds.append(("live", len(live)))
                live.append(part)
    written = to_anthropic(ValidatedHistory(live))["messages"] if live else []  # checked once, above
    if len(written) != len(live):
        written = [_one_entry(message, i) for i, message in enumerate(live)]
    out: list[Any] = []
    chained: set[int] = set()
    fresh: dict[int, Message] = {}
    for kind, value in kinds:
        if kind == "carried":
            out.extend(value)
            continue
        message = live[value]
        meta = format_meta(message, FORMAT)
        shell = meta.get("entry")
        body = reorder(written[value], meta.get("order"))
        if isinstance(shell, dict):
            entry = {k: (body if v == _PLACE else copied(v)) for k, v in shell.items()}
        else:
            entry = {"type": body["role"], "message": body}
            fresh[len(out)] = message
        if meta.get("chained"):
            chained.add(len(out))
        out.append(entry)
    if fresh:
        _chain_fresh(out, fresh, live)
    _relink(out, chained)
    return JsonLines(out)


def _chain_fresh(entries: list[Any], fresh: Mapping[int, Message], live: Sequence[Message]) -> None:
    """Give each entry written for a message that had none (a summary that replaced entries, or every
    message of a history read from another format) the fields Claude Code follows when it resumes:
    ``parentUuid`` naming the entry before it, a ``uuid`` of its own (the entry after it, which named
    the one before, now names it), and the session's ``sessionId``. Without them the CLI's walk back
    from the last entry stops there and resumes without everything before.

    Ids are derived from the history itself, so writing it twice gives the same file: a session with
    no id of its own (none read from Claude Code) gets one from the digest of its messages."""
    session = next(
        (e["sessionId"] for e in entries if isinstance(e, dict) and isinstance(e.get("sessionId"), str)),
        None,
    )
    if session is None:
        session = history_uuid(live)
    previous: dict[str, Any] | None = None  # the last entry of the chain so far
    taken: Any = _NOTHING  # the parent the last run of fresh entries took over from the entry after it
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        before = previous.get("uuid") if previous is not None else None
        if n in fresh:
            if taken is _NOTHING:  # a run of fresh entries starts
                taken = before
            copied = {k: previous[k] for k in ("cwd", "timestamp") if previous is not None and k in previous}
            own = derived_uuid(session, fresh[n].get("id"), n)
            # in Claude Code's own key order
            entry = {"parentUuid": before, "isSidechain": False, "sessionId": session, **copied, **entry}
            entries[n] = entry = {**entry, "uuid": own}
        elif not isinstance(entry.get("uuid"), str):
            continue
        else:
            if taken is not _NOTHING and entry.get("parentUuid") == taken:
                entries[n] = entry = {**entry, "parentUuid": before}
            taken = _NOTHING
        previous = entry


def _one_entry(message: Message, i: int) -> dict[str, Any]:
    """The one Anthropic message an entry holds for ``message`` (a `SnapshotError` where it takes two)."""
    written = to_anthropic(ValidatedHistory([message]))["messages"]
    if len(written) != 1:
        raise SnapshotError(
            f"message {message.get('id')!r} takes {len(written)} Claude Code entries", message=i
        )
    body: dict[str, Any] = written[0]
    return body
