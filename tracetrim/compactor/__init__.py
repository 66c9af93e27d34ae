"""The planner: pure, deterministic stages and the one orchestrator, `Compactor`."""

from tracetrim._public import publish
from tracetrim._record import Record
from tracetrim.compactor._compactor import Compactor
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._offload import OffloadConfig, OffloadMode, OffloadStrategy, restore_offloaded
from tracetrim.compactor._outcome import (
    Action,
    Outcome,
    PairDecision,
    Plan,
    PlanStats,
    Reason,
    Status,
)
from tracetrim.compactor._request import CompactionRequest

__all__ = [
    "Action",
    "CompactionRequest",
    "Compactor",
    "CompactorConfig",
    "ExecutionOptions",
    "Mode",
    "OffloadConfig",
    "OffloadMode",
    "OffloadStrategy",
    "Outcome",
    "PairDecision",
    "Plan",
    "PlanStats",
    "Reason",
    "Record",
    "Status",
    "restore_offloaded",
]

publish(__name__, globals())
