"""tracetrim itself, walked as a host runs it: the real `Compactor` or `OffloadStrategy` in ENFORCE mode
with an in-memory archive, fired by the host's rule, its adopted history the one the host goes on with."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from tracetrim._scope import Scope
from tracetrim._snapshot import Message
from tracetrim._validators import FieldValueError
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.compactor import (
    CompactionRequest,
    Compactor,
    CompactorConfig,
    ExecutionOptions,
    Mode,
    OffloadConfig,
    OffloadMode,
    OffloadStrategy,
    Outcome,
)
from tracetrim.decision import LearnedDecisionModel
from tracetrim.decision._remote import ModelOrJudge
from tracetrim.harness_adapter import CompactionStrategy
from tracetrim.learn._sources import Trajectory
from tracetrim.replay._book import MessageBook
from tracetrim.replay._host import HostRule
from tracetrim.replay._protocol import Turn

Judge = ModelOrJudge
JudgeFor = Callable[[Trajectory], Judge]
"""The judge for one run: a held-out fold's model, say (a benchmark never lets a judge see its run)."""


class PlannerKind(enum.StrEnum):
    """Which tracetrim strategy plans: the thresholds, a token budget, or the size-based offload."""

    THRESHOLD = "threshold"
    BUDGET = "budget"
    OFFLOAD = "offload"


_MODELS = {
    PlannerKind.THRESHOLD: "tracetrim Compactor, threshold mode (CompactorConfig defaults{extra}), ENFORCE, "
    "{fired}",
    PlannerKind.BUDGET: "tracetrim Compactor, budget mode (the host's trigger / target{extra}), ENFORCE",
    PlannerKind.OFFLOAD: "tracetrim OffloadStrategy, mode compact (OffloadConfig defaults, the host's "
    "trigger / target{extra}), ENFORCE",
}
_FIRED = {
    False: "fired by the host rule",
    True: "fired before every call after the first (an adapter given trigger_tokens=None)",
}
"""When threshold mode plans, by ``every_call``."""


@attrs.frozen
class TracetrimStrategy:
    """A tracetrim strategy for the replay; build one with `tracetrim_threshold`, `tracetrim_budget` or
    `tracetrim_offload`. ``config`` overrides the config's defaults (``tombstones=False``, say).
    ``every_call``: plan before every call after the first whatever the host's rule says, as an adapter
    given ``trigger_tokens=None`` does (threshold mode only)."""

    kind: PlannerKind
    name: str
    judge_for: JudgeFor | None
    """The judge for each run (None for the offload, which has none)."""
    config: Mapping[str, Any] = attrs.field(factory=dict)
    models: str = ""
    every_call: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.every_call and self.kind is not PlannerKind.THRESHOLD:
            raise FieldValueError(
                "is for threshold mode: a budget or an offload fires at the host's trigger",
                owner="TracetrimStrategy",
                field="every_call",
            )

    def start(self, run: Trajectory, host: HostRule, book: MessageBook) -> _PlannerSession:
        """A session holding the host's history, with a fresh in-memory archive for this run."""
        archive = KeyValueArchive(MemoryStore())
        execution = ExecutionOptions(mode=Mode.ENFORCE)
        tools = run.tools()
        scope = Scope("replay", self.name[:512] or "tracetrim", run.name[:512] or "run")

        if self.kind is PlannerKind.OFFLOAD:
            offload = dict(self.config)

            def make(tokens: int) -> CompactionStrategy:
                target = host.target_for(tokens)
                config = OffloadConfig(
                    mode=OffloadMode.COMPACT,
                    **{"trigger_tokens": target + 1, "target_tokens": target, **offload},
                )
                return OffloadStrategy(config=config, execution=execution, archive=archive)

        else:
            assert self.judge_for is not None, "a planner strategy needs a judge"
            base = Compactor(
                self.judge_for(run),
                config=CompactorConfig(eligible_tools=tools, **self.config),
                execution=execution,
                archive=archive,
            )

            def make(tokens: int) -> CompactionStrategy:
                if self.kind is PlannerKind.THRESHOLD:
                    return base
                target = host.target_for(tokens)
                return base.with_budget(target + 1, target)

        return _PlannerSession(make, HostRule(every_steps=1) if self.every_call else host, book, scope)


class _PlannerSession:
    """The host's own history: what came since the last call is appended, and when the host's rule
    fires the strategy plans over it; an adopted plan is the history from then on."""

    def __init__(
        self, make: Callable[[int], CompactionStrategy], host: HostRule, book: MessageBook, scope: Scope
    ) -> None:
        self._make = make
        self._host = host
        self._book = book
        self._scope = scope
        self._context: list[Message] = []
        self._seen = 0

    async def prompt(self, history: Sequence[Message], step: int) -> Turn:
        """The host's history for this call, compacted first when the rule fires."""
        if len(history) > self._seen:
            self._context = [*self._context, *history[self._seen :]]
            self._seen = len(history)
        tokens = self._book.history(self._context)
        if not self._host.fires(tokens, step):
            return Turn(self._context)
        outcome: Outcome = await self._make(tokens).plan(CompactionRequest(self._context, scope=self._scope))
        if outcome.adopted and outcome.plan is not None:
            self._context = list(outcome.plan.messages)
        return Turn(self._context, planned=True, reason=str(outcome.reason))


def _strategy(
    kind: PlannerKind,
    judge: Judge | None,
    judge_for: JudgeFor | None,
    name: str | None,
    config: dict[str, Any],
    every_call: bool = False,
) -> TracetrimStrategy:
    if judge_for is None and kind is not PlannerKind.OFFLOAD:
        chosen: Judge = judge if judge is not None else LearnedDecisionModel()

        def judge_for(run: Trajectory) -> Judge:
            return chosen

    extra = "".join(f", {key}={value!r}" for key, value in sorted(config.items()))
    # The library leaves tombstones by default; a strategy named plainly is the default.
    default = f"tracetrim {kind.value}" + (" without tombstones" if config.get("tombstones") is False else "")
    if config.get("adopt_partial") is False:
        default += ", target or nothing"
    if config.get("cache_prices") is not None:
        read, write = config["cache_prices"]
        default += f", cache gate {read:g}/{write:g}"
    if every_call:
        default += ", every call"
    model = _MODELS[kind].format(extra=extra, fired=_FIRED[every_call])
    return TracetrimStrategy(kind, name or default, judge_for, dict(config), model, every_call=every_call)


def tracetrim_threshold(
    judge: Judge | None = None,
    *,
    judge_for: JudgeFor | None = None,
    name: str | None = None,
    every_call: bool = False,
    **config: Any,
) -> TracetrimStrategy:
    """tracetrim's thresholds (the judge's policy levels) each time the host's rule fires, or before
    every call with ``every_call``; the judge defaults to the shipped `LearnedDecisionModel`, ``config``
    overrides `CompactorConfig` fields."""
    return _strategy(PlannerKind.THRESHOLD, judge, judge_for, name, config, every_call)


def tracetrim_budget(
    judge: Judge | None = None, *, judge_for: JudgeFor | None = None, name: str | None = None, **config: Any
) -> TracetrimStrategy:
    """tracetrim's token budget: planned down to the host's target (cheapest loss per token first)."""
    return _strategy(PlannerKind.BUDGET, judge, judge_for, name, config)


def tracetrim_offload(*, name: str | None = None, **config: Any) -> TracetrimStrategy:
    """tracetrim's size-based offload in ``compact`` mode (no summariser: nothing leaves the host), down
    to the host's target; ``config`` overrides `OffloadConfig` fields."""
    return _strategy(PlannerKind.OFFLOAD, None, None, name, config)
