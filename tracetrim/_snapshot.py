"""The neutral snapshot (AgentScope 2.x JSON messages): its types, validation and safe copying."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from tracetrim._errors import TracetrimError
from tracetrim._gc_pause import gc_paused
from tracetrim._json import (
    MAX_NESTING,
    NestingError,
    canonical_bytes,
    compact_bytes,
    copy_canonical_items,
    copy_compact,
    plain_copy,
    text_length,
)

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

    def at_message(self, message: int | None) -> SnapshotError:
        """The same problem named at another ``message``: where the message a converter was handed on
        its own, or out of a slice, stands in the caller's history."""
        return SnapshotError(self.problem, message=message, block=self.block_index, field=self.field)


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
    if not isinstance(role, str) or role not in ROLES:
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


Frame = tuple[bytes, bytes]
"""What a history's JSON is framed by: the bytes before its first message and after its last."""

LIST_FRAME: Frame = (b"[", b"]")
"""The frame of the history as a bare JSON list."""


def _extended(numbers: array[int], more: Sequence[int]) -> array[int]:
    """``numbers`` with ``more`` appended: in place while they fit its item size, else in a copy of
    eight-byte items (4 bytes an item serve every realistic history, at half the memory)."""
    length = len(numbers)
    try:
        numbers.extend(more)
    except OverflowError:
        del numbers[length:]
        numbers = array("Q", numbers)
        numbers.extend(more)
    return numbers


class BlockSizes:
    """Characters of each block's canonical JSON, for every message of a history, stored flat.

    Made while the history is copied (each block is encoded on its own and joined into its message's
    JSON), so that measuring a pair's blocks later encodes nothing; a flat array holds them in a few
    bytes each rather than a list of ints per message.
    """

    __slots__ = ("_flat", "_starts")

    def __init__(self) -> None:
        self._flat = array("I")
        self._starts = array("I")

    def append(self, sizes: Sequence[int]) -> None:
        """Add the next message's block sizes."""
        self._starts = _extended(self._starts, (len(self._flat),))
        if sizes:
            self._flat = _extended(self._flat, sizes)

    def of(self, message: int, block: int) -> int:
        """Characters of block ``block`` of message ``message``."""
        return self._flat[self._starts[message] + block]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BlockSizes):
            return NotImplemented
        return self._flat == other._flat and self._starts == other._starts

    __hash__ = None  # type: ignore[assignment]  # mutable while a history is copied


class Copied(NamedTuple):
    """A validated private copy of a history, measured and fingerprinted while it was made."""

    messages: list[Message]
    sizes: Sequence[int]
    """Characters of each message's canonical JSON (an array: a history may hold a million)."""
    digest: bytes
    """SHA-256 of the history's canonical JSON (UTF-8) in its frame: `history_digest` of the original."""
    encoded: list[bytes] | None = None
    """Each message's canonical JSON, when asked to keep it (to store the history without encoding it
    again)."""
    blocks: BlockSizes | None = None
    """Characters of each block's canonical JSON."""

    @property
    def chars(self) -> int:
        """Characters of the whole history's canonical JSON."""
        return sum(self.sizes) + 2 + max(len(self.sizes) - 1, 0)


def _framed_digest(items: Iterable[bytes], frame: Frame) -> bytes:
    """SHA-256 of ``frame[0] + b",".join(items) + frame[1]``, made item by item."""
    digest = hashlib.sha256(frame[0])
    for n, item in enumerate(items):
        if n:
            digest.update(b",")
        digest.update(item)
    digest.update(frame[1])
    return digest.digest()


def framed(items: Sequence[bytes], frame: Frame = LIST_FRAME) -> bytes:
    """``frame[0] + b",".join(items) + frame[1]``, copied once."""
    parts = [frame[0]]
    for n, item in enumerate(items):
        if n:
            parts.append(b",")
        parts.append(item)
    parts.append(frame[1])
    return b"".join(parts)


def history_digest(messages: Sequence[Any], frame: Frame = LIST_FRAME) -> bytes:
    """SHA-256 of the canonical JSON of ``list(messages)`` in ``frame``, encoded message by message.

    Raises ``TypeError`` or ``ValueError`` for a history JSON cannot carry.
    """
    return _framed_digest((canonical_bytes(message) for message in messages), frame)


def same_encoding(messages: Sequence[Any], encoded: Sequence[bytes]) -> bool:
    """True when each of ``messages`` still has the canonical JSON ``encoded`` holds for it.

    Stops at the first difference; a history JSON cannot carry is not the same.
    """
    if len(messages) != len(encoded):
        return False
    try:
        return all(canonical_bytes(message) == data for message, data in zip(messages, encoded, strict=True))
    except (TypeError, ValueError):
        return False


class EncodedHistory(list[Message]):
    """A history (a list of messages) carrying each message's canonical JSON as ``encoded`` (and the
    characters of each of its blocks' as ``blocks``).

    Made by `encode_each` for a caller that had to encode the history anyway (an adapter measuring it
    against its trigger): `copy_messages` then copies it without encoding it again. The bytes are
    trusted to be the messages' own, so the history must not change between the two. ``owned`` says
    that its messages are the caller's private copy, which nothing changes while it is planned either
    (an adapter's conversion, a parsed request): the runner then does not encode it again to check.
    """

    __slots__ = ("blocks", "encoded", "owned")

    def __init__(
        self,
        messages: Iterable[Message],
        encoded: Sequence[bytes],
        blocks: Sequence[Sequence[int]],
        *,
        owned: bool = False,
    ) -> None:
        super().__init__(messages)
        self.encoded = list(encoded)
        self.blocks = list(blocks)
        self.owned = owned


def _encoded_message(message: Any) -> tuple[bytes, Sequence[int]]:
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        _, data, blocks = copy_canonical_items(message, "content")
        return data, blocks
    return canonical_bytes(message), ()  # not a message: copy_messages refuses it before its bytes


def encode_each(messages: Sequence[Message], *, owned: bool = False) -> EncodedHistory:
    """``messages`` as an `EncodedHistory` (``owned``: see there); raises ``TypeError``/``ValueError``
    for one JSON cannot carry."""
    with gc_paused():
        encoded = [_encoded_message(message) for message in messages]
    return EncodedHistory(
        messages, [data for data, _ in encoded], [blocks for _, blocks in encoded], owned=owned
    )


def encoded_length(history: EncodedHistory) -> int:
    """Bytes of the canonical JSON of the whole history (UTF-8), counted from its pieces."""
    return sum(map(len, history.encoded)) + 2 + max(len(history.encoded) - 1, 0)


def _given_encoding(messages: Any) -> EncodedHistory | None:
    if (
        type(messages) is EncodedHistory
        and len(messages.encoded) == len(messages)
        and len(messages.blocks) == len(messages)
    ):
        return messages
    return None


def copy_messages(messages: Any, *, frame: Frame = LIST_FRAME, keep_encoded: bool = False) -> Copied:
    """Validate ``messages`` and return a deep copy, each message's size and the history's digest.

    The copy is what a JSON round trip gives (`tracetrim._json.copy_canonical`), which proves the
    history is plain JSON; key order is preserved so unknown fields survive exactly as the host wrote
    them. Each message is copied and encoded (canonically) once, on its own (not at all when
    ``messages`` is an `EncodedHistory`), so the history's JSON never exists whole. With
    ``keep_encoded`` the pieces are kept, and the digest in ``frame`` is the one a store of that
    framed JSON needs (an archive's reference): nothing is encoded or hashed twice. Each message is
    checked (`check_message`) in the same pass, just before it is copied.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise SnapshotError(f"messages must be a list of message objects, got {type(messages).__name__}")
    copied: list[Message] = []
    sizes = array("I")
    kept: list[bytes] | None = [] if keep_encoded else None

    given = _given_encoding(messages)
    blocks = BlockSizes()

    def encoded() -> Iterator[bytes]:
        nonlocal sizes
        for n, message in enumerate(messages):
            check_message(message, n)
            if given is not None and (copy := plain_copy(message)) is not None:
                data, block_sizes = given.encoded[n], given.blocks[n]
            else:
                copy, data, block_sizes = copy_canonical_items(message, "content", limit_nesting=True)
            copied.append(copy)
            try:
                sizes.append(text_length(data))
            except OverflowError:  # a message of 4 GB or more
                sizes = _extended(sizes, (text_length(data),))
            blocks.append(block_sizes)
            if kept is not None:
                kept.append(data)
            yield data

    try:
        with gc_paused():  # pure copying: new objects that hold no cycles, as a plan's stages
            digest = _framed_digest(encoded(), frame)
    except SnapshotError:
        raise
    except (TypeError, ValueError):
        # A malformed message anywhere is reported before an unencodable one, as when every message
        # was checked before any was encoded.
        check_messages(messages)
        raise unencodable_error(messages) from None
    return Copied(copied, sizes, digest, kept, blocks)


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
