"""The planner: pure, deterministic stages and the one orchestrator, `Compactor`."""

from tracetrim.compactor._compactor import Compactor
from tracetrim.compactor._config import CompactorConfig, ExecutionOptions, Mode
from tracetrim.compactor._offload import OffloadStrategy
from tracetrim.compactor._offload_config import OffloadConfig, OffloadMode
from tracetrim.compactor._offload_restore import restore_offloaded
from tracetrim.compactor._outcome import (
    Action,
    Outcome,
    PairDecision,
    Plan,
    PlanStats,
    Reason,
    Record,
    Status,
)
from tracetrim.compactor._request import CompactionRequest
from tracetrim.compactor._summarizer import ChatSummarizer, Summarizer, SummarizerError, Summary

__all__ = [
    "Action",
    "ChatSummarizer",
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
    "Summarizer",
    "SummarizerError",
    "Summary",
    "restore_offloaded",
]
