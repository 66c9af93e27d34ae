"""Labelled histories (``shared/scenarios``) as training rows: critical and needed results are used again."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracetrim._json import strict_loads
from tracetrim.compactor._judging import history_view
from tracetrim.decision._features import pair_features
from tracetrim.decision._history import HistoryView
from tracetrim.decision._learned import LearnedDecisionModel
from tracetrim.decision._weights import JudgeWeights
from tracetrim.learn._examples import Examples
from tracetrim.learn._quality import Case

LABEL_VALUES = {"critical": 1, "needed": 1, "irrelevant": 0, "superseded": 0}
"""What each label says about use after the cut; protected pairs are never candidates."""


def load_scenarios(folder: Path) -> dict[str, dict[str, Any]]:
    """Every scenario file of ``folder`` by file stem."""
    return {p.stem: strict_loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}


def scenario_view(scenario: Mapping[str, Any]) -> tuple[Case, HistoryView]:
    """The scenario as a `Case` and what an in-process judge sees of it, with its own goal and next
    action."""
    case = Case.from_scenario(scenario)
    pairs, _ = case.candidates()
    return case, history_view(list(case.messages), pairs, goal=case.goal, next_action=case.next_action)


def scenario_examples(scenario: Mapping[str, Any]) -> Examples:
    """One row per labelled candidate, judged with the scenario's own goal and next action."""
    case, view = scenario_view(scenario)
    features = pair_features(view)
    label = {call_id: kind for kind, ids in scenario.get("labels", {}).items() for call_id in ids}
    out = Examples([], [], [], [])
    for pair in view.pairs:
        value = LABEL_VALUES.get(label.get(pair.call_id, ""))
        if value is None:
            continue
        out.rows.append(features[pair.key])
        out.labels.append(value)
        out.sizes.append(len(pair.result_text))
        out.groups.append(f"scenarios/{case.name}")
    return out


def critical_values(scenario: Mapping[str, Any], weights: JudgeWeights) -> dict[str, float]:
    """Each critical result's value under ``weights`` (`JudgeWeights.value`, what the policy levels
    are compared with), by call id: how far a judge keeps it from being shortened or dropped. The
    value is counted against the levels as they ship: a judge whose self-check moved its levels for
    this history (`tracetrim.decision.JudgeNote.level_shift`) has the move taken off its values."""
    _, view = scenario_view(scenario)
    features = pair_features(view)
    critical = set(scenario.get("labels", {}).get("critical", ()))
    need = weights.need_function()
    shift = LearnedDecisionModel(weights).judge(view).note.level_shift
    return {
        pair.call_id: weights.value(need(features[pair.key]), len(pair.result_text)) - shift
        for pair in view.pairs
        if pair.call_id in critical
    }
