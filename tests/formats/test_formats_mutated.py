"""Real agent files broken in a few places: ``tracetrim compact`` answers each with a result or an
error naming the place, never a traceback; what it writes back reads again, and an archived original
comes back from ``tracetrim restore --format sent`` as the text that was sent.

`tests/_format_mutations.py` has the seeds, the mutations and the check; ``benchmarks/fuzz.py
--formats`` runs the same property over many more files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests._format_mutations import Seed, broken_files, check, compact_options, seeds
from tracetrim.formats import HISTORY_FORMATS, JsonLines
from tracetrim.formats._common import ValidatedHistory

EXAMPLES = int(os.environ.get("TRACETRIM_FUZZ_EXAMPLES", "400"))


def test_every_format_has_a_seed() -> None:
    assert {seed.format for seed in seeds()} == set(HISTORY_FORMATS)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(broken=broken_files(), options=compact_options())
def test_broken_files_are_compacted_or_refused_by_name(
    broken: tuple[Seed, str], options: tuple[str, ...]
) -> None:
    seed, text = broken
    with tempfile.TemporaryDirectory() as tmp:
        assert check(Path(tmp), seed, text, options) is None, seed.name


def test_writers_leave_the_messages_they_write_unchanged() -> None:
    """`HistoryFormat.read` has the writer check what was read without a copy of its own."""
    for seed in seeds():
        if seed.runs:
            continue
        value = seed.value()
        fmt = HISTORY_FORMATS[seed.format]
        messages, fields = fmt.split(value)
        if seed.lines:
            messages = JsonLines(messages)
        neutral = fmt.read(messages, fields)
        before = json.dumps(neutral, sort_keys=True)
        fmt.write(ValidatedHistory(neutral))
        assert json.dumps(neutral, sort_keys=True) == before, seed.name
