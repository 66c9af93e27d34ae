"""The one output contract every entry point answers with: what to continue with, and what was proposed.

The CLI (``compact``, ``offload``) and the HTTP service answer a plan the same way:

- ``messages`` is always safe to continue with: the adopted history when ``changed``, otherwise the
  history as it was sent;
- ``proposal`` is the candidate history when one was made and not adopted (SHADOW), else None;
- ``changed`` means "the history you got differs from the one you sent" (only an adopted plan).

The library's `Outcome` holds the same facts: ``outcome.adopted`` is ``changed``, and ``outcome.plan
.messages`` is the adopted history or the proposal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tracetrim.compactor import Outcome, Status


@attrs.frozen
class Answer:
    """The three contract fields for one outcome, histories in the neutral format."""

    messages: list[Any]
    proposal: list[Any] | None
    changed: bool


def answer(outcome: Outcome, sent: Sequence[Any]) -> Answer:
    """The contract's fields for ``outcome``, where ``sent`` is the neutral history the plan was given."""
    plan = outcome.plan
    if outcome.adopted and plan is not None:
        return Answer(list(plan.messages), None, True)
    proposed = plan is not None and outcome.status is Status.DECIDED
    return Answer(list(sent), list(plan.messages) if proposed and plan is not None else None, False)
