"""Converters between neutral messages and Google ADK sessions (``adk run --save_session`` files).

Shape, from ``google-adk`` (``google.adk.sessions.Session``, ``google.adk.events.Event``): a session is
``{"id", "appName", "userId", "state", "events": [...], "lastUpdateTime"}`` (camelCase as ``adk run``
saves it, snake_case from a plain ``model_dump``), and ``adk run --resume FILE`` loads it back. Each
event has an ``author``, an ``invocationId``, an ``id``, a ``timestamp``, ``actions`` and, for a turn, a
Gemini ``content`` (``role`` and ``parts``: ``functionCall`` / ``functionResponse`` with ADK's
``adk-...`` ids). An event carrying ``actions.compaction`` is ADK's own compaction: the model sees its
summary instead of what it covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._carrier import carried, interleaved
from tracetrim.formats._common import (
    ValidatedHistory,
    attach_meta,
    copied,
    derived_uuid,
    format_meta,
    join_turns,
    neutral_input,
    position_of,
    read_from,
    require_dict,
    require_sequence,
)
from tracetrim.formats._gemini import FORMAT as GEMINI
from tracetrim.formats._gemini import from_gemini, to_gemini, turn_role
from tracetrim.formats._layout import results_apart
from tracetrim.formats._order import order_of, reorder

FORMAT = "adk"
_INVOCATION = ("invocationId", "invocation_id")
_CONTENT = "\x00tracetrim.content"
"""Where an event's content stood among its fields (a placeholder no JSON file holds)."""
_MESSAGE = "\x00tracetrim.message"
"""The key on a content being written naming the message it came from."""


def is_adk_event(event: Any) -> bool:
    """Whether ``event`` is an event of an ADK session, by shape."""
    return (
        isinstance(event, dict)
        and isinstance(event.get("author"), str)
        and any(isinstance(event.get(k), str) for k in _INVOCATION)
        and "role" not in event
    )


def is_adk_session(data: Any) -> bool:
    """Whether ``data`` is a whole ADK session (its events, and its app or user)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("events"), list)
        and any(k in data for k in ("appName", "app_name", "userId", "user_id"))
    )


def _compacts(event: Mapping[str, Any]) -> bool:
    actions = event.get("actions")
    return isinstance(actions, dict) and actions.get("compaction") is not None


def _is_turn(event: Mapping[str, Any]) -> bool:
    """An event the model sees as a turn: a content with parts, not a streaming fragment."""
    content = event.get("content")
    return (
        isinstance(content, dict)
        and isinstance(content.get("parts"), list)
        and bool(content["parts"])
        and not event.get("partial")
    )


def from_adk(events: Sequence[Any]) -> list[Message]:
    """Convert the events of an ADK session to neutral messages.

    The events after the last one carrying ADK's own compaction that hold a turn are read together as
    Gemini contents (`from_gemini`: calls paired with their responses by ADK's ids, a ``{"result":
    text}`` response read as its text); each message takes its event's id and keeps the event's other
    fields. Every other event (state changes, what ADK compacted, the compaction itself) rides in
    carriers in place, never judged.
    """
    require_sequence(events, "an ADK session's events", "event objects")
    for i, event in enumerate(events):
        require_dict(event, "an event", message=i)
        if "content" in event and event["content"] is not None:
            require_dict(event["content"], "an event's content", message=i, field="content")
    start = max((i + 1 for i, event in enumerate(events) if _compacts(event)), default=0)
    live = [i for i in range(start, len(events)) if _is_turn(events[i])]
    try:
        neutral = from_gemini([events[i]["content"] for i in live])
    except SnapshotError as exc:  # named by its place among the turns: name the event instead
        at = exc.message_index
        event = live[at] if at is not None and 0 <= at < len(live) else None
        raise SnapshotError(
            f"{exc.problem} (in its content)", message=event, block=exc.block_index, field=exc.field
        ) from None
    if len(neutral) != len(live):
        raise SnapshotError(f"{len(live)} ADK turns read back as {len(neutral)}; cannot keep their places")
    by_event: dict[int, Message] = {}
    ids: set[str] = set()
    for i, message in zip(live, neutral, strict=True):
        event = events[i]
        own = event.get("id")
        if isinstance(own, str) and own and own not in ids:
            message["id"] = own
            ids.add(own)
        # The event whole but its content, which the message holds: its keys in the file's order.
        fields = {k: (_CONTENT if k == "content" else copied(v)) for k, v in event.items()}
        attach_meta(message, FORMAT, {"event": fields, "order": order_of(event["content"])})
        by_event[i] = message
    return interleaved(FORMAT, events, by_event)


def to_adk(messages: Sequence[Any]) -> list[Any]:
    """Convert neutral messages back to ADK events (the inverse of `from_adk`): carried events as they
    were, every other message one event of its Gemini content and its event's fields.

    ADK sends each event's content as a turn, so two events of one role that a drop made neighbours
    (a model turn whose calls all went, then the next model turn) become one event: the first's
    fields, both contents' parts. Events that stood side by side when read stay apart.
    """
    messages = results_apart(neutral_input(messages))  # a result beside its call: an event of its own
    values = [carried(message, FORMAT) for message in messages]
    if messages and not read_from(messages, FORMAT):
        # ADK shows the model's turns of any author but the agent it runs as "another agent's" transcript
        raise SnapshotError(
            "an ADK session's events name the agent that wrote them, and a history not read from an ADK "
            "session does not say: restore it in its own format (or as gemini)"
        )
    contents: list[dict[str, Any]] = []
    positions: list[int | None] = []
    for i, message in enumerate(messages):
        if values[i] is not None:
            continue
        if message.get("role") == "system":
            raise SnapshotError("an ADK session holds no system messages", message=i, field="role")
        (content,) = to_gemini(ValidatedHistory([message]))["messages"]
        content = reorder(content, format_meta(message, FORMAT).get("order"))
        contents.append({**content, _MESSAGE: i})  # a joined content keeps its first message's
        positions.append(position_of(format_meta(message, GEMINI)))
    joined = {c.pop(_MESSAGE): c for c in join_turns(contents, positions, "parts", role_of=turn_role)}
    out: list[Any] = []
    for i, (message, value) in enumerate(zip(messages, values, strict=True)):
        if value is not None:
            out.extend(value)
        elif i in joined:
            fields = format_meta(message, FORMAT).get("event") or _fresh_event(message, joined[i], out, i)
            out.append({k: (joined[i] if v == _CONTENT else copied(v)) for k, v in fields.items()})
    return out


def _fresh_event(
    message: Message, content: Mapping[str, Any], before: Sequence[Any], i: int
) -> dict[str, Any]:
    """The fields of an event for a message that had none (a summary of events that went): the last
    event's invocation and time, an id of its own, and as author the user for a user turn, else the
    agent that wrote the session's model turns (ADK shows a model turn of another author as that agent's
    quoted transcript, and one with no author as an unknown agent's)."""
    events = [e for e in before if isinstance(e, dict)]
    last = events[-1] if events else {}
    agent = next(
        (e["author"] for e in reversed(events) if isinstance(e.get("author"), str) and e["author"] != "user"),
        "model",
    )
    snake = "invocation_id" in last
    invocation = last.get("invocation_id" if snake else "invocationId", "")
    fields: dict[str, Any] = {"content": _CONTENT}
    fields["invocation_id" if snake else "invocationId"] = invocation
    fields["author"] = "user" if turn_role(content) == "user" else agent
    fields["id"] = derived_uuid(invocation, message.get("id"), i)
    if "timestamp" in last:
        fields["timestamp"] = last["timestamp"]
    return fields
