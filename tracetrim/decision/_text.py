"""The units the history features count: word tokens, word stems and lines of a text.

Tokenising is most of the judge's work (every result of the history is read once), so `tokens` cuts
words with one byte-table pass instead of a regular expression. `terms` must hold exactly the words
``re.findall(r"[a-z0-9_]{3,}", text.lower())`` finds. The order a set iterates in does not matter:
every float summed over one is summed exactly (`math.fsum`), so no feature depends on it (and it
changes with each process's hash seed anyway).
"""

from __future__ import annotations

from collections.abc import Iterable

TEXT_LIMIT = 24_000
"""Characters of one block that are tokenised (head and tail): a huge result is already known to be huge."""
LINE_MIN = 12
"""Shorter lines ("}", "else:", "OK") say nothing about where content came from."""
FAILURE_HEAD = 2_000
"""Characters at the start of a result searched for signs of failure."""

STOP_WORDS = frozenset(
    "the and for are but not you all any can had has her was one our out his how its may new now "
    "old see two way who did get let put say she too use that with have this will your from they "
    "been more when what were into than them then some could would there their which about other "
    "should these those after before where while here only also just like does done each very "
    "true false none null self return def class import".split()
)
"""Words too common to say anything: never tokens."""
_STOP = STOP_WORDS  # the name the tests (and older callers) use

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")
# Byte tables for bytes.translate: word bytes stay, every other byte becomes a space. UTF-8 writes a
# non-ASCII character only with bytes >= 0x80, so none of them can join or split an ASCII word.
_KEEP_WORDS = bytes(c if c in _WORD_BYTES else 0x20 for c in range(256))
# For ASCII text, str.lower() changes exactly A-Z, so the table can lower-case too.
_LOWER_KEEP_WORDS = bytes(c + 32 if 0x41 <= c <= 0x5A else _KEEP_WORDS[c] for c in range(256))
_SHORT_WORDS = frozenset(chr(a) for a in _WORD_BYTES) | frozenset(
    chr(a) + chr(b) for a in _WORD_BYTES for b in _WORD_BYTES
)
"""Every word of one or two characters `words` can give (37 + 37 ** 2 of them): never terms."""

FAILURE_PATTERN = (
    r"<returncode>[1-9]|traceback \(most recent call last\)|\berror\b|\bexception\b|not found|no such file"
)
"""What `failed` looks for in a result's lower-cased head, as a regular expression (`failed` runs it
as plain substring searches: one scan each is many times faster than the alternation)."""
_FAILURE_PHRASES = ("not found", "no such file", "traceback (most recent call last)")
_FAILURE_WORDS = ("error", "exception")
_EXIT_CODE = "<returncode>"


def clip(text: str) -> str:
    """The first and last ``TEXT_LIMIT / 2`` characters of a longer text, joined by a newline."""
    if len(text) <= TEXT_LIMIT:
        return text
    half = TEXT_LIMIT // 2
    return text[:half] + "\n" + text[-half:]


def words(text: str) -> list[str]:
    """Every maximal run of ``[a-z0-9_]`` in ``text.lower()``, in order (any length)."""
    if text.isascii():
        data = text.encode("ascii").translate(_LOWER_KEEP_WORDS)
    else:
        # Lower-case first: a few non-ASCII letters lower-case to ASCII ones (the Kelvin sign to "k").
        # Lone surrogates (valid in a JSON string) encode to non-ASCII bytes too.
        data = text.lower().encode("utf-8", "surrogatepass").translate(_KEEP_WORDS)
    return data.decode("ascii").split()


def terms(text: str) -> set[str]:
    """Distinct lower-case words of 3+ characters of the whole text, stop words included."""
    # Tokenising is the judge's hottest loop: a set difference (in C) drops the short words, where a
    # filter would call len() on every word of the history.
    return set(words(text)) - _SHORT_WORDS


def tokens(text: str) -> set[str]:
    """Distinct lower-case word tokens (3+ characters, stop words removed) of a clipped text:
    ``terms(clip(text)) - STOP_WORDS``."""
    return terms(clip(text)) - STOP_WORDS


def stems(tokens: Iterable[str]) -> set[str]:
    """Five-letter prefixes: "swedish" and "sweden" meet at "swede"."""
    return {w[:5] for w in tokens if len(w) >= 5 and not w.isdigit()}


def lines_of(text: str) -> set[str]:
    """Distinct stripped lines long enough to identify where content came from."""
    return {s for s in map(str.strip, clip(text).splitlines()) if len(s) >= LINE_MIN}


def _is_word_char(char: str) -> bool:
    # What \w is for a str pattern: a Unicode letter or number, or the underscore.
    return char.isalnum() or char == "_"


def _has_word(text: str, word: str) -> bool:
    """Whether ``word`` (which starts and ends with word characters) stands alone in ``text``, as
    ``re.search(rf"\b{word}\b", text)`` would find it."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if (start == 0 or not _is_word_char(text[start - 1])) and (
            end == len(text) or not _is_word_char(text[end])
        ):
            return True
        start = text.find(word, start + 1)
    return False


def _has_exit_code(text: str) -> bool:
    """Whether ``text`` holds ``<returncode>`` followed by a digit 1 to 9."""
    start = text.find(_EXIT_CODE)
    while start >= 0:
        code = start + len(_EXIT_CODE)
        if code < len(text) and text[code] in "123456789":
            return True
        start = text.find(_EXIT_CODE, code)
    return False


def failed(text: str) -> bool:
    """Whether the start of a result reads like a failure (an exit code, a traceback, an error):
    ``re.search(FAILURE_PATTERN, text[:FAILURE_HEAD].lower())``."""
    head = text[:FAILURE_HEAD].lower()
    return (
        any(map(head.__contains__, _FAILURE_PHRASES))
        or any(_has_word(head, word) for word in _FAILURE_WORDS)
        or _has_exit_code(head)
    )
