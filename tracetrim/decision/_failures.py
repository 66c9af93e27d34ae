"""Why a judge gave no usable answers: one error per outcome reason, and the check of one answer."""

from __future__ import annotations

import enum
import math
from typing import Any, ClassVar

from tracetrim._errors import TracetrimError
from tracetrim._validators import is_real


class Failure(enum.Enum):
    """Why a judge gave no answers; each names the `tracetrim.Reason` of the same name."""

    MODEL_ERROR = enum.auto()
    INVALID_ANSWER = enum.auto()
    STATE_OVER_BUDGET = enum.auto()
    REQUEST_OVER_BUDGET = enum.auto()


class JudgeError(TracetrimError):
    """A judge could not judge a history; ``failure`` says why, as the plan's outcome reports it.

    The planner reads the reason off the error (`tracetrim.compactor._asking`), so a judge says why
    it failed without the planner knowing what kind of judge it is.
    """

    failure: ClassVar[Failure] = Failure.MODEL_ERROR


class ModelFailed(JudgeError, RuntimeError):
    """A judge or a decision request raised; the original exception is the cause."""


class InvalidAnswer(JudgeError, ValueError):
    """An answer that is not exactly one finite probability in [0, 1] per question asked."""

    failure: ClassVar[Failure] = Failure.INVALID_ANSWER


def probability(name: str, value: Any) -> float:
    """``value`` as a probability, or `InvalidAnswer` naming the answer and what is wrong."""
    if not is_real(value):
        raise InvalidAnswer(f"answer {name!r} is {type(value).__name__} {value!r}, not a probability")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidAnswer(f"answer {name!r} is {value!r}, outside [0, 1]")
    return number
