"""LangChain messages as JSON (``messages_to_dict`` or ``dumpd`` form) to and from neutral messages."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._common import (
    format_meta,
    join_bared,
    neutral_input,
    position_of,
    require_dict,
    require_sequence,
    tag,
)
from tracetrim.formats._langchain import FORMAT, from_langchain, to_langchain

_TYPES = frozenset({"human", "ai", "system", "tool"})


def is_langchain_json(value: Any) -> bool:
    """Whether ``value`` looks like one JSON-serialised LangChain message (either form)."""
    if not isinstance(value, dict):
        return False
    if value.get("lc") == 1 and value.get("type") == "constructor":
        return True
    kind = value.get("type")
    return (
        isinstance(kind, str)
        and kind in _TYPES
        and isinstance(value.get("data"), dict)
        and "role" not in value
    )


def _message(value: Any, i: int) -> Any:
    from langchain_core.load import load
    from langchain_core.messages import BaseMessage, messages_from_dict

    value = require_dict(value, "a LangChain message", message=i)
    try:
        if value.get("lc") == 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # `load` is marked beta; the message classes are stable
                # only message classes: a history file is untrusted input, never a recipe for objects
                loaded = load(value, allowed_objects="messages")
        elif tag(value.get("type")) in _TYPES and isinstance(value.get("data"), dict):
            loaded = messages_from_dict([value])[0]
        else:
            raise SnapshotError(
                "expected a LangChain message as JSON: {'type': 'human'|'ai'|'system'|'tool', 'data': {...}}"
                " (messages_to_dict) or {'lc': 1, 'type': 'constructor', ...} (dumpd)",
                message=i,
            )
    except SnapshotError:
        raise
    except Exception as exc:  # pydantic's ValidationError, KeyError, ValueError from LangChain's loaders
        raise SnapshotError(f"not a valid LangChain message ({exc})", message=i) from None
    if not isinstance(loaded, BaseMessage):
        raise SnapshotError(f"expected a LangChain message, got {type(loaded).__name__}", message=i)
    return loaded


def from_langchain_json(messages: Sequence[Any]) -> list[Message]:
    """Convert JSON-serialised LangChain messages to neutral messages (requires ``langchain-core``).

    Each item is ``messages_to_dict`` output (``{"type": "ai", "data": {...}}``) or LangChain's ``dumpd``
    form (``{"lc": 1, "type": "constructor", ...}``); they are loaded with LangChain's own loaders, then
    converted with `from_langchain`.
    """
    require_sequence(messages, "messages", "message objects")
    return from_langchain([_message(value, i) for i, value in enumerate(messages)])


def to_langchain_json(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Convert neutral messages to LangChain JSON in ``messages_to_dict`` form (``messages_from_dict`` reads
    it back). An ``AIMessage`` a drop left without its calls joins the ``AIMessage`` after it
    (`join_bared`), as the adapters join them: Gemini's LangChain mapping refuses two in a row. Its
    ``ToolMessage``s stood between them, so two ``AIMessage``s that were not neighbours when read are
    what a drop left."""
    from langchain_core.messages import messages_to_dict

    neutral = neutral_input(messages)
    placed = [(position_of(format_meta(m, FORMAT)), m["id"]) for m in neutral]
    neighbours = {
        (a, b) for (at, a), (then, b) in itertools.pairwise(placed) if at is not None and then == at + 1
    }
    return messages_to_dict(to_langchain(join_bared(neutral, set(), neighbours)))
