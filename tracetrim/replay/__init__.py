"""Replaying whole runs as a host would: what each compaction strategy bills, caches and loses."""

from tracetrim._public import publish
from tracetrim.replay._baselines import (
    AnthropicClearToolUses,
    KeepLastN,
    LangChainClearToolUses,
    NoCompaction,
    OpenAIToolOutputTrimmer,
)
from tracetrim.replay._book import MessageBook, model_turns
from tracetrim.replay._defaults import (
    DEFAULT_HOST,
    DEFAULT_NAMES,
    DEFAULT_WINDOW,
    NO_TOMBSTONES,
    STRATEGY_NAMES,
    VARIANTS,
    baselines,
    default_strategies,
    strategies_by_name,
)
from tracetrim.replay._host import HostRule
from tracetrim.replay._html import render_html
from tracetrim.replay._loss import Missing, missing_kind
from tracetrim.replay._planners import (
    PlannerKind,
    TracetrimStrategy,
    tracetrim_budget,
    tracetrim_offload,
    tracetrim_threshold,
)
from tracetrim.replay._prices import ANTHROPIC, NO_CACHE, OPENAI, PRESETS, CachePrices, prices
from tracetrim.replay._protocol import ReplayStrategy, Session, Turn
from tracetrim.replay._result import (
    ALL,
    Compaction,
    ReplayReport,
    StrategyInfo,
    StrategyRun,
    StrategyTotals,
)
from tracetrim.replay._text import format_report
from tracetrim.replay._uses import Use, step_uses
from tracetrim.replay._walk import replay_run, replay_runs, replay_runs_async

__all__ = [
    "ALL",
    "ANTHROPIC",
    "DEFAULT_HOST",
    "DEFAULT_NAMES",
    "DEFAULT_WINDOW",
    "NO_CACHE",
    "NO_TOMBSTONES",
    "OPENAI",
    "PRESETS",
    "STRATEGY_NAMES",
    "VARIANTS",
    "AnthropicClearToolUses",
    "CachePrices",
    "Compaction",
    "HostRule",
    "KeepLastN",
    "LangChainClearToolUses",
    "MessageBook",
    "Missing",
    "NoCompaction",
    "OpenAIToolOutputTrimmer",
    "PlannerKind",
    "ReplayReport",
    "ReplayStrategy",
    "Session",
    "StrategyInfo",
    "StrategyRun",
    "StrategyTotals",
    "TracetrimStrategy",
    "Turn",
    "Use",
    "baselines",
    "default_strategies",
    "format_report",
    "missing_kind",
    "model_turns",
    "prices",
    "render_html",
    "replay_run",
    "replay_runs",
    "replay_runs_async",
    "step_uses",
    "strategies_by_name",
    "tracetrim_budget",
    "tracetrim_offload",
    "tracetrim_threshold",
]

publish(__name__, globals())
