"""Converters between neutral messages and pi coding agent sessions (``~/.pi/agent/sessions/*/*.jsonl``).

Shape, from pi-mono's ``session-manager.ts`` (sessions version 2 and 3; OpenClaw keeps the same files): a
``session`` header line, then entries that form a tree by ``id`` / ``parentId``. pi resumes from the
last entry, walking its parents to the root (``buildSessionContext``); a ``compaction`` on that path
hides what stands before its ``firstKeptEntryId``. ``message`` entries hold a message: ``user`` (content
a string or text and image parts), ``assistant`` (text, thinking and ``toolCall`` parts, with the
provider, model, usage and stop reason), ``toolResult`` (``toolCallId``, ``toolName``, text and image
parts, ``isError``). Only the messages of that path that pi sends are judged; every other line (the
header, other branches, compactions, model changes, labels, custom and bash entries) is kept in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Block, Message, SnapshotError
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import CarrierRun, carried
from tracetrim.formats._entry_tree import EntryTree, join_bared
from tracetrim.formats._layout import one_result_each, results_apart
from tracetrim.formats._shape import JsonLines

FORMAT = "pi"
BLOCK_EXTRAS = common.meta_key(FORMAT)
_LIVE_ROLES = frozenset({"user", "assistant", "toolResult"})
_PLACE = "\x00tracetrim.content"
_EPOCH = "1970-01-01T00:00:00.000Z"
_VERSION = 3
_ROOT = "root"
"""What a branch summary names as where it left from when the branch started at the session's root."""
_NO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def is_pi_header(line: Any) -> bool:
    """Whether ``line`` is a pi session's header (``{"type": "session", "id", "timestamp", "cwd"}``)."""
    return isinstance(line, dict) and line.get("type") == "session" and "cwd" in line and "id" in line


def is_pi_session(lines: Sequence[Any]) -> bool:
    """Whether ``lines`` are a pi session file: its header, then entries with a ``type`` and an ``id``."""
    return (
        bool(lines)
        and is_pi_header(lines[0])
        and all(isinstance(e, dict) and isinstance(e.get("type"), str) and "id" in e for e in lines[1:])
    )


def _path(entries: Sequence[dict[str, Any]], by_id: Mapping[str, int]) -> list[int]:
    """The entries pi resumes from, root first: the last entry and its parents."""
    path: list[int] = []
    at: int | None = len(entries) - 1 if entries else None
    while at is not None:
        path.append(at)
        parent = entries[at].get("parentId")
        at = by_id.get(parent) if isinstance(parent, str) else None
        if at is not None and at >= path[-1]:  # a parent always stands before its child; else a cycle
            raise SnapshotError("an entry's parentId names an entry after it", message=path[-1] + 1)
    return path[::-1]


def _in_context(entries: Sequence[dict[str, Any]], path: list[int]) -> list[int]:
    """The entries of ``path`` pi sends: after its last compaction, and from that compaction's
    ``firstKeptEntryId`` on before it."""
    last = max((n for n, at in enumerate(path) if entries[at].get("type") == "compaction"), default=None)
    if last is None:
        return path
    kept = entries[path[last]].get("firstKeptEntryId")
    first = next((n for n in range(last) if entries[path[n]].get("id") == kept), last)
    return path[first:last] + path[last + 1 :]


def _call(part: dict[str, Any], i: int, j: int) -> Block:
    call_id = common.require_str(part.get("id"), "a toolCall's id", message=i, block=j, field="id")
    name = common.require_str(part.get("name"), "a toolCall's name", message=i, block=j, field="name")
    arguments = common.require_dict(part.get("arguments"), "a toolCall's arguments", message=i, block=j)
    block: Block = {"type": "tool_call", "id": call_id, "name": name, "input": common.dump_input(arguments)}
    return {**block, "state": "finished", BLOCK_EXTRAS: {"part": common.copied(part)}}


def _blocks(message: dict[str, Any], i: int) -> list[Block]:
    role = message["role"]
    content = message.get("content")
    if role == "toolResult":
        call_id = common.require_str(message.get("toolCallId"), "toolCallId", message=i, field="toolCallId")
        output = common.result_output(content, FORMAT, "a toolResult", message=i)
        name = message.get("toolName")
        result = {"type": "tool_result", "id": call_id, "name": name if isinstance(name, str) else ""}
        return [{**result, "output": output, "state": "success"}]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise SnapshotError("content must be a string or a list of parts", message=i, field="content")
    blocks: list[Block] = []
    for j, part in enumerate(content):
        if role == "assistant" and isinstance(part, dict) and part.get("type") == "toolCall":
            blocks.append(_call(part, i, j))
        else:
            blocks.extend(common.text_parts([part], FORMAT))
    if role == "assistant":  # pi-ai sends a thinking part's signature to a Responses model as its item
        common.mark_reasoning(blocks, output=_said, reasoning=_is_thinking)
    return blocks


def _is_thinking(block: Block) -> bool:
    """Whether ``block`` is one of pi's thinking parts (kept raw) or a thinking block."""
    value = block.get("value") if common.is_raw(block, FORMAT) else None
    return block["type"] == "thinking" or (isinstance(value, dict) and value.get("type") == "thinking")


def _said(block: Block) -> bool:
    """Whether ``block`` is what pi's model wrote after its thinking: text or a call."""
    return block["type"] in ("text", "tool_call")


def _with_its_reasoning(message: Message) -> Message | None:
    """``message`` less the thinking whose call went (None: nothing else was left of a turn that held
    something): reasoning goes with the call it led to, which OpenAI asks of pi-ai's reasoning items."""
    blocks = message["content"]
    kept = common.reasoning_with_its_call(blocks, reasoning=_is_thinking)
    if len(kept) == len(blocks):
        return message
    return {**message, "content": kept} if kept else None


def _tree_meta(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the writer needs to keep the tree whole: every entry's parent, in file order."""
    return {"parents": {e["id"]: e.get("parentId") for e in entries if isinstance(e.get("id"), str)}}


def from_pi(lines: Sequence[Any]) -> list[Message]:
    """Convert the lines of a pi session to neutral messages.

    Each ``user`` / ``assistant`` / ``toolResult`` message entry that pi sends when it resumes becomes
    one neutral message (id: the entry's ``id``): toolCall parts tool calls, a toolResult a tool result
    (pi keeps each result in a message of its own); thinking and image parts ride along unjudged. The
    entry around the message is kept in ``metadata["tracetrim.pi"]``, every other line in carriers.
    """
    common.require_sequence(lines, "a pi session", "lines")
    for i, line in enumerate(lines):
        common.require_dict(line, "a session line", message=i)
    if not lines or not is_pi_header(lines[0]):
        raise SnapshotError("a pi session starts with its session header", message=0, field="type")
    entries = list(lines[1:])
    for n, entry in enumerate(entries):
        if not isinstance(entry.get("id"), str):
            # version 1 sessions had no ids; pi gives them ids when it opens them
            raise SnapshotError(
                "a pi session entry needs an id (pi gives a version 1 session ids when it opens it)",
                message=n + 1,
            )
    by_id: dict[str, int] = {}
    for n, entry in enumerate(entries):
        if by_id.setdefault(entry["id"], n) != n:  # pi draws each id unused: a copy is a damaged file
            raise SnapshotError(f"entry id {entry['id']!r} is used twice", message=n + 1, field="id")
    sent = [
        n
        for n in _in_context(entries, _path(entries, by_id))
        if entries[n].get("type") == "message"
        and isinstance(entries[n].get("message"), dict)
        and common.tag(entries[n]["message"].get("role")) in _LIVE_ROLES
    ]
    live = {n: k for k, n in enumerate(sorted(sent))}  # each entry's place among the messages sent
    run = CarrierRun(FORMAT, {})
    run.hold(lines[0])
    for n, entry in enumerate(entries):
        if n not in live:
            run.hold(entry)
            continue
        message = entry["message"]
        blocks = _blocks(message, n + 1)
        shell = {k: (_PLACE if k == "message" else common.copied(v)) for k, v in entry.items()}
        body = {k: (_PLACE if k == "content" else common.copied(v)) for k, v in message.items()}
        role = "user" if message["role"] == "user" else "assistant"
        neutral = {"id": entry["id"], "role": role, "content": blocks}
        meta: dict[str, Any] = {"entry": shell, "message": body, common.POSITION: live[n]}
        if isinstance(message.get("content"), str):
            meta["content"] = "str"
        run.add(common.attach_meta(neutral, FORMAT, meta))
    out = run.messages()
    common.format_meta(out[0], FORMAT).update(_tree_meta(entries))  # the header's carrier
    return common.mark_pending(out)


def _part(block: Block, i: int, j: int) -> Any:
    """The content part a neutral block is written as."""
    if block["type"] == "tool_call":
        part = common.recorded(block, BLOCK_EXTRAS).get("part")
        arguments = common.parse_input(block, i, j)
        if isinstance(part, dict) and part.get("arguments") == arguments and part.get("id") == block["id"]:
            return common.copied(part)
        return {"type": "toolCall", "id": block["id"], "name": block["name"], "arguments": arguments}
    if block["type"] == "thinking":  # from elsewhere: pi's own thinking parts come back raw
        return {"type": "thinking", "thinking": block["thinking"]}
    return common.written_part(block, FORMAT, "pi", i, j)


def _result_content(block: Block, as_string: bool, i: int, j: int) -> Any:
    output = block["output"]
    if isinstance(output, list):
        return [common.written_part(b, FORMAT, "pi", i, j) for b in output]
    return output if as_string else [{"type": "text", "text": output}]


def _fresh_body(message: Message, role: str, blocks: list[Block], i: int) -> dict[str, Any]:
    """A message for a neutral one pi held none for (a summary, or a history from elsewhere), with
    the fields pi's providers read."""
    if role == "toolResult":
        [result] = blocks
        return {
            "role": "toolResult",
            "toolCallId": result["id"],
            "toolName": result["name"],
            "content": _result_content(result, False, i, 0),
            "isError": result.get("state", "success") != "success",
            "timestamp": 0,
        }
    if role == "user":
        return {"role": "user", "content": [_part(b, i, j) for j, b in enumerate(blocks)], "timestamp": 0}
    calls = any(b["type"] == "tool_call" for b in blocks)
    return {
        "role": "assistant",
        "content": [_part(b, i, j) for j, b in enumerate(blocks)],
        "api": "",
        "provider": "",
        "model": "",
        "usage": common.copied(_NO_USAGE),
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": 0,
    }


def _body(message: Message, meta: Mapping[str, Any], i: int) -> dict[str, Any]:
    """The pi message a neutral one (one message of pi's: results stand apart) is written as."""
    blocks = message["content"]
    sent = meta.get("message")
    results = [b for b in blocks if b["type"] == "tool_result"]
    role = "toolResult" if results else "user" if message["role"] == "user" else "assistant"
    if not isinstance(sent, dict) or (sent.get("role") == "toolResult") != bool(results):
        if message["role"] == "system":  # pi keeps its system prompt out of the session
            raise SnapshotError("a pi session holds no system messages", message=i, field="role")
        return _fresh_body(message, role, blocks, i)
    if results:
        content: Any = _result_content(results[0], meta.get("content") == "str", i, 0)
    elif meta.get("content") == "str" and [b["type"] for b in blocks] == ["text"]:
        content = blocks[0]["text"]
    else:
        content = [_part(b, i, j) for j, b in enumerate(blocks)]
    body = {k: (content if v == _PLACE else common.copied(v)) for k, v in sent.items()}
    if body.get("stopReason") == "toolUse" and not any(b["type"] == "tool_call" for b in blocks):
        body["stopReason"] = "stop"  # every call of the turn went: it no longer stops to use a tool
    return body


def _fresh_id(message: Message, n: int, session: str, taken: set[str]) -> str:
    """An 8-hex entry id for a message pi held none for, as pi's own ids look, derived from the
    history (the same file each time) and unused."""
    base = common.derived_uuid(session, message.get("id"), n).replace("-", "")
    for start in range(0, len(base) - 8):
        if base[start : start + 8] not in taken:
            return base[start : start + 8]
    raise SnapshotError("no free entry id", message=n)  # 24 tries at 32 bits each: never in practice


def _relink(entries: list[Any], fresh: set[int], path: set[str], tree: EntryTree) -> None:
    """Keep the tree whole where a drop took entries out or a message pi held none for came in:
    the path pi resumes from is chained in the order written (each of its entries' parent the one
    before it), an entry off the path names its nearest ancestor still written, a compaction's
    ``firstKeptEntryId`` names an entry still there, and so does a branch summary's ``fromId`` (the
    nearest ancestor of the entry the branch left from; ``"root"`` when none is)."""
    written = [e["id"] for e in entries[1:] if isinstance(e, dict) and isinstance(e.get("id"), str)]
    present = set(written)
    previous = None
    for n, entry in enumerate(entries):
        if n == 0 or not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        if n in fresh or entry["id"] in path:
            parent = previous
            previous = entry["id"]
        else:
            parent = tree.kept_ancestor(entry.get("parentId"), present)
        if entry.get("parentId") != parent:
            entries[n] = entry = {**entry, "parentId": parent}
        kept = entry.get("firstKeptEntryId")
        if entry.get("type") == "compaction" and isinstance(kept, str) and kept not in present:
            entries[n] = entry = {**entry, "firstKeptEntryId": tree.next_kept(kept, written, path)}
        left = entry.get("fromId")
        moved = isinstance(left, str) and left != _ROOT and left not in present
        if entry.get("type") == "branch_summary" and moved:
            # pi writes the entry a branch left from as both the summary's parent and its fromId.
            entries[n] = {**entry, "fromId": tree.kept_ancestor(left, present) or _ROOT}


def _header(messages: Sequence[Message]) -> dict[str, Any]:
    """The header of a session written from a history read elsewhere."""
    session = common.history_uuid(messages)
    return {"type": "session", "version": _VERSION, "id": session, "timestamp": _EPOCH, "cwd": "."}


def to_pi(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to a pi session (the inverse of `from_pi`).

    Carried lines come back as they were; each other message becomes its entry again (a tool result
    an entry of its own, pi's layout). Where a drop took entries out, the path pi resumes from is
    chained again and nothing else names an entry no longer there (a label of an entry that went goes
    too, as pi's own branching leaves it); a message with no entry of its
    own (a summary, or every message of a history read elsewhere, which gets a header too) gets an id
    and its place in the chain. A thinking part whose call went goes too (and a turn left with nothing).
    A system message, which no session entry holds, is refused.
    """
    messages = one_result_each(results_apart(common.neutral_input(messages), only_results=True))
    messages = [m for m in map(_with_its_reasoning, messages) if m is not None]
    tree = EntryTree(next(filter(None, (_parents(m) for m in messages)), {}))
    path = tree.path_from(next(reversed(tree.parents), None))
    messages = join_bared(
        messages,
        FORMAT,
        lambda message: _sends_nothing(message, path),
        lambda message: common.position_of(common.format_meta(message, FORMAT)),
    )
    out: list[Any] = []
    fresh: dict[int, Message] = {}
    for i, message in enumerate(messages):
        value = carried(message, FORMAT)
        if value is not None:
            out.extend(value)
            continue
        meta = common.format_meta(message, FORMAT)
        body = _body(message, meta, i)
        shell = meta.get("entry")
        if isinstance(shell, dict) and isinstance(meta.get("message"), dict):
            entry = {k: (body if v == _PLACE else common.copied(v)) for k, v in shell.items()}
        else:
            fresh[len(out)] = message
            entry = {"type": "message", "id": "", "parentId": None, "timestamp": _EPOCH, "message": body}
        out.append(entry)
    if not out or not is_pi_header(out[0]):
        out.insert(0, _header(messages))
        fresh = {n + 1: m for n, m in fresh.items()}
    _fill_fresh(out, fresh)
    out, fresh_at = _unlabelled(out, tree, set(fresh))
    _relink(out, fresh_at, path, tree)
    return JsonLines(out)


def _unlabelled(entries: list[Any], tree: EntryTree, fresh: set[int]) -> tuple[list[Any], set[int]]:
    """``entries`` without the labels of entries that went (pi's own branching keeps a label only with
    its entry), and where the fresh entries then stand; entries that named such a label as their parent
    name its nearest ancestor still written (`_relink`). pi labels only an entry it already holds, so
    one pass in file order also takes out a label of a label that went."""
    written = {e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
    out: list[Any] = []
    placed: set[int] = set()
    for n, entry in enumerate(entries):
        target = entry.get("targetId") if isinstance(entry, dict) and entry.get("type") == "label" else None
        if isinstance(target, str) and target in tree.parents and target not in written:
            written.discard(common.tag(entry.get("id")))
            continue
        if n in fresh:
            placed.add(len(out))
        out.append(entry)
    return out, placed


_CONTEXT_ENTRIES = frozenset({"message", "custom_message", "branch_summary"})
"""Entries whose text pi sends: a carrier holding one stands between the turns around it."""


def _sends_nothing(message: Message, path: set[str]) -> bool:
    """Whether ``message`` is a carrier of entries pi does not send (a label, a model change, an entry
    of another branch, ...)."""
    value = carried(message, FORMAT, copied=False)
    return value is not None and not any(
        isinstance(e, dict)
        and common.tag(e.get("type")) in _CONTEXT_ENTRIES
        and common.tag(e.get("id")) in path
        for e in value
    )


def _parents(message: Message) -> dict[str, Any] | None:
    """The tree a session's header carrier holds (`_tree_meta`), if ``message`` is that carrier."""
    parents = common.format_meta(message, FORMAT).get("parents") if message["role"] == "system" else None
    return parents if isinstance(parents, dict) else None


def _fill_fresh(entries: list[Any], fresh: Mapping[int, Message]) -> None:
    """Give each entry written for a message pi held none for an id and the timestamps of the entry
    before it (the header's session id seeds the ids)."""
    session = str(entries[0].get("id"))
    taken = {e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
    stamp, sent_at = _EPOCH, 0
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        if n in fresh:
            entry["id"] = _fresh_id(fresh[n], n, session, taken)
            taken.add(entry["id"])
            entry["timestamp"] = stamp
            entry["message"]["timestamp"] = sent_at
            continue
        if n > 0 and isinstance(entry.get("timestamp"), str):
            stamp = entry["timestamp"]
        message = entry.get("message")
        if isinstance(message, dict) and isinstance(message.get("timestamp"), int):
            sent_at = message["timestamp"]
