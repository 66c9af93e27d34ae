"""Why a plan found no candidate pair, in words that name the setting to change (``NO_CANDIDATES``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from tracetrim.compactor._pairs import TOOL_NOT_ELIGIBLE, Pair

_MAX_NAMES = 8
"""Tool names listed in a detail before the rest are counted: a detail is one readable line."""


def _names(names: Collection[str]) -> str:
    ordered = sorted(names)
    shown = ", ".join(ordered[:_MAX_NAMES])
    return shown if len(ordered) <= _MAX_NAMES else f"{shown} and {len(ordered) - _MAX_NAMES} more"


def no_candidates_detail(pairs: Sequence[Pair], eligible_tools: Collection[str]) -> str:
    """The ``NO_CANDIDATES`` detail for ``pairs`` (none a candidate) under ``eligible_tools``.

    When no tool the history calls is eligible, it says so and names ``CompactorConfig.eligible_tools``
    with the tools the history does call, since an empty opt-in list is the usual cause and otherwise
    nothing would ever tell the host. Otherwise it counts why the pairs were kept.
    """
    if not pairs:
        return "no pair is eligible for compaction: the history holds no tool call"
    called = {pair.tool for pair in pairs}
    if not called & set(eligible_tools):
        opted = f"it names {_names(eligible_tools)}" if eligible_tools else "it is empty"
        return (
            f"no tool is eligible: set CompactorConfig.eligible_tools ({opted}; the history calls "
            f"{_names(called)}), or opt in the tools the framework declares read-only "
            "(read_only_tools, eligible_read_only=True in the adapters)"
        )
    reasons = Counter(pair.reason for pair in pairs)
    kept = ", ".join(f"{count} {reason}" for reason, count in reasons.most_common())
    detail = f"no pair is eligible for compaction (kept: {kept})"
    if reasons[TOOL_NOT_ELIGIBLE]:
        left_out = {pair.tool for pair in pairs if pair.reason == TOOL_NOT_ELIGIBLE}
        detail += f"; CompactorConfig.eligible_tools leaves out {_names(left_out)}"
    return detail
