"""tracetrim: shrink an LLM agent's tool history safely, with everything archived and restorable."""

from tracetrim import archive, decision
from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.compactor import (
    Action,
    CompactionRequest,
    Compactor,
    CompactorConfig,
    ExecutionOptions,
    Mode,
    Outcome,
    PairDecision,
    Plan,
    PlanStats,
    Record,
    Status,
)

__version__ = "0.1.0"

__all__ = [
    "Action",
    "CompactionRequest",
    "Compactor",
    "CompactorConfig",
    "ExecutionOptions",
    "Mode",
    "Outcome",
    "PairDecision",
    "Plan",
    "PlanStats",
    "Record",
    "Scope",
    "SnapshotError",
    "Status",
    "__version__",
    "archive",
    "decision",
    "validate_messages",
]
