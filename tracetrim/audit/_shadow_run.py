"""Replay real runs in SHADOW mode: a records file with per-pair detail and the follow-ups that came true."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from tracetrim._followup import Followup, quoted_calls
from tracetrim._scope import Scope
from tracetrim.audit._observer import JsonLinesObserver
from tracetrim.compactor import CompactionRequest, Compactor, CompactorConfig, ExecutionOptions, Mode
from tracetrim.decision import LearnedDecisionModel
from tracetrim.decision._remote import ModelOrJudge
from tracetrim.learn._examples import CUT_FRACTIONS, cut_points
from tracetrim.learn._sources import Trajectory


@attrs.frozen
class ShadowRun:
    """What a replay wrote: how many plans and follow-ups went into which file."""

    path: Path
    plans: int
    followups: int


async def record_shadow_run(
    trajectories: Iterable[Trajectory],
    path: str | Path,
    *,
    model: ModelOrJudge | None = None,
    fractions: Iterable[float] = CUT_FRACTIONS,
    version: str = "shadow-replay",
) -> ShadowRun:
    """Plan each trajectory at a few cut points in SHADOW mode, recording pairs to ``path``.

    After each plan the rest of the run is known, so every earlier result the agent quoted or reused
    after the cut is reported as `Followup.used` (what a host's later pass would report live).
    Records and follow-ups are appended; the file is created if missing.
    """
    observer = JsonLinesObserver(path, pairs=True)
    judge = model if model is not None else LearnedDecisionModel()
    fractions = tuple(fractions)
    plans = followups = 0
    for trajectory in trajectories:
        scope = Scope("replay", trajectory.dataset, trajectory.name)
        compactor = Compactor(
            judge,
            config=CompactorConfig(eligible_tools=trajectory.tools()),
            execution=ExecutionOptions(mode=Mode.SHADOW, version=version, observer=observer),
        )
        for cut in cut_points(trajectory.messages, fractions):
            await compactor.plan(CompactionRequest(trajectory.messages[:cut], scope=scope))
            plans += 1
            for call_id in quoted_calls(trajectory.messages, cut):
                observer.report(Followup.used(call_id, scope))
                followups += 1
    return ShadowRun(Path(path), plans, followups)
