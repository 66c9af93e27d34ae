"""The canonical encoding: its fast path writes exactly the bytes of the json definition, or fails alike."""

from __future__ import annotations

import enum
import json
import math
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._histories import tool_history
from tracetrim._json import (
    _orjson_agrees,
    canonical_bytes,
    canonical_json,
    canonical_length,
    canonical_lengths,
    compact_bytes,
    compact_json,
    copy_compact,
    digest,
    pretty_json,
    sha256_hex,
    text_length,
)


def reference(value: Any) -> bytes:
    """The definition, spelled out with the stdlib alone."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def compact_reference(value: Any) -> bytes:
    """The compact form: the definition in the value's own key order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", encode(value)
    except (TypeError, ValueError) as exc:
        return "error", type(exc)


class _Code(enum.StrEnum):
    """A reason code as the results carry them: a string enum both encoders write as its text."""

    DONE = "DONE"
    GONE = "gone \u00e9"


class _Lines(list[Any]):
    """A list subclass, as a file of JSON Lines is read."""


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=-1e-3, max_value=1e-3)
    | st.floats(min_value=1e14, max_value=1e18)
    | st.text()
)
keys = st.text(max_size=6) | st.sampled_from(["", "é", "\U0001f600", "\uffff", "Z", "a", "id", "\x00"])
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=5),
    max_leaves=40,
)


@settings(max_examples=1500)
@given(values)
def test_canonical_bytes_are_the_json_definition(value: Any) -> None:
    assert outcome(canonical_bytes, value) == outcome(reference, value)


@settings(max_examples=300)
@given(st.lists(values | st.sampled_from(list(_Code)), max_size=4).map(_Lines) | st.sampled_from(list(_Code)))
def test_string_enums_and_list_subclasses_are_written_as_json_writes_them(value: Any) -> None:
    assert outcome(canonical_bytes, value) == outcome(reference, value)
    assert outcome(compact_bytes, value) == outcome(compact_reference, value)


@settings(max_examples=500)
@given(values)
def test_compact_bytes_and_lengths_follow_the_json_definition(value: Any) -> None:
    assert outcome(compact_bytes, value) == outcome(compact_reference, value)
    assert outcome(canonical_length, value) == outcome(lambda v: len(canonical_json(v)), value)


def pretty_reference(value: Any, sort_keys: bool) -> str:
    """`pretty_json`'s definition: the stdlib's two-space indent, a final newline (lone surrogates, which
    UTF-8 cannot carry, escaped)."""
    text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False, sort_keys=sort_keys) + "\n"
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@settings(max_examples=800)
@given(
    values
    | st.sampled_from([[], {}, [[]], {"a": {}}, ["\ud800"], {"k": [1e16, 2**64, "\u2028"]}])
    | st.lists(values | st.sampled_from(list(_Code)), max_size=4).map(_Lines)
    | st.dictionaries(keys, st.sampled_from(list(_Code)), max_size=3),
    st.booleans(),
)
def test_pretty_json_is_the_stdlib_indented_text(value: Any, sort_keys: bool) -> None:
    """The fast path (orjson) writes exactly what json's indented encoder writes, or refuses alike."""
    assert outcome(lambda v: pretty_json(v, sort_keys=sort_keys), value) == outcome(
        lambda v: pretty_reference(v, sort_keys), value
    )


@settings(max_examples=300)
@given(st.lists(values, max_size=6))
def test_lengths_in_a_batch_are_each_values_length(batch: list[Any]) -> None:
    assert outcome(canonical_lengths, batch) == outcome(lambda b: [canonical_length(v) for v in b], batch)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_is_written_as_json_writes_it(number: float) -> None:
    assert canonical_bytes({"x": number, "y": [number]}) == reference({"x": number, "y": [number]})


@pytest.mark.parametrize(
    "value",
    [
        1e-5,
        -1.5e-7,
        1e16,
        1.7976931348623157e308,
        5e-324,
        2**64,
        -(2**63) - 1,
        {"b": 1, "a": [1e-9, "x"]},
        {"\U0001f600": 1, "\uffff": 2, "é": 3, "e": 4},
        ['\x00\x1f\x7f\u2028\u2029 \\ " \b\f\n\r\t'],
        {1: "int key", "1": "string key"},
        {True: 1, None: 2},
        (1, 2, [3]),
    ],
)
def test_values_off_the_fast_path_match_the_definition(value: Any) -> None:
    assert outcome(canonical_bytes, value) == outcome(reference, value)


class Colour(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    SMALL = 1


class Name(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        [float("inf")],
        {"x": -math.inf},
        Colour.RED,
        {"c": Colour.RED},
        uuid.UUID(int=7),
        [uuid.UUID(int=7)],
        {"s": {1, 2}},
        b"bytes",
        "\ud800",
        {"lone": ["\udfff"]},
    ],
)
def test_values_json_refuses_are_refused(value: Any) -> None:
    """orjson would write NaN as null and enums or UUIDs as values; the definition refuses them."""
    assert outcome(canonical_bytes, value)[0] == "error"
    assert outcome(canonical_bytes, value) == outcome(reference, value)


@pytest.mark.parametrize("value", [Size.SMALL, [Name("a")], {Name("k"): Size.SMALL}, {"x": True}])
def test_subclasses_are_written_as_json_writes_them(value: Any) -> None:
    assert canonical_bytes(value) == reference(value)


def test_deep_and_cyclic_values_take_the_json_path() -> None:
    deep: Any = "leaf"
    for _ in range(400):
        deep = [deep]
    assert canonical_bytes(deep) == reference(deep)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="Circular"):
        canonical_bytes(cyclic)


def test_canonical_bytes_are_the_canonical_text_encoded() -> None:
    value = {"z": "é\U0001f600", "a": [1, 2.5, None, True, {"k": "v"}]}
    assert canonical_bytes(value) == canonical_json(value).encode("utf-8")
    assert canonical_json(value) == '{"a":[1,2.5,null,true,{"k":"v"}],"z":"é\U0001f600"}'


def test_digest_is_the_sha256_of_the_canonical_bytes() -> None:
    value = {"b": [1, 2], "a": "x"}
    assert digest(value) == sha256_hex(b'{"a":"x","b":[1,2]}')
    assert digest(value) == "721ef82f2d6c0997bffb7a8ab3f40f8fb45b0b52ce2af3afa6b0f05efbdc317f"


@given(st.text())
def test_text_length_counts_the_characters_utf8_decodes_to(text: str) -> None:
    assert text_length(text.encode("utf-8")) == len(text)


def test_lengths_count_characters_not_bytes() -> None:
    value = {"text": "naïve \U0001f600 café", "n": [1, 2]}
    assert canonical_length(value) == len(canonical_json(value)) < len(canonical_bytes(value))
    assert compact_bytes(value) == compact_json(value).encode("utf-8")


def test_ordinary_histories_take_the_fast_path() -> None:
    """A regression to the slow path would still be correct, so only this shows it."""
    history = tool_history(5)
    history[1]["metadata"] = {"created_at": 1764412800.125, "tokens": 321, "cached": None, "ok": True}
    assert _orjson_agrees(history)


def _containers(value: Any) -> list[int]:
    """The ids of every dict and list in ``value``."""
    found: list[int] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(id(item))
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(id(item))
            stack.extend(item)
    return found


@settings(max_examples=500)
@given(values)
def test_a_copy_is_what_a_json_round_trip_gives(value: Any) -> None:
    """Same bytes, same decoded value (key order included), and no dict or list shared."""
    expected = outcome(compact_reference, value)
    got = outcome(copy_compact, value)
    if expected[0] == "error":
        assert got == expected
        return
    copied, data = got[1]
    assert data == expected[1]
    assert copied == json.loads(data)
    assert compact_reference(copied) == data
    assert not set(_containers(copied)) & set(_containers(value))


@pytest.mark.parametrize(
    "value",
    [
        [1e-5, {"a": 2**64}],
        {1: "int key", "1": "string key"},
        [Name("a"), Size.SMALL],
        (1, 2, [3]),
        [{"x": "\ud800"}],
    ],
)
def test_values_off_the_fast_path_are_copied_through_json(value: Any) -> None:
    assert outcome(copy_compact, value) == outcome(
        lambda v: (json.loads(compact_reference(v)), compact_reference(v)), value
    )


def test_deep_and_cyclic_values_are_copied_through_json() -> None:
    deep: Any = "leaf"
    for _ in range(400):
        deep = [deep]
    assert copy_compact(deep) == (deep, compact_reference(deep))
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="Circular"):
        copy_compact(cyclic)
