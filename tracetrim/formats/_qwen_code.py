"""Converters between neutral messages and Qwen Code sessions (``~/.qwen/projects/<project>/chats/*.jsonl``).

Shape, from Qwen Code 0.24's ``ChatRecordingService`` and ``prepareTranscriptRecords``: one record a
line, each with a ``uuid``, its ``parentUuid``, the ``sessionId`` and a ``type`` (``user``,
``assistant``, ``tool_result``, ``system``), the records forming a tree. Qwen Code resumes from the last
conversation record, walking its parents; a ``chat_compression`` record on that path whose payload holds
a ``compressedHistory`` stands for everything before it. ``user``, ``assistant`` and ``tool_result``
records hold a Gemini ``Content`` under ``message`` (``functionCall`` parts in the model's, each
``functionResponse`` in a record of its own). Only those records of that path that Qwen Code sends as
they are (no ``subtype``) are judged; every other line (system records, other branches, what a
compression stands for) is kept in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._entry_tree import EntryTree, join_bared
from tracetrim.formats._gemini import from_gemini, to_gemini
from tracetrim.formats._layout import one_result_each, results_apart
from tracetrim.formats._shape import JsonLines

FORMAT = "qwen_code"
_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_LIVE_TYPES = frozenset({"user", "assistant", "tool_result"})
_NOT_CONVERSATION = frozenset(
    {
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)
"""System records Qwen Code never resumes from (``isTranscriptConversationRecord``)."""
_PROVENANCE = {"user": "real_user", "assistant": "assistant_output", "tool_result": "tool_result"}
_PLACE = "\x00tracetrim.message"
_EPOCH = "1970-01-01T00:00:00.000Z"
_CHECKPOINT = "branch_checkpoint"
_CHECKPOINT_START = "startExclusiveRecordUuid"
"""A branch checkpoint's record, and the record its branch starts after (None: the session's start)."""


def _is_record(item: Any) -> bool:
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str) or "parentUuid" not in item:
        return False
    message = item.get("message")
    return (
        common.tag(item.get("type")) in _TYPES
        and isinstance(item.get("sessionId"), str)
        and (message is None or (isinstance(message, dict) and isinstance(message.get("parts"), list)))
    )


def is_qwen_code_session(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a Qwen Code session: records with a ``uuid``, ``parentUuid``, ``sessionId``
    and ``type``, some holding a Gemini ``Content`` (Claude Code's entries hold an Anthropic message)."""
    return bool(lines) and all(map(_is_record, lines)) and any("message" in r for r in lines)


def _is_conversation(record: Mapping[str, Any]) -> bool:
    return not (record.get("type") == "system" and common.tag(record.get("subtype")) in _NOT_CONVERSATION)


def _is_compression(record: Mapping[str, Any]) -> bool:
    payload = record.get("systemPayload")
    return (
        record.get("type") == "system"
        and record.get("subtype") == "chat_compression"
        and isinstance(payload, dict)
        and bool(payload.get("compressedHistory"))
    )


def _path(records: Sequence[dict[str, Any]], by_id: Mapping[str, int]) -> list[int]:
    """The records Qwen Code resumes from, root first: the last conversation record and its parents (a
    parent no record has, or one seen before, ends the walk, as it does Qwen Code's)."""
    leaf = next((n for n in reversed(range(len(records))) if _is_conversation(records[n])), None)
    path: list[int] = []
    seen: set[int] = set()
    at = leaf
    while at is not None and at not in seen:
        seen.add(at)
        path.append(at)
        parent = records[at].get("parentUuid")
        at = by_id.get(parent) if isinstance(parent, str) else None
    return path[::-1]


def _live(records: Sequence[dict[str, Any]], path: list[int]) -> list[int]:
    """The records of ``path`` Qwen Code sends as they are: after its last compression, conversation
    records with a message and no subtype."""
    last = max((n for n, at in enumerate(path) if _is_compression(records[at])), default=-1)
    return [
        at
        for at in path[last + 1 :]
        if common.tag(records[at].get("type")) in _LIVE_TYPES
        and "subtype" not in records[at]
        and isinstance(records[at].get("message"), dict)
    ]


def from_qwen_code(lines: Sequence[Any]) -> list[Message]:
    """Convert the records of a Qwen Code session to neutral messages.

    Each record Qwen Code sends as it is when it resumes becomes one neutral message (id: its ``uuid``),
    its ``Content`` read as Gemini's (`from_gemini`: a ``functionCall`` a tool call, a
    ``functionResponse`` its result, thoughts thinking). The record around the message is kept in
    ``metadata["tracetrim.qwen_code"]``, every other line in carriers.
    """
    common.require_sequence(lines, "a Qwen Code session", "records")
    for i, line in enumerate(lines):
        if not _is_record(line):
            raise SnapshotError(
                "a Qwen Code record needs a string uuid, a parentUuid, a sessionId, a type of user, "
                "assistant, tool_result or system, and a message (if any) with a parts list",
                message=i,
            )
    records: list[dict[str, Any]] = list(lines)
    by_id: dict[str, int] = {}
    for n, record in enumerate(records):
        by_id.setdefault(record["uuid"], n)
    path = _path(records, by_id)
    live = _live(records, path)
    for n in live:
        if by_id[records[n]["uuid"]] != n:  # Qwen Code joins such copies into one turn; tracetrim does not
            raise SnapshotError(f"record uuid {records[n]['uuid']!r} is used twice", message=n, field="uuid")
    try:
        neutral = iter(from_gemini([records[n]["message"] for n in live]))
    except SnapshotError as exc:
        at = exc.message_index
        line = live[at] if at is not None and 0 <= at < len(live) else None
        raise exc.at_message(line) from None
    chosen = {n: k for k, n in enumerate(live)}
    run = CarrierRun(FORMAT, {})
    for n, record in enumerate(records):
        if n not in chosen:
            run.hold(record)
            continue
        message = next(neutral)
        shell = {k: (_PLACE if k == "message" else common.copied(v)) for k, v in record.items()}
        message["id"] = record["uuid"]
        meta = {"record": shell, common.POSITION: chosen[n]}
        run.add(common.attach_meta(message, FORMAT, meta))
    out = run.messages()
    parents = {r["uuid"]: r["parentUuid"] for r in reversed(records)}  # the first record of each uuid
    leaf = records[path[-1]]["uuid"] if path else None
    tree = {"parents": dict(reversed(parents.items())), "leaf": leaf}
    if out:
        common.format_meta(out[0], FORMAT)["tree"] = tree
    return out


def _tree(messages: Sequence[Message]) -> tuple[EntryTree, set[str]]:
    """The tree as read, and the path Qwen Code resumed from, from the first message's metadata."""
    tree = common.format_meta(messages[0], FORMAT).get("tree") if messages else None
    if not isinstance(tree, dict) or not isinstance(tree.get("parents"), dict):
        return EntryTree({}), set()
    entries = EntryTree(tree["parents"])
    return entries, entries.path_from(tree.get("leaf"))


def _sends_nothing(message: Message, path: set[str]) -> bool:
    """Whether ``message`` is a carrier of records Qwen Code sends nothing for (telemetry, snapshots,
    records of another branch)."""
    value = carried(message, FORMAT, copied=False)
    return value is not None and not any(
        isinstance(r, dict) and isinstance(r.get("message"), dict) and r.get("uuid") in path for r in value
    )


def _content(message: Message, i: int) -> dict[str, Any]:
    """The Gemini ``Content`` a neutral message (one turn: results stand apart) is written as."""
    if message["role"] == "system":  # Qwen Code keeps its system prompt out of the session
        raise SnapshotError("a Qwen Code session holds no system messages", message=i, field="role")
    try:
        [content] = to_gemini(common.ValidatedHistory([message]))["messages"]
    except SnapshotError as exc:
        raise exc.at_message(i) from None
    written: dict[str, Any] = content
    return written


def _record_type(content: Mapping[str, Any]) -> str:
    if content.get("role") == "model":
        return "assistant"
    answers = any(isinstance(p, dict) and "functionResponse" in p for p in content.get("parts", ()))
    return "tool_result" if answers else "user"


def _fresh(content: dict[str, Any], message: Message, n: int, like: Mapping[str, Any]) -> dict[str, Any]:
    """A record for a message Qwen Code held none for, its session fields taken from ``like`` (the
    record before it, or the first of the file)."""
    kind = _record_type(content)
    record = {
        "uuid": common.derived_uuid(like.get("sessionId"), message.get("id"), n),
        "parentUuid": None,
        "sessionId": like.get("sessionId"),
        "timestamp": like.get("timestamp", _EPOCH),
        "type": kind,
        "provenance": _PROVENANCE[kind],
        "cwd": like.get("cwd", "."),
        "version": like.get("version", "unknown"),
    }
    return {**record, "message": content}


def _relink(records: list[Any], on_path: list[bool], tree: EntryTree) -> None:
    """Keep the tree whole where a drop took records out or a record came in: the path Qwen Code
    resumes from is chained in the order written (each record's parent the one before it; the first
    keeps its own), a record off the path names its nearest ancestor still written, and so does a
    branch checkpoint whose branch started after a record that went."""
    present = {r["uuid"] for r in records if isinstance(r, dict) and isinstance(r.get("uuid"), str)}
    previous: Any = None
    started = False
    for n, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("uuid"), str):
            continue
        if on_path[n]:
            parent = previous if started else record.get("parentUuid")
            started, previous = True, record["uuid"]
        else:
            parent = tree.kept_ancestor(record.get("parentUuid"), present)
        if record.get("parentUuid") != parent:
            records[n] = record = {**record, "parentUuid": parent}
        payload = record.get("systemPayload")
        if record.get("subtype") == _CHECKPOINT and isinstance(payload, dict):
            start = payload.get(_CHECKPOINT_START)
            if isinstance(start, str) and start not in present:
                # As Qwen Code's own fork moves a boundary that did not come along.
                moved = {**payload, _CHECKPOINT_START: tree.kept_ancestor(start, present)}
                records[n] = {**record, "systemPayload": moved}


def to_qwen_code(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a Qwen Code session (the inverse of `from_qwen_code`).

    Carried records come back as they were; each other message becomes its record again (a tool result
    a record of its own). Where a drop took records out, the path Qwen Code resumes from is chained
    again, a record off it names its nearest ancestor still there, and an assistant turn a drop left
    with no call joins the next one. A message with no record of its own (a summary, or every
    message of a history read elsewhere) gets one, in the session of the records around it. A system
    message, which no session record holds, is refused.
    """
    messages = results_apart(common.neutral_input(messages), only_results=True)
    messages = one_result_each(messages)
    tree, path = _tree(messages)
    messages = join_bared(
        messages,
        FORMAT,
        lambda message: _sends_nothing(message, path),
        lambda message: common.position_of(common.format_meta(message, FORMAT)),
    )
    out: list[Any] = []
    on_path: list[bool] = []
    fresh: dict[int, tuple[dict[str, Any], Message]] = {}
    for i, message in enumerate(messages):
        value = carried(message, FORMAT)
        if value is not None:
            out.extend(value)
            on_path += [isinstance(r, dict) and r.get("uuid") in path for r in value]
            continue
        content = _content(message, i)
        shell = common.format_meta(message, FORMAT).get("record")
        if isinstance(shell, dict) and shell.get("type") == _record_type(content):
            out.append({k: (content if v == _PLACE else common.copied(v)) for k, v in shell.items()})
        else:
            fresh[len(out)] = (content, message)
            out.append(None)
        on_path.append(True)
    like = next((r for r in out if isinstance(r, dict)), {"sessionId": common.history_uuid(messages)})
    for n, record in enumerate(out):
        if record is None:
            content, message = fresh[n]
            out[n] = _fresh(content, message, n, like)
        elif isinstance(record, dict):
            like = record
    _relink(out, on_path, tree)
    return JsonLines(out)
