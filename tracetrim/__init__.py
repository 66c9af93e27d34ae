"""tracetrim: shrink an LLM agent's tool history safely, with everything archived and restorable."""

from tracetrim import archive, decision, formats
from tracetrim._audit import JsonLinesObserver
from tracetrim._errors import TracetrimError
from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.compactor import (
    Action,
    CompactionRequest,
    Compactor,
    CompactorConfig,
    ExecutionOptions,
    Mode,
    OffloadConfig,
    OffloadMode,
    OffloadStrategy,
    Outcome,
    PairDecision,
    Plan,
    PlanStats,
    Reason,
    Record,
    Status,
    restore_offloaded,
)
from tracetrim.decision import ChatSummarizer, Summarizer, Summary
from tracetrim.harness_adapter import CompactionStrategy

__version__ = "0.1.0"

__all__ = [
    "Action",
    "ChatSummarizer",
    "CompactionRequest",
    "CompactionStrategy",
    "Compactor",
    "CompactorConfig",
    "ExecutionOptions",
    "JsonLinesObserver",
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
    "Scope",
    "SnapshotError",
    "Status",
    "Summarizer",
    "Summary",
    "TracetrimError",
    "__version__",
    "archive",
    "decision",
    "formats",
    "restore_offloaded",
    "validate_messages",
]
