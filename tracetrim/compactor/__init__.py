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

# Summarizers are models at the edge and live in tracetrim.decision; these four names stay importable
# from here too, where the offload strategy's users first found them.
from tracetrim.decision import ChatSummarizer, Summarizer, SummarizerError, Summary

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

publish(__name__, globals())
