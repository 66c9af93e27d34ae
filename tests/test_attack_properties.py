"""The attack as a property: plans over generated nasty histories keep every invariant (issue 15).

`tests/_attack_fuzz.py` has the generator and the invariants; ``benchmarks/fuzz.py`` runs the
same property over 10,000 histories. Here a CI-sized count (400) keeps the run well under 30 seconds.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings

from tests._attack_fuzz import check, nasty_histories, settings_for_plan

EXAMPLES = int(os.environ.get("TRACETRIM_FUZZ_EXAMPLES", "400"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(messages=nasty_histories(), knobs=settings_for_plan())
def test_plans_over_nasty_histories_keep_every_invariant(
    messages: list[dict[str, Any]], knobs: dict[str, Any]
) -> None:
    assert check(messages, knobs) is None
