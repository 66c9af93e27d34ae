"""The judge's text units: the fast tokeniser and failure test are exactly the plain definitions."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tracetrim.decision._feature_index import _stem_overlap
from tracetrim.decision._text import (
    _STOP,
    FAILURE_HEAD,
    FAILURE_PATTERN,
    TEXT_LIMIT,
    clip,
    failed,
    stems,
    tokens,
)

# Pieces that sit on every edge: failure words inside and beside other words, letters that lower-case
# to ASCII (the Kelvin sign, dotted I), non-ASCII letters and numbers (word characters to \b), lone
# surrogates, line separators, stop words and short words.
PIECES = [
    "error",
    "ERROR",
    "errors",
    "_error",
    "error_",
    "éerror",
    "errorß",
    "٣error",
    "exception",
    "Exception:",
    "not found",
    "No such file",
    "Traceback (most recent call last)",
    "<returncode>0",
    "<returncode>1",
    "<returncode>",
    "\u212a",
    "\u0130",
    "\ud800",
    "\u2028",
    "the",
    "a",
    "xy",
    "abc",
    "Sweden",
    "swedish",
    "123456",
    "x1",
    "beta_gamma",
    " ",
    "\n",
    "\t",
    ":",
    "-",
    "é",
    "日本",
    "\x00",
]
texts = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=40).map("".join)


def reference_tokens(text: str) -> set[str]:
    """The definition the features were built on."""
    return set(re.findall(r"[a-z0-9_]{3,}", clip(text).lower())) - _STOP


@settings(max_examples=1000)
@given(texts)
def test_tokens_are_the_regular_expressions_tokens(text: str) -> None:
    # The same elements; the order they iterate in is no part of it (every sum over them is exact).
    assert tokens(text) == reference_tokens(text)


def test_long_texts_are_clipped_before_tokenising() -> None:
    text = "alpha " * (TEXT_LIMIT // 6) + "middle " + "omega " * (TEXT_LIMIT // 6)
    # Compared as sets: iteration order depends on the string hash seed, which differs between runs.
    assert tokens(text) == reference_tokens(text) == {"alpha", "omega"}
    assert "middle" not in tokens(text)


@settings(max_examples=1000)
@given(texts)
def test_failed_is_the_failure_pattern(text: str) -> None:
    assert failed(text) == bool(re.search(FAILURE_PATTERN, text[:FAILURE_HEAD].lower()))


def test_failure_words_stand_alone() -> None:
    assert failed("Error: boom") and failed("x <returncode>2</returncode>") and failed("ls: no such file")
    assert not failed("errors: 0") and not failed("<returncode>0</returncode>") and not failed("éerror")
    assert not failed("x" * FAILURE_HEAD + " error")


tokens_of = st.sets(st.text(alphabet="12a_", min_size=3, max_size=8), max_size=12)


@settings(max_examples=1000)
@given(tokens_of, tokens_of)
def test_stem_overlap_is_the_share_of_stems_held(found: set[str], target: set[str]) -> None:
    theirs = stems(target)
    expected = len(theirs & stems(found)) / len(theirs) if theirs else 0.0
    prefixes = {w[:5] for w in found}
    assert _stem_overlap(found, prefixes, theirs) == expected
