"""The neutral snapshot (AgentScope 2.x JSON messages): its types, validation and safe copying."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from tracetrim._errors import TracetrimError
from tracetrim._json import MAX_NESTING, NestingError, compact_bytes, copy_compact, text_length

Message = dict[str, Any]
"""One neutral message: ``{"id", "role", "name", "content": [block, ...], "metadata"}``."""

Block = dict[str, Any]
"""One content block of a neutral message."""

ROLES = frozenset({"user", "assistant", "system"})


class SnapshotError(TracetrimError, ValueError):
    """A history that is not a valid neutral snapshot; the message names index, block and field."""

    def __init__(
        self, problem: str, *, message: int | None = None, block: int | None = None, field: str | None = None
    ) -> None:
        self.problem = problem
        self.message_index = message
        self.block_index = block
        self.field = field
        where = []
        if message is not None:
            where.append(f"message {message}")
        if block is not None:
            where.append(f"block {block}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {problem}" if where else problem)


_REQUIRED_STR: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "thinking": ("thinking",),
    "tool_call": ("id", "name", "input"),
    "tool_result": ("id", "name"),
}


def _check_block(block: Any, i: int, j: int) -> None:
    if not isinstance(block, dict):
        raise SnapshotError(f"a block must be an object, got {type(block).__name__}", message=i, block=j)
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError("a block needs a non-empty string 'type'", message=i, block=j, field="type")
    for name in _REQUIRED_STR.get(kind, ()):
        if not isinstance(block.get(name), str):
            raise SnapshotError(f"a {kind} block needs a string {name!r}", message=i, block=j, field=name)
    if kind in ("tool_call", "tool_result"):
        if not block["id"]:
            raise SnapshotError(f"a {kind} block needs a non-empty 'id'", message=i, block=j, field="id")
        if "state" in block and not isinstance(block["state"], str):
            raise SnapshotError(
                f"a {kind} block's 'state' must be a string", message=i, block=j, field="state"
            )
    if kind == "tool_result":
        output = block.get("output")
        if not isinstance(output, (str, list)):
            raise SnapshotError(
                "a tool_result block needs 'output' as a string or a list of blocks",
                message=i,
                block=j,
                field="output",
            )
        if "metadata" in block and not isinstance(block["metadata"], dict):
            raise SnapshotError(
                "a tool_result block's 'metadata' must be an object", message=i, block=j, field="metadata"
            )


def check_message(message: Any, i: int) -> None:
    """Raise `SnapshotError` unless ``message`` (at index ``i``) is a well-formed neutral message."""
    if not isinstance(message, dict):
        raise SnapshotError(f"a message must be an object, got {type(message).__name__}", message=i)
    role = message.get("role")
    if role not in ROLES:
        raise SnapshotError(f"role must be one of {sorted(ROLES)}, got {role!r}", message=i, field="role")
    if "id" in message and not isinstance(message["id"], str):
        raise SnapshotError("id must be a string", message=i, field="id")
    if (
        "metadata" in message
        and message["metadata"] is not None
        and not isinstance(message["metadata"], dict)
    ):
        raise SnapshotError("metadata must be an object", message=i, field="metadata")
    content = message.get("content")
    if not isinstance(content, list):
        raise SnapshotError("content must be a list of blocks", message=i, field="content")
    for j, block in enumerate(content):
        _check_block(block, i, j)


def check_messages(messages: Any) -> None:
    """Raise `SnapshotError` unless ``messages`` is a sequence of well-formed neutral messages.

    Checks shape and types only; whether the history is plain JSON is found by encoding it
    (see `unencodable_error`), which every caller does anyway.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise SnapshotError(f"messages must be a list of message objects, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        check_message(message, i)


def _nesting_error(exc: NestingError, i: int) -> SnapshotError:
    path = exc.path
    problem = f"nested deeper than {MAX_NESTING} levels (or cyclic)"
    if len(path) >= 2 and path[0] == "content" and isinstance(path[1], int):
        field = str(path[2]) if len(path) > 2 else None
        return SnapshotError(problem, message=i, block=path[1], field=field)
    return SnapshotError(problem, message=i, field=str(path[0]) if path else None)


def _encoding_problem(value: Any) -> Exception | None:
    try:
        compact_bytes(value)
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        return exc
    return None


def _unencodable_message(message: Any, i: int) -> SnapshotError | None:
    if isinstance(message, dict):
        try:
            copy_compact(message, limit_nesting=True)
        except NestingError as exc:
            return _nesting_error(exc, i)
        except (TypeError, ValueError):
            pass
    problem = _encoding_problem(message)
    if problem is None:
        return None
    if not isinstance(message, dict):
        return SnapshotError(f"not JSON-serialisable ({problem})", message=i)
    # Narrow it down to the block and the field, as every other snapshot error does.
    content = message.get("content")
    for j, block in enumerate(content if isinstance(content, list) else ()):
        block_problem = _encoding_problem(block)
        if block_problem is None:
            continue
        if isinstance(block, dict):
            for name, value in block.items():
                field_problem = _encoding_problem({name: value})
                if field_problem is not None:
                    return SnapshotError(
                        f"not JSON-serialisable ({field_problem})", message=i, block=j, field=str(name)
                    )
        return SnapshotError(f"not JSON-serialisable ({block_problem})", message=i, block=j)
    for name, value in message.items():
        field_problem = _encoding_problem({name: value})
        if field_problem is not None:
            return SnapshotError(f"not JSON-serialisable ({field_problem})", message=i, field=str(name))
    return SnapshotError(f"not JSON-serialisable ({problem})", message=i)


def unencodable_error(messages: Sequence[Any]) -> SnapshotError:
    """The `SnapshotError` for a history that failed to encode as JSON, naming the first bad place.

    Names the message, and the block and field where one is to blame: a value JSON cannot carry
    (NaN, a set, a lone surrogate that UTF-8 cannot encode) or nesting deeper than `MAX_NESTING`.
    """
    for i, message in enumerate(messages):
        error = _unencodable_message(message, i)
        if error is not None:
            return error
    return SnapshotError("history is not JSON-serialisable")


class Copied(NamedTuple):
    """A validated private copy of a history, measured while it was made."""

    messages: list[Message]
    sizes: list[int]
    """Characters of each message's compact (and so of its canonical) JSON."""
    digest: bytes
    """SHA-256 of the history's compact JSON (UTF-8): `history_digest` of the original."""

    @property
    def chars(self) -> int:
        """Characters of the whole history's compact (and canonical) JSON."""
        return sum(self.sizes) + 2 + max(len(self.sizes) - 1, 0)


def _list_digest(items: Iterable[bytes]) -> bytes:
    """SHA-256 of the JSON list whose items are ``items`` (compact JSON each), made item by item."""
    digest = hashlib.sha256(b"[")
    for n, item in enumerate(items):
        if n:
            digest.update(b",")
        digest.update(item)
    digest.update(b"]")
    return digest.digest()


def history_digest(messages: Sequence[Any]) -> bytes:
    """SHA-256 of ``compact_bytes(list(messages))``, encoded message by message (never whole).

    Raises ``TypeError`` or ``ValueError`` for a history JSON cannot carry.
    """
    return _list_digest(compact_bytes(message) for message in messages)


def copy_messages(messages: Any) -> Copied:
    """Validate ``messages`` and return a deep copy, each message's size and the history's digest.

    The copy is what a JSON round trip gives (`tracetrim._json.copy_compact`), which proves the history
    is plain JSON; key order is preserved so unknown fields survive exactly as the host wrote them.
    Each message is copied and encoded on its own, so the history's JSON never exists whole.
    """
    check_messages(messages)
    copied: list[Message] = []
    sizes: list[int] = []

    def encoded() -> Iterator[bytes]:
        for message in messages:
            copy, data = copy_compact(message, limit_nesting=True)
            copied.append(copy)
            sizes.append(text_length(data))
            yield data

    try:
        digest = _list_digest(encoded())
    except (TypeError, ValueError):
        raise unencodable_error(messages) from None
    return Copied(copied, sizes, digest)


def validate_messages(messages: Any) -> list[Message]:
    """Return a validated deep copy of ``messages``; raise `SnapshotError` naming what is wrong."""
    return copy_messages(messages).messages


def text_of_output(output: str | list[Any]) -> str | None:
    """The text of a tool result's output, or None when any part of it is not text."""
    if isinstance(output, str):
        return output
    parts: list[str] = []
    for block in output:
        if not (
            isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ):
            return None
        parts.append(block["text"])
    return "\n".join(parts)
