"""Cut trajectories into training and evaluation examples: features at the cut, labels from after it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from tracetrim._snapshot import Message
from tracetrim.compactor._judging import history_view, stated_plan
from tracetrim.compactor._pairs import Pair, find_pairs, protected_messages
from tracetrim.decision._features import pair_features
from tracetrim.decision._goal import default_goal
from tracetrim.decision._history import HistoryView
from tracetrim.learn._labels import Evidence, credited, evidence
from tracetrim.learn._sources import Trajectory

CUT_FRACTIONS = (0.35, 0.6, 0.85)
"""Where trajectories are cut: early, middle and late in the run, always before an assistant turn."""
PRESERVE_RECENT = 6
"""The planner's default: the last six messages are never candidates."""


@attrs.frozen
class Cut:
    """A trajectory cut before an assistant turn: the prefix a host would compact and what came after."""

    trajectory: Trajectory
    at: int
    prefix: list[Message] = attrs.field(repr=False)
    pairs: list[Pair] = attrs.field(repr=False)
    view: HistoryView = attrs.field(repr=False)
    evidence: dict[str, Evidence] = attrs.field(repr=False)
    """What the frontier scores: the strings of each old result used after the cut."""
    credited: frozenset[str] = attrs.field(repr=False)
    """What a judge is trained to keep (`tracetrim.learn.credited`): evidence plus latest copies."""

    @property
    def candidates(self) -> list[Pair]:
        """The old pairs a judge decides on (outside the recent messages, eligible, well-formed)."""
        return [pair for pair in self.pairs if pair.candidate]


def cut_points(messages: Sequence[Message], fractions: Iterable[float] = CUT_FRACTIONS) -> list[int]:
    """Message indexes just before an assistant turn, near each fraction of the history (distinct)."""
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > PRESERVE_RECENT + 2]
    points: list[int] = []
    for fraction in fractions:
        target = int(len(messages) * fraction)
        best = min(turns, key=lambda i: abs(i - target), default=None)
        if best is not None and best not in points:
            points.append(best)
    return points


def make_cut(trajectory: Trajectory, at: int, *, preserve_recent: int = PRESERVE_RECENT) -> Cut:
    """The cut of ``trajectory`` before message ``at``, with its pairs, judge view and evidence."""
    prefix = trajectory.messages[:at]
    protected = protected_messages(prefix, preserve_recent=preserve_recent, protected_ids=(), pinned_ids=())
    pairs = find_pairs(prefix, eligible_tools=trajectory.tools(), protected=protected, protected_call_ids=())
    view = history_view(prefix, pairs, goal=default_goal(prefix), next_action=stated_plan(prefix))
    found = evidence(trajectory.messages, at)
    return Cut(trajectory, at, prefix, pairs, view, found, credited(trajectory.messages, at, found))


def cuts(trajectories: Iterable[Trajectory], fractions: Iterable[float] = CUT_FRACTIONS) -> list[Cut]:
    """Every cut of every trajectory."""
    fractions = tuple(fractions)
    return [make_cut(t, at) for t in trajectories for at in cut_points(t.messages, fractions)]


def group_of(cut: Cut) -> str:
    """What a fold never splits: the dataset and the trajectory's group (repository, task, file)."""
    return f"{cut.trajectory.dataset}/{cut.trajectory.group}"


@attrs.frozen
class Examples:
    """Feature rows with labels (1 = the agent used it after the cut: `Cut.credited`), result sizes and the
    group of each row."""

    rows: list[list[float]]
    labels: list[int]
    sizes: list[int]
    groups: list[str]


def examples(selected: Iterable[Cut]) -> Examples:
    """One row per candidate pair of every cut."""
    out = Examples([], [], [], [])
    for cut in selected:
        features = pair_features(cut.view)
        for pair in cut.view.pairs:
            out.rows.append(features[pair.key])
            out.labels.append(1 if pair.call_id in cut.credited else 0)
            out.sizes.append(len(pair.result_text))
            out.groups.append(group_of(cut))
    return out


def joined(*parts: Examples) -> Examples:
    """The rows of every part, in order."""
    out = Examples([], [], [], [])
    for part in parts:
        out.rows.extend(part.rows)
        out.labels.extend(part.labels)
        out.sizes.extend(part.sizes)
        out.groups.extend(part.groups)
    return out
