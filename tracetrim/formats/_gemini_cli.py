"""Converters between neutral messages and Gemini CLI session files (``~/.gemini/tmp/*/chats/*.json``).

Shape, from gemini-cli-core's ``ChatRecordingService`` (``ConversationRecord``): ``{"sessionId",
"projectHash", "startTime", "lastUpdated", "messages": [record, ...]}``. A record is ``{"id",
"timestamp", "type", "content", ...}`` with type ``user`` or ``gemini`` (``info``, ``error`` and
``warning`` records are what the CLI showed, never sent to the model). A ``gemini`` record may hold
``toolCalls``: ``{"id", "name", "args", "result": [part, ...], "status", "resultDisplay", ...}``, the
result a list of Gemini parts, usually one ``functionResponse`` with ``{"output": text}``. On resume the
CLI sends a gemini record as a model turn (its text and calls) followed by a user turn of the calls'
responses, so a call and its result live in one record.

Since 0.5x the CLI appends a session to ``session-*.jsonl`` instead: a first line of metadata
(``sessionId``, ``projectHash``, ...), then each record as it is written or rewritten (a later line with
the same ``id`` replaces it in place), ``{"$set": {...}}`` metadata updates (one with ``messages``
replaces them all) and ``{"$rewindTo": id}`` (the record and every one after it go), as its
``loadConversationRecord`` folds them. Such a log is read as the session it folds to and written back as
that session: its metadata line, then its records. A record the CLI synced from its in-memory history
holds its turn's parts, calls (``functionCall``) and responses (``functionResponse``) among them: a call
that goes takes those parts with it (Gemini 3's ``thoughtSignature`` moving to the first call left).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._json import sha256_hex
from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._layout import results_beside
from tracetrim.formats._shape import JsonLines

FORMAT = "gemini_cli"
BLOCK_EXTRAS = common.meta_key(FORMAT)
"""The key on a neutral block holding its tool call's record (every field but ``args`` and ``result``,
in order) or its result's parts as sent."""
RECORD_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
"""The ``type`` of a Gemini CLI message record."""
_LIVE = frozenset({"user", "gemini"})
_STATES = {"success": "success", "error": "error", "cancelled": "interrupted"}
_RESPONSE = ("functionResponse", "function_response")
_CONTENT = "\x00tracetrim.content"
_CALLS = "\x00tracetrim.toolCalls"


def is_gemini_cli_record(item: Any) -> bool:
    """Whether ``item`` is a record of a Gemini CLI session, by shape (a ``type`` of its own, no
    ``role``, and none of the keys Claude Code, Codex or OpenHands lines carry)."""
    return (
        isinstance(item, dict)
        and common.tag(item.get("type")) in RECORD_TYPES
        and "content" in item
        and not item.keys() & {"role", "message", "payload", "kind"}
    )


_LOG_KEYS = ("$set", "$rewindTo")


def _is_metadata(line: Any) -> bool:
    return (
        isinstance(line, dict)
        and isinstance(line.get("sessionId"), str)
        and isinstance(line.get("projectHash"), str)
        and "type" not in line
    )


def is_gemini_cli_log(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a Gemini CLI session log (``session-*.jsonl``): a metadata line first, then
    records and ``$set`` / ``$rewindTo`` lines."""
    return (
        bool(lines)
        and _is_metadata(lines[0])
        and all(
            is_gemini_cli_record(line) or (isinstance(line, dict) and line.keys() & set(_LOG_KEYS))
            for line in lines[1:]
        )
    )


def fold_log(lines: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    """A session log's metadata and records, as the CLI's ``loadConversationRecord`` folds them."""
    metadata: dict[str, Any] = {}
    records: dict[str, Any] = {}
    for i, line in enumerate(lines):
        line = common.require_dict(line, "a session line", message=i)
        if isinstance(line.get("$rewindTo"), str):
            # The record named and every one after it go (all, when it is unknown). Popped from the
            # end, so each record is removed once however many rewinds a log holds.
            target = line["$rewindTo"]
            if target not in records:
                records.clear()
            while records and records.popitem()[0] != target:
                pass
        elif isinstance(line.get("id"), str):
            records[line["id"]] = line
        elif isinstance(line.get("$set"), dict):
            if isinstance(line["$set"].get("messages"), list):
                records = {
                    m["id"]: m
                    for m in line["$set"]["messages"]
                    if isinstance(m, dict) and isinstance(m.get("id"), str)
                }
            metadata.update(line["$set"])
        elif _is_metadata(line):
            metadata.update(line)
            if isinstance(line.get("messages"), list):
                records.update(
                    (m["id"], m)
                    for m in line["messages"]
                    if isinstance(m, dict) and isinstance(m.get("id"), str)
                )
    metadata.pop("messages", None)
    return metadata, list(records.values())


def _part_id(part: Any, keys: Sequence[str]) -> str | None:
    """The id of a ``functionCall`` / ``functionResponse`` part (``keys``: its camel and snake names)."""
    if not isinstance(part, dict):
        return None
    body = next((part[k] for k in keys if k in part), None)
    return common.tag(body.get("id")) if isinstance(body, dict) else None


_CALL = ("functionCall", "function_call")


def _without_gone(records: list[Any], gone: set[str]) -> list[Any]:
    """``records`` with the call and response parts of the calls ``gone`` taken out of their
    ``content``; a record left with none goes, and a signature on a call that went moves to the
    first call left in its turn."""
    out: list[Any] = []
    for record in records:
        if gone and isinstance(record, dict) and isinstance(record.get("toolCalls"), list):
            record = {**record, "toolCalls": [_answers_left(call, gone) for call in record["toolCalls"]]}
        content = record.get("content") if isinstance(record, dict) else None
        if not gone or not isinstance(content, list):
            out.append(record)
            continue
        kept = [p for p in content if (_part_id(p, _CALL) or _part_id(p, _RESPONSE)) not in gone]
        if len(kept) == len(content):
            out.append(record)
            continue
        signed = [p for p in content if _part_id(p, _CALL) and "thoughtSignature" in p]
        calls = [p for p in kept if _part_id(p, _CALL)]
        if signed and calls and signed[0] not in kept and "thoughtSignature" not in calls[0]:
            moved = {**calls[0], "thoughtSignature": signed[0]["thoughtSignature"]}
            kept = [moved if p is calls[0] else p for p in kept]
        if kept or record.get("toolCalls") or record.get("type") == "gemini":
            out.append({**record, "content": kept})
    return out


def _own_part(result: Any, call_id: str | None) -> int | None:
    """Where a call's own ``functionResponse`` stands in its result: the one part, or, in a result a
    synced record holds (every response of its turn), the part answering ``call_id``."""
    if not isinstance(result, list) or not result or not all(isinstance(p, dict) for p in result):
        return None
    if len(result) == 1:
        return 0
    if call_id is None or not all(_part_id(p, _RESPONSE) for p in result):
        return None
    own = [k for k, p in enumerate(result) if _part_id(p, _RESPONSE) == call_id]
    return own[0] if len(own) == 1 else None


def _answers_left(call: Any, gone: set[str]) -> Any:
    """A tool call record whose ``result`` (a synced record's: every response of its turn) no longer
    holds the responses of the calls ``gone``."""
    result = call.get("result") if isinstance(call, dict) else None
    if not isinstance(result, list) or not any(_part_id(p, _RESPONSE) in gone for p in result):
        return call
    return {**call, "result": [p for p in result if _part_id(p, _RESPONSE) not in gone]}


def _text_output(result: Any, call_id: str | None = None) -> str | None:
    """The text of a call's result when its own part is a ``functionResponse`` whose response is
    ``{"output": text}`` (what the CLI's tools give), else None."""
    at = _own_part(result, call_id)
    if at is None:
        return None
    part = result[at]
    key = next((k for k in _RESPONSE if k in part), None)
    response = part[key].get("response") if key is not None and isinstance(part[key], dict) else None
    if isinstance(response, dict) and set(response) == {"output"} and isinstance(response["output"], str):
        return response["output"]
    return None


def _content_blocks(content: Any, i: int) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        # A plain Gemini text part ({"text": ...}, what the CLI records a prompt as) is text the judge
        # reads; any other part (a thought, a call, a response, a file) rides as it is.
        return [
            {"type": "text", "text": p["text"]}
            if isinstance(p, dict) and p.keys() == {"text"} and isinstance(p["text"], str)
            else common.raw_block(FORMAT, common.copied(p))
            for p in content
        ]
    raise SnapshotError("content must be text or a list of parts", message=i, field="content")


def _tool_blocks(call: Any, i: int, j: int) -> list[Block]:
    call = common.require_dict(call, "a tool call record", message=i, block=j)
    call_id = common.require_str(call.get("id"), "a tool call's id", message=i, block=j, field="id")
    name = common.require_str(call.get("name"), "a tool call's name", message=i, block=j, field="name")
    args = common.require_dict(call.get("args", {}), "a tool call's args", message=i, block=j, field="args")
    record = common.shape_of(call, "args", "result")
    blocks: list[Block] = [
        {
            "type": "tool_call",
            "id": call_id,
            "name": name,
            "input": common.dump_input(args),
            "state": "finished",
            BLOCK_EXTRAS: {"record": record},
        }
    ]
    if "result" not in call or call["result"] is None:
        return blocks
    text = _text_output(call["result"], call_id)
    output: str | list[Block] = (
        text if text is not None else [common.raw_block(FORMAT, common.copied(call["result"]))]
    )
    blocks.append(
        {
            "type": "tool_result",
            "id": call_id,
            "name": name,
            "output": output,
            "state": _STATES.get(str(call.get("status")), "error"),
            BLOCK_EXTRAS: {"result": common.copied(call["result"])},
        }
    )
    return blocks


def from_gemini_cli(records: Sequence[Any]) -> list[Message]:
    """Convert the message records of a Gemini CLI session to neutral messages.

    A user record becomes a user message; a gemini record an assistant message holding its text, then
    each tool call followed by its result (ids: the records' own). Records the model never sees
    (``info``, ``error``, ``warning``) ride in carriers in place. What the neutral form has no place
    for (timestamps, thoughts, tokens, ``resultDisplay``) is kept so `to_gemini_cli` writes it back.
    """
    common.require_sequence(records, "a Gemini CLI session's messages", "records")
    seen: dict[str, int] = {}
    run = CarrierRun(FORMAT, seen)
    if is_gemini_cli_log(records):
        metadata, records = fold_log(records)
        run.hold(metadata)
    for i, record in enumerate(records):
        record = common.require_dict(record, "a message record", message=i)
        kind = common.tag(record.get("type"))
        if kind not in _LIVE:
            if kind not in RECORD_TYPES:
                got = record.get("type")
                raise SnapshotError(f"type must be one of {sorted(RECORD_TYPES)}, got {got!r}", message=i)
            run.hold(common.copied(record))
            continue
        blocks = _content_blocks(record.get("content"), i)
        calls = record.get("toolCalls")
        if calls is not None:
            if kind != "gemini" or not isinstance(calls, list):
                raise SnapshotError(
                    "toolCalls must be a list on a gemini record", message=i, field="toolCalls"
                )
            for j, call in enumerate(calls):
                blocks.extend(_tool_blocks(call, i, j))
        shell = {
            k: _CONTENT if k == "content" else _CALLS if k == "toolCalls" else common.copied(v)
            for k, v in record.items()
        }
        meta: dict[str, Any] = {"record": shell}
        meta["content"] = "str" if isinstance(record.get("content"), str) else "parts"
        if calls:
            meta["called"] = True
            meta["calls"] = [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]
        given = record.get("id")
        ident = given if isinstance(given, str) and given and given not in seen else None
        message_id = ident or common.message_id("gc-", record, seen, i)
        seen.setdefault(message_id, 1)
        role = "assistant" if kind == "gemini" else "user"
        run.add(common.attach_meta({"id": message_id, "role": role, "content": blocks}, FORMAT, meta))
    return common.mark_pending(run.messages())


def _result(block: Block, i: int, j: int) -> Any:
    """A result block as the record's ``result`` parts: as sent when its text is unchanged, else the sent
    ``functionResponse`` holding the new text."""
    sent = common.recorded(block, BLOCK_EXTRAS).get("result")
    output = block["output"]
    if not isinstance(output, str):
        if len(output) == 1 and common.is_raw(output[0], FORMAT):
            return common.copied(output[0]["value"])
        raise common.unsupported("Gemini CLI tool results", block, i, j)
    if _text_output(sent, block["id"]) == output:
        return common.copied(sent)
    at = _own_part(sent, block["id"]) if _text_output(sent, block["id"]) is not None else None
    if at is not None and isinstance(sent, list):
        parts = common.copied(sent)
        key = next(k for k in _RESPONSE if k in parts[at])
        parts[at][key]["response"] = {"output": output}
        return parts
    return [{"functionResponse": {"id": block["id"], "name": block["name"], "response": {"output": output}}}]


def _tool_calls(blocks: Sequence[Block], i: int) -> list[dict[str, Any]]:
    results = {b["id"]: (j, b) for j, b in enumerate(blocks) if b["type"] == "tool_result"}
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        if block["type"] != "tool_call":
            continue
        record = common.recorded(block, BLOCK_EXTRAS).get("record")
        entry: dict[str, Any] = (
            common.copied(record) if isinstance(record, dict) else {"id": block["id"], "name": block["name"]}
        )
        entry["args"] = common.parse_input(block, i, j)
        found = results.get(block["id"])
        if found is not None:
            entry["result"] = _result(found[1], i, found[0])
        elif entry.get("result", 0) is None:
            pass  # sent as null (a call still running): stays null
        else:
            entry.pop("result", None)
        calls.append(entry)
    return calls


def _content(blocks: Sequence[Block], meta: Mapping[str, Any]) -> Any:
    texts = [b for b in blocks if b["type"] not in ("tool_call", "tool_result")]
    if meta.get("content") == "str" and all(b["type"] == "text" for b in texts):
        return "\n\n".join(b["text"] for b in texts)
    return [
        common.copied(b["value"]) if common.is_raw(b, FORMAT) else {"text": b.get("text", "")} for b in texts
    ]


def to_gemini_cli(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to Gemini CLI message records (the inverse of `from_gemini_cli`).

    Carried records come back as they were; each other message becomes its record again, with its text
    as ``content`` (a tombstone after the text it follows) and its calls and their results as
    ``toolCalls``. A dropped call leaves its record's ``toolCalls``; a shortened result is written into
    the ``functionResponse`` it came in. A message with no record of its own becomes a plain record.
    On resume the CLI sends each gemini record as a model turn, and Gemini refuses two model turns in a
    row, so a gemini record whose calls all went joins the gemini record after it (its text first).
    """
    out = _Records()
    folded: int | None = None  # where a gemini record whose calls all went is, to join the next one
    messages = results_beside(common.neutral_input(messages))  # a record holds its calls' results
    kept = {b["id"] for m in messages for b in m["content"] if b["type"] == "tool_call"}
    read = {c for m in messages for c in common.format_meta(m, FORMAT).get("calls", ()) if isinstance(c, str)}
    values = [carried(message, FORMAT) for message in messages]
    session = _session_of(values, messages)
    for i, (message, value) in enumerate(zip(messages, values, strict=True)):
        if value is not None:
            out.put(*value)
            continue
        meta = common.format_meta(message, FORMAT)
        shell = meta.get("record")
        if message["role"] == "system" and not isinstance(shell, dict):
            # the CLI sets its system prompt from its own configuration: no record holds one
            raise SnapshotError("a Gemini CLI session holds no system messages", message=i, field="role")
        if not isinstance(shell, dict):
            shell = _fresh_record(message, i, session["sessionId"], out.last_stamp())
        record: dict[str, Any] = {}
        for key, value in shell.items():
            if value == _CONTENT:
                record[key] = _content(message["content"], meta)
            elif value == _CALLS:
                record[key] = _tool_calls(message["content"], i)
            else:
                record[key] = common.copied(value)
        if folded is not None:
            if record.get("type") == "gemini":
                record["content"] = _joined(out.drop(folded).get("content"), record.get("content"))
            folded = None
        if meta.get("called") and record.get("type") == "gemini" and not record.get("toolCalls"):
            folded = len(out.records)
        out.put(record)
    written = _with_shortened(_without_gone(out.kept(), read - kept), _shortened(messages))
    if common.read_from(messages, FORMAT):
        return written
    return JsonLines([session, *written])  # from elsewhere: a session log of its own, as the CLI loads it


def _session_of(values: Sequence[Any], messages: Sequence[Message]) -> dict[str, Any]:
    """The session's metadata line: the one read (among the carriers' ``values``), else one for a
    history read from another format (the CLI loads no session without ``sessionId`` and
    ``projectHash``; it keeps the hash it finds), derived from the history, so writing it twice gives
    the same file."""
    for value in values:
        for line in value or ():
            if _is_metadata(line):
                return dict(line)
    session = common.history_uuid(messages)
    return {"sessionId": session, "projectHash": sha256_hex(session.encode()), "kind": "main"}


class _Records:
    """The records written so far: a record joined into a later one is dropped from its place, and the
    last one with a ``timestamp`` is at hand; each in constant time (amortized), where a search of the
    records written so far made a long history from elsewhere quadratic."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self._dropped: set[int] = set()
        self._stamped: list[int] = []  # where the records with a timestamp are, in order

    def put(self, *records: Any) -> None:
        """``records`` written after the others."""
        for record in records:
            if isinstance(record, dict) and "timestamp" in record:
                self._stamped.append(len(self.records))
            self.records.append(record)

    def drop(self, at: int) -> Any:
        """The record at ``at``, no longer written."""
        self._dropped.add(at)
        return self.records[at]

    def last_stamp(self) -> Any:
        """The ``timestamp`` of the last record written that has one (None if none has)."""
        while self._stamped and self._stamped[-1] in self._dropped:
            self._stamped.pop()
        return self.records[self._stamped[-1]]["timestamp"] if self._stamped else None

    def kept(self) -> list[Any]:
        """The records written, in order."""
        return [r for at, r in enumerate(self.records) if at not in self._dropped]


def _fresh_record(message: Message, i: int, session: str, stamp: Any) -> dict[str, Any]:
    """The shell of a record for a message that had none (a summary, or a history from elsewhere): an
    ``id`` (the CLI skips a record without one) and the last record's ``timestamp`` (``stamp``)."""
    shell: dict[str, Any] = {"id": common.derived_uuid(session, message.get("id"), i)}
    if stamp is not None:
        shell["timestamp"] = stamp
    shell["type"] = "gemini" if message["role"] == "assistant" else "user"
    shell["content"] = _CONTENT
    if any(b["type"] == "tool_call" for b in message["content"]):
        shell["toolCalls"] = _CALLS
    return shell


def _shortened(messages: Sequence[Message]) -> dict[str, tuple[Any, Any]]:
    """Each shortened result's own ``functionResponse`` part: as sent, and as written."""
    out: dict[str, tuple[Any, Any]] = {}
    for i, message in enumerate(messages):
        for j, block in enumerate(message["content"]):
            if block["type"] != "tool_result" or not isinstance(block["output"], str):
                continue
            sent = common.recorded(block, BLOCK_EXTRAS).get("result")
            text = _text_output(sent, block["id"])
            at = _own_part(sent, block["id"])
            if text is None or text == block["output"] or at is None or not isinstance(sent, list):
                continue
            out[block["id"]] = (sent[at], _result(block, i, j)[at])
    return out


def _with_shortened(records: list[Any], shortened: Mapping[str, tuple[Any, Any]]) -> list[Any]:
    """``records`` whose ``content`` repeats a shortened result's response as it was sent (the CLI records
    the turn that sent a tool's responses, and resumes it) holding the shortened one instead."""
    if not shortened:
        return records
    out: list[Any] = []
    for record in records:
        content = record.get("content") if isinstance(record, dict) else None
        if isinstance(content, list) and any(_part_id(p, _RESPONSE) in shortened for p in content):
            parts = []
            for part in content:
                found = shortened.get(_part_id(part, _RESPONSE) or "")
                parts.append(common.copied(found[1]) if found is not None and part == found[0] else part)
            record = {**record, "content": parts}
        out.append(record)
    return out


def _joined(first: Any, then: Any) -> Any:
    """Two records' contents as one (text, or parts when either is parts)."""
    if isinstance(first, str) and isinstance(then, str):
        return "\n\n".join(t for t in (first, then) if t)

    def parts(content: Any) -> list[Any]:
        """A record's content as parts."""
        return ([{"text": content}] if content else []) if isinstance(content, str) else list(content or [])

    return [*parts(first), *parts(then)]
