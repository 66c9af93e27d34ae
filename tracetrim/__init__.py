"""tracetrim: shrink an LLM agent's tool history safely, with everything archived and restorable."""

# compactor first: tracetrim._record (imported by _audit) builds on it, and compactor imports _record.
from tracetrim import archive, compactor, decision, formats
from tracetrim._errors import TracetrimError
from tracetrim._followup import Followup, quoted_calls
from tracetrim._public import publish
from tracetrim._record import PairRecord, RecordDetail
from tracetrim._scope import Scope
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim._telemetry import SpanObserver
from tracetrim._token_budget import TokenBudget
from tracetrim.audit._observer import JsonLinesObserver
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
    "Followup",
    "JsonLinesObserver",
    "Mode",
    "OffloadConfig",
    "OffloadMode",
    "OffloadStrategy",
    "Outcome",
    "PairDecision",
    "PairRecord",
    "Plan",
    "PlanStats",
    "Reason",
    "Record",
    "RecordDetail",
    "Scope",
    "SnapshotError",
    "SpanObserver",
    "Status",
    "Summarizer",
    "Summary",
    "TokenBudget",
    "TracetrimError",
    "__version__",
    "archive",
    "compactor",
    "decision",
    "formats",
    "quoted_calls",
    "restore_offloaded",
    "validate_messages",
]

publish(__name__, globals())
