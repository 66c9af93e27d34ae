"""What a decision model is: binary questions in, one probability per question out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from tracetrim._errors import TracetrimError
from tracetrim._validators import FieldTypeError, int_in


def _optional_str(instance: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not isinstance(value, str):
        raise FieldTypeError(f"BinaryQuestion.{attribute.name} must be a string or None")


@attrs.frozen
class BinaryQuestion:
    """A yes/no question; the model answers with the probability that the answer is yes."""

    instructions: str = attrs.field(validator=attrs.validators.instance_of(str))
    criteria_true: str | None = attrs.field(default=None, validator=_optional_str)
    criteria_false: str | None = attrs.field(default=None, validator=_optional_str)


_non_negative = int_in(0)


@attrs.frozen
class Usage:
    """Tokens a decision request consumed."""

    input_tokens: int = attrs.field(default=0, validator=_non_negative)
    output_tokens: int = attrs.field(default=0, validator=_non_negative)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@attrs.frozen
class DecisionResponse:
    """A model's answers: question name to probability of yes, plus who answered and what it cost.

    ``answers`` is kept as given; the planner validates it strictly (names, types, range).
    ``metadata`` carries backend facts worth reporting (retries, fallbacks); never secrets.
    """

    model: str
    answers: Mapping[str, Any]
    usage: Usage = attrs.field(factory=Usage, validator=attrs.validators.instance_of(Usage))
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


class DecisionModelError(TracetrimError, RuntimeError):
    """A decision model could not answer (transport, authentication, refusal, bad reply)."""


@runtime_checkable
class DecisionModel(Protocol):
    """Anything that answers binary questions about a JSON state."""

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        """Return one probability (0..1) per question name."""
        ...
