"""The host rule and the strategies a replay walks when none are named."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracetrim._validators import FieldValueError
from tracetrim.replay._baselines import (
    AnthropicClearToolUses,
    KeepLastN,
    LangChainClearToolUses,
    NoCompaction,
    OpenAIToolOutputTrimmer,
)
from tracetrim.replay._host import HostRule
from tracetrim.replay._planners import Judge, tracetrim_budget, tracetrim_offload, tracetrim_threshold
from tracetrim.replay._prices import ANTHROPIC, CachePrices
from tracetrim.replay._protocol import ReplayStrategy

DEFAULT_WINDOW = 128_000
"""The context window a replay assumes when none is given (GPT-4o's; the host compacts at 60% / 40%)."""
DEFAULT_HOST = HostRule.window(DEFAULT_WINDOW)
"""76,800 / 51,200 tokens: the adapters' ``"auto"`` budget for a 128k window."""


def baselines(*, mask_keep: int = 10) -> list[ReplayStrategy]:
    """What users pick instead, at their documented defaults: none, masking, Anthropic, LangChain, OpenAI."""
    return [
        NoCompaction(),
        KeepLastN(mask_keep),
        AnthropicClearToolUses(),
        LangChainClearToolUses(),
        OpenAIToolOutputTrimmer(),
    ]


def default_strategies(
    judge: Judge | None = None, *, without_tombstones: bool = False
) -> list[ReplayStrategy]:
    """The baselines, then tracetrim's threshold mode, budget mode and offload (`DEFAULT_NAMES`), at the
    library's defaults (tombstones on); ``without_tombstones`` adds the two planner modes once more with
    ``tombstones=False``, to see what the tombstones are worth."""
    names = [*DEFAULT_NAMES, *(NO_TOMBSTONES if without_tombstones else ())]
    return strategies_by_name(names, judge)


STRATEGY_NAMES = (
    "none",
    "mask",
    "anthropic",
    "langchain",
    "openai",
    "threshold",
    "budget",
    "offload",
    "threshold-no-tombstones",
    "budget-no-tombstones",
    "budget-target-or-nothing",
    "threshold-cache-gate",
    "budget-cache-gate",
    "threshold-every-call",
)
"""What ``tracetrim replay --strategies`` accepts: the baselines, then tracetrim's strategies."""
DEFAULT_NAMES = STRATEGY_NAMES[:8]
"""The strategies a replay walks unless told otherwise (the variants are opt-in)."""
NO_TOMBSTONES = STRATEGY_NAMES[8:10]
"""The planner modes once more without the tombstones the library leaves by default."""
VARIANTS = STRATEGY_NAMES[10:]
"""tracetrim's other settings: a budget that adopts nothing short of its target (``adopt_partial``
false), both planner modes refusing a compaction that would not pay back its cache rewrite at the
replay's prices (``cache_prices``), and threshold mode planning before every call with no minimum
reduction (what an adapter given ``trigger_tokens=None`` and ``minimum_reduction=0`` does)."""


def strategies_by_name(
    names: Sequence[str],
    judge: Judge | None = None,
    *,
    mask_keep: int = 10,
    baseline_trigger: int | None = None,
    prices: CachePrices = ANTHROPIC,
) -> list[ReplayStrategy]:
    """The named strategies (`STRATEGY_NAMES`), in the order given; ``baseline_trigger`` replaces the
    100,000-token trigger of Anthropic's and LangChain's clearing (their other defaults kept);
    ``prices`` are what the cache-gated variants weigh a rewrite with (the replay's, as a rule)."""
    unknown = [n for n in names if n not in STRATEGY_NAMES]
    if unknown:
        raise FieldValueError(
            f"unknown strategy {', '.join(unknown)}; choose from {', '.join(STRATEGY_NAMES)}"
        )
    needs_judge = any(n in ("threshold", "budget", *NO_TOMBSTONES, *VARIANTS) for n in names)
    if needs_judge and judge is None:
        from tracetrim.decision import LearnedDecisionModel

        judge = LearnedDecisionModel()
    trigger = 100_000 if baseline_trigger is None else baseline_trigger
    build: dict[str, Callable[[], ReplayStrategy]] = {
        "none": NoCompaction,
        "mask": lambda: KeepLastN(mask_keep),
        "anthropic": lambda: AnthropicClearToolUses(trigger=trigger),
        "langchain": lambda: LangChainClearToolUses(trigger=trigger),
        "openai": OpenAIToolOutputTrimmer,
        "threshold": lambda: tracetrim_threshold(judge),
        "budget": lambda: tracetrim_budget(judge),
        "offload": tracetrim_offload,
        "threshold-no-tombstones": lambda: tracetrim_threshold(judge, tombstones=False),
        "budget-no-tombstones": lambda: tracetrim_budget(judge, tombstones=False),
        "budget-target-or-nothing": lambda: tracetrim_budget(judge, adopt_partial=False),
        "threshold-cache-gate": lambda: tracetrim_threshold(judge, cache_prices=prices.ratios),
        "budget-cache-gate": lambda: tracetrim_budget(judge, cache_prices=prices.ratios),
        "threshold-every-call": lambda: tracetrim_threshold(judge, every_call=True, minimum_reduction=0.0),
    }
    return [build[name]() for name in names]
