"""The cyclic garbage collector paused around a plan's CPU-bound stages, and restored on every path.

Reading, writing and copying a history pause it too. A plan allocates millions of small objects
(token sets, lines, copied blocks) that live until it ends and hold no cycles; each automatic
collection walks them all again for nothing (about a tenth of a 10,000-message plan's CPU time,
`benchmarks/bench_plan.py`). The pause covers only code that never yields to the event loop, so a
host's other tasks never run with the collector off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic collection off for the block, back on afterwards if it was on (even on an error)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
