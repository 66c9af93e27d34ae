"""The planner: pure, deterministic stages and the one orchestrator, `Compactor`."""

from tracetrim.compactor._compactor import Compactor
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._outcome import Action, Outcome, PairDecision, Plan, PlanStats, Record, Status
from tracetrim.compactor._request import CompactionRequest

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
    "Status",
]
