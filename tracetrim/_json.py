"""JSON, the one place: the canonical encoding (sizes, digests, change detection) and the strict decoder."""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import orjson

from tracetrim._errors import TracetrimError
from tracetrim._validators import FieldValueError

# One encoder for the process: json.dumps with options builds a new encoder on every call,
# which dominates the cost for the many small blocks the planner measures.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

# orjson writes a float in exponent form below 1e-4 differently ("1e-5" against "1e-05"), and
# NaN as null; inside this range, and for every other JSON type, its bytes are json's bytes.
_PLAIN_FLOAT_MIN = 1e-4
_PLAIN_FLOAT_MAX = 1e16
# orjson refuses deeper values anyway; stopping the walk here also ends it on a cyclic value.
_ORJSON_MAX_DEPTH = 254
MAX_NESTING = 200
"""The deepest nesting of objects and arrays a message, or a tool call's JSON input, may have.

json's encoder and decoder recurse in C and hit the interpreter's recursion limit near 1,000
levels (less on a deep stack), so the limit is checked before they run, never discovered by a
`RecursionError`. 200 levels leave room for the 3 an archive document wraps around a message
while staying under orjson's own limit, so every valid history takes orjson's fast path.
"""
# Checked once per process, so that an orjson release formatting floats another way can only
# make digests slower, never different.
_FLOAT_PROBES = (0.0, -0.0, 1e-4, -1.5e-4, 0.1, 1 / 3, -2.5, 123456.789, 2.0**53 + 2, 1e15, 1e16 - 2)
_FLOATS_AGREE = all(orjson.dumps(x) == _ENCODER.encode(x).encode() for x in _FLOAT_PROBES)


def canonical_json(value: Any) -> str:
    """Encode ``value`` as canonical JSON: sorted keys, no spaces, non-ASCII kept, NaN refused.

    Raises ``ValueError`` for NaN/Infinity and ``TypeError`` for values JSON cannot carry.
    """
    return _ENCODER.encode(value)


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def compact_json(value: Any) -> str:
    """Like `canonical_json` but in the value's own key order: the same length, cheaper to make."""
    return _COMPACT.encode(value)


_SPACED = json.JSONEncoder(ensure_ascii=False)


def spaced_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: key order kept, a space after each separator, the
    way Python's SDKs write a tool call's arguments."""
    return _SPACED.encode(value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_lone_surrogates(text: str) -> str:
    """``text`` (JSON) with each lone surrogate written as its ``\\uXXXX`` escape.

    A JSON string may hold one (a JavaScript agent that cut a string between the halves of a pair
    writes it), UTF-8 cannot: unescaped, the text could not be written out. A surrogate can only stand
    inside a string, where its escape decodes to the same value.
    """
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def pretty_json(value: Any, *, sort_keys: bool = False, indent: int = 2) -> str:
    """``value`` as the JSON a person reads: two-space indent, non-ASCII kept (lone surrogates
    escaped, so the text is always UTF-8), a final newline (what ``json.dump(..., indent=2)`` writers
    such as mini-swe-agent produce); NaN and infinities refused."""
    if indent == 2 and _orjson_agrees(value):
        # json indents in Python, one call per node; orjson writes the same text in C (a command's
        # answer holds the whole history)
        option = orjson.OPT_INDENT_2 | (orjson.OPT_SORT_KEYS if sort_keys else 0)
        try:
            return orjson.dumps(value, option=option).decode("utf-8") + "\n"
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, a 65-bit integer, or deeper than orjson goes: json below
    text = json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False, sort_keys=sort_keys)
    return _escape_lone_surrogates(text) + "\n"


def laid_out_json(value: Any, *, indent: str | None, separators: tuple[str, str], ensure_ascii: bool) -> str:
    """``value`` as JSON laid out as a file has it (`tracetrim.formats.FileStyle`): ``indent`` per
    level (None: one line), ``separators`` (item, key), non-ASCII escaped or kept; NaN refused."""
    return json.dumps(value, indent=indent, separators=separators, ensure_ascii=ensure_ascii, allow_nan=False)


def _plain_float(value: float) -> bool:
    return _FLOATS_AGREE and (value == 0.0 or _PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_MAX)


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return _plain_float(value)
    return kind is str or kind is int or kind is bool or value is None


def _orjson_agrees(value: Any) -> bool:
    """True when orjson's sorted encoding of ``value`` is byte for byte `canonical_json`'s.

    Only exact JSON types are let through (orjson also encodes enums, UUIDs and dataclasses,
    which json refuses). The walk visits containers and scalars, never string contents, and is
    written flat because it runs over every node of a history that may hold millions.
    """
    if type(value) is not dict and type(value) is not list and not _plain_list(type(value)):
        return _plain_scalar(value)
    # Two stacks rather than one of (item, depth) pairs: pushing a small int allocates nothing,
    # and a walk that allocated a tuple per container would set off the garbage collector.
    items: list[Any] = [value]
    depths: list[int] = [0]
    while items:
        item = items.pop()
        depth = depths.pop() + 1
        if depth > _ORJSON_MAX_DEPTH:
            return False
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is str:
                continue
            if kind is dict or kind is list:
                items.append(child)
                depths.append(depth)
            elif kind is float:
                if not _plain_float(child):
                    return False
            elif kind is int or kind is bool or child is None or issubclass(kind, str):
                continue  # a str subclass (a reason code's StrEnum) both write as its text
            elif _plain_list(kind):
                items.append(child)
                depths.append(depth)
            else:
                return False
    return True


def _plain_list(kind: type) -> bool:
    """A list subclass both encoders write as its items (a file of JSON Lines): json iterates it,
    orjson reads its items directly, which agree unless the subclass iterates otherwise."""
    return issubclass(kind, list) and kind.__iter__ is list.__iter__


def _encode(value: Any, *, sort_keys: bool) -> bytes:
    if _orjson_agrees(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
        except orjson.JSONEncodeError:
            pass  # e.g. a lone surrogate or a 65-bit integer: json raises or encodes it below
    try:
        return (_ENCODER if sort_keys else _COMPACT).encode(value).encode("utf-8")
    except RecursionError:
        # json recurses in C. Histories are checked against MAX_NESTING before they get here
        # (`copy_compact`); any other caller gets a ValueError like every other refusal. A cycle
        # never gets this far: json reports it as circular first.
        raise NestingError(_ORJSON_MAX_DEPTH, _deep_path(value, _ORJSON_MAX_DEPTH)) from None


_PATH_SHOWN = 6


class NestingError(TracetrimError, ValueError):
    """A JSON value nested deeper than allowed; ``path`` leads to the first container too deep."""

    def __init__(self, limit: int, path: tuple[str | int, ...]) -> None:
        self.limit = limit
        self.path = path
        where = "".join(f"[{step!r}]" for step in path[:_PATH_SHOWN]) or "the top"
        if len(path) > _PATH_SHOWN:
            where += "..."
        super().__init__(f"nested deeper than {limit} levels (or cyclic) at {where}")


def _too_deep(value: Any, limit: int) -> bool:
    # Depth first, with two stacks as in _orjson_agrees: this walk runs over whole histories on
    # json's slow path, and going deep first ends it quickly on a cycle.
    items: list[Any] = [value]
    depths: list[int] = [1]
    while items:
        item = items.pop()
        depth = depths.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, (list, tuple)):
            continue
        if depth > limit:
            return True
        for child in item:
            if isinstance(child, (dict, list, tuple)):
                items.append(child)
                depths.append(depth + 1)
    return False


def _deep_path(value: Any, limit: int) -> tuple[str | int, ...]:
    """The path to the first container nested deeper than ``limit`` (only called once one is known)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= limit:
            return path
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in reversed(list(children)):
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, (*path, key if isinstance(key, (str, int)) else repr(key))))
    return ()


def check_nesting(value: Any, limit: int = MAX_NESTING) -> None:
    """Raise `NestingError` (a ``ValueError``) when ``value`` nests containers deeper than ``limit``.

    The value itself, if a container, is level 1. Iterative: any depth (or a cycle) is measured
    without recursion.
    """
    if _too_deep(value, limit):
        raise NestingError(limit, _deep_path(value, limit))


class _NotPlain(TracetrimError):
    """Raised inside `_plain_copy` at the first node `_orjson_agrees` would refuse."""


class _TooDeep(TracetrimError):
    """Raised inside `_plain_copy` at the first container nested deeper than `MAX_NESTING`."""


def _plain_copy(value: Any, depth: int) -> Any:
    # The same test as _orjson_agrees, made while copying; strings, the bulk of a history, are
    # shared without a call. The depth check costs what orjson's own check did before it.
    kind = type(value)
    if kind is dict:
        if depth > MAX_NESTING:
            raise _TooDeep
        depth += 1
        # Copied in C, then only the values that are not strings (few: most of a block is text) are
        # replaced by their copies; replacing a value while iterating is safe, resizing is not done.
        copied = value.copy()
        for k, v in copied.items():
            if type(v) is not str:
                copied[k] = _plain_copy(v, depth)
        return copied
    if kind is list:
        if depth > MAX_NESTING:
            raise _TooDeep
        depth += 1
        return [v if type(v) is str else _plain_copy(v, depth) for v in value]
    if _plain_scalar(value):
        return value
    raise _NotPlain


def _copy(value: Any, *, limit_nesting: bool, sort_keys: bool) -> tuple[Any, bytes]:
    try:
        copied = _plain_copy(value, 1)
        return copied, orjson.dumps(copied, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except _TooDeep:
        if limit_nesting:
            raise NestingError(MAX_NESTING, _deep_path(value, MAX_NESTING)) from None
    except (_NotPlain, orjson.JSONEncodeError, RecursionError):  # RecursionError: on a deep stack
        if limit_nesting:
            check_nesting(value)
    # a type, a value or a depth only json writes (or refuses): decode what json wrote, in the
    # value's own key order (sorted JSON would sort the copy's keys too)
    data = compact_bytes(value)
    copied = json.loads(data)
    return copied, canonical_bytes(copied) if sort_keys else data


def copy_compact(value: Any, *, limit_nesting: bool = False) -> tuple[Any, bytes]:
    """A deep copy of a JSON value and its `compact_bytes`; raises what `compact_bytes` raises.

    The copy is what ``json.loads(compact_bytes(value))`` gives. Where orjson writes the value
    exactly, the copy rebuilds only the dicts and lists and shares the scalars: strings and numbers
    are immutable, so the copy is as private as a decoded one, at a fraction of the memory and time.
    With ``limit_nesting`` a value nested deeper than `MAX_NESTING` raises `NestingError`, checked
    on the way (never found by a ``RecursionError``), however it is encoded.
    """
    return _copy(value, limit_nesting=limit_nesting, sort_keys=False)


# Stands in for a list while the object around it is encoded; random, so no host's string equals it.
_SLOT = f"\x00tracetrim-slot-{secrets.token_hex(16)}"
_SLOT_JSON = orjson.dumps(_SLOT)


def copy_canonical_items(
    value: dict[str, Any], key: str, *, limit_nesting: bool = False
) -> tuple[Any, bytes, list[int]]:
    """`copy_canonical` of a JSON object whose ``value[key]`` is a list, with each item's
    `canonical_length`, encoding it once: the items are encoded on their own and joined into the
    object's bytes. A value only json writes is encoded again, item by item, to measure them."""
    try:
        copied = _plain_copy(value, 1)
        items = [orjson.dumps(item, option=orjson.OPT_SORT_KEYS) for item in copied[key]]
        shell = orjson.dumps({**copied, key: _SLOT}, option=orjson.OPT_SORT_KEYS)
    except (_NotPlain, _TooDeep, orjson.JSONEncodeError, RecursionError):
        copied, data = _copy(value, limit_nesting=limit_nesting, sort_keys=True)
        return copied, data, canonical_lengths(copied[key])
    joined = b"".join((b"[", b",".join(items), b"]"))
    return copied, shell.replace(_SLOT_JSON, joined, 1), [text_length(item) for item in items]


def plain_copy(value: Any) -> Any | None:
    """The copy `copy_compact` makes of a value orjson writes exactly, made without encoding it;
    None for any other value (a type or number only json writes, or nesting past `MAX_NESTING`)."""
    try:
        return _plain_copy(value, 1)
    except (_NotPlain, _TooDeep, RecursionError):
        return None


def copy_canonical(value: Any, *, limit_nesting: bool = False) -> tuple[Any, bytes]:
    """`copy_compact`, but with the value's `canonical_bytes`: the copy keeps the value's key order.

    Where orjson writes the value exactly (almost always) it is encoded once; a value only json
    writes is encoded twice, once to copy it and once sorted.
    """
    return _copy(value, limit_nesting=limit_nesting, sort_keys=True)


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value`` as UTF-8 bytes: always ``canonical_json(value).encode()``.

    Large histories take orjson (30x faster than json); whatever orjson would write differently
    (tiny or huge floats, NaN, integers past 64 bits, non-string keys, other types) takes json.
    """
    return _encode(value, sort_keys=True)


def compact_bytes(value: Any) -> bytes:
    """``compact_json(value).encode()``, made the way `canonical_bytes` is made.

    Used to copy a history and fingerprint it.
    """
    return _encode(value, sort_keys=False)


# Every byte but UTF-8's continuation bytes (0b10xxxxxx): each character has exactly one of these.
_LEADING_BYTES = bytes(b for b in range(256) if not 0x80 <= b < 0xC0)


def text_length(data: bytes) -> int:
    """The number of characters valid UTF-8 ``data`` decodes to."""
    if data.isascii():
        return len(data)
    # Counting continuation bytes, rather than decoding, spares a copy of up to four times the size.
    return len(data) - len(data.translate(None, _LEADING_BYTES))


def canonical_length(value: Any) -> int:
    """``len(canonical_json(value))``: the characters every size and reduction is measured in."""
    return text_length(canonical_bytes(value))


def canonical_lengths(values: Sequence[Any]) -> list[int]:
    """`canonical_length` of each of ``values``: one fast-path check for all of them.

    For the many small blocks a plan measures, the per-value calls cost more than the encoding.
    """
    if _orjson_agrees(list(values)):
        try:
            return [text_length(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)) for value in values]
        except orjson.JSONEncodeError:
            pass  # one value only json writes (or refuses): measure each its own way
    return [canonical_length(value) for value in values]


# A backslash escape (two characters), a quote or a bracket: all a nesting count needs to see.
_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def text_nesting_exceeds(text: str | bytes, limit: int = MAX_NESTING) -> bool:
    """True when the JSON text ``text`` opens more than ``limit`` nested objects or arrays.

    Brackets inside strings do not count. Almost every text has fewer brackets than the limit in
    all, which two ``count`` calls show; only the rest is scanned, token by token.
    """
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    in_string = False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) == 2:
            continue
        elif token in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def round_trip(value: Any, default: Callable[[Any], Any]) -> Any:
    """What ``value`` decodes to once encoded as JSON, with ``default`` turning an object JSON cannot
    carry into one it can (a framework's model into its dict); ``TypeError``/``ValueError`` for the rest."""
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False, default=default))


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Lower-case hex SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_bytes(value))


def reject_constant(name: str) -> NoReturn:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which Python's decoder accepts and JSON does not."""
    raise FieldValueError(f"non-finite number {name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf without any NaN or Infinity spelled out
        raise FieldValueError(f"the number {text[:40]}, which is not finite as a float, is not valid JSON")
    return value


# One decoder for the process: json.loads with an option builds a new decoder on every call.
_STRICT = json.JSONDecoder(parse_constant=reject_constant, parse_float=_finite_float)


def strict_loads(text: str | bytes) -> Any:
    """``text`` (UTF-8 when bytes) decoded as JSON proper: a non-finite number, spelled out (``NaN``)
    or too large for a float (``1e999``), is a `FieldValueError`; bytes that are not UTF-8, or
    text that is not JSON, a `ValueError`; arrays and objects nested deeper than the decoder can
    follow (about a thousand levels, fewer on a deep stack), or an integer longer than Python
    converts, a `FieldValueError` too."""
    try:
        return _STRICT.decode(text.decode("utf-8") if isinstance(text, (bytes, bytearray)) else text)
    except RecursionError:
        # The decoder recurses in C: its limit is the interpreter's, reached before any other check.
        raise FieldValueError("JSON nested too deeply to read (over a thousand levels)") from None
    except (FieldValueError, json.JSONDecodeError):
        raise
    except ValueError:  # the only other one: Python's guard against huge integers
        limit = sys.get_int_max_str_digits()
        raise FieldValueError(f"a number in the JSON is too long to read (over {limit:,} digits)") from None
