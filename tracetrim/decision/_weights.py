"""`JudgeWeights`: a fitted judge as data, read from and written to a small JSON file."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import cattrs

from tracetrim._convert import converter
from tracetrim._errors import TracetrimError
from tracetrim._json import pretty_json, strict_loads
from tracetrim._validators import is_number

FORMAT_VERSION = 1


class WeightsError(TracetrimError, ValueError):
    """A weights file is missing, malformed or was trained on features this version does not compute."""


def _floats(value: Iterable[float]) -> tuple[float, ...]:
    return tuple(value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _finite(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    values = value if isinstance(value, tuple) else (value,)
    for item in values:
        if not is_number(item):
            raise WeightsError(f"JudgeWeights.{attribute.name} must hold finite numbers, got {item!r}")


@attrs.frozen
class Tree:
    """One regression tree of a boosted ensemble, as parallel node arrays (node 0 is the root).

    A node with ``feature[n] >= 0`` sends ``x`` to ``left[n]`` when ``x[feature[n]] <= threshold[n]``,
    else to ``right[n]``; a leaf (``feature[n] == -1``) adds ``value[n]`` to the log-odds.
    """

    feature: tuple[int, ...] = attrs.field(converter=_ints)
    threshold: tuple[float, ...] = attrs.field(converter=_floats, validator=_finite)
    left: tuple[int, ...] = attrs.field(converter=_ints)
    right: tuple[int, ...] = attrs.field(converter=_ints)
    value: tuple[float, ...] = attrs.field(converter=_floats, validator=_finite)

    def __attrs_post_init__(self) -> None:
        n = len(self.feature)
        if n == 0 or not (len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n):
            raise WeightsError("Tree: node arrays must be non-empty and of one length")
        for node, feature in enumerate(self.feature):
            if feature >= 0 and not (node < self.left[node] < n and node < self.right[node] < n):
                raise WeightsError(f"Tree: node {node} points outside the tree or backwards")

    def score(self, x: Sequence[float]) -> float:
        """The leaf value ``x`` reaches."""
        node = 0
        feature = self.feature
        while (f := feature[node]) >= 0:
            node = self.left[node] if x[f] <= self.threshold[node] else self.right[node]
        return self.value[node]


@attrs.frozen
class JudgeWeights:
    """A model over `FEATURE_NAMES` plus the policy levels that turn its score into answers.

    ``need(x) = sigmoid(intercept + coef · (x - mean) / scale + sum of the trees' leaves)`` is the
    calibrated probability that the agent will use the result again: a logistic model, a boosted
    tree ensemble (coefficients zero), or both. A pair's value per size is
    ``log need - size_exponent * log1p(chars)``; the result stays verbatim at or above
    ``keep_level``, the call stays (result shortened) at or above ``call_level``, and below both the
    pair goes. ``slope`` maps the distance to a level onto the two probabilities a planner's 0.5
    threshold reads, so the levels are exactly the decisions.

    What the judge knows of its own training data, for the run in front of it
    (`tracetrim.decision._calibration`): ``range_low`` and ``range_high``, each feature's smallest
    and largest value in the training rows (empty in files written before they were stored: the
    out-of-range check is then off), and ``reuse_reference``, how many of the results its training
    runs used again per result its ``need`` expected, at the self-check's internal cut.
    """

    features: tuple[str, ...] = attrs.field(converter=_names)
    mean: tuple[float, ...] = attrs.field(converter=_floats, validator=_finite)
    scale: tuple[float, ...] = attrs.field(converter=_floats, validator=_finite)
    coef: tuple[float, ...] = attrs.field(converter=_floats, validator=_finite)
    intercept: float = attrs.field(validator=_finite)
    size_exponent: float = attrs.field(default=0.5, validator=_finite)
    keep_level: float = attrs.field(default=-4.0, validator=_finite)
    call_level: float = attrs.field(default=-6.0, validator=_finite)
    slope: float = attrs.field(default=4.0, validator=_finite)
    trees: tuple[Tree, ...] = attrs.field(default=(), converter=tuple)
    range_low: tuple[float, ...] = attrs.field(default=(), converter=_floats, validator=_finite)
    range_high: tuple[float, ...] = attrs.field(default=(), converter=_floats, validator=_finite)
    reuse_reference: float = attrs.field(default=1.0, validator=_finite)
    version: str = "custom"
    trained_on: Mapping[str, Any] = attrs.field(factory=dict)
    format_version: int = FORMAT_VERSION

    def __attrs_post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n):
            raise WeightsError(
                f"JudgeWeights: {n} features but {len(self.mean)} means, {len(self.scale)} scales, "
                f"{len(self.coef)} coefficients"
            )
        if any(s <= 0 for s in self.scale):
            raise WeightsError("JudgeWeights.scale must be positive")
        if self.format_version != FORMAT_VERSION:
            raise WeightsError(f"weights format {self.format_version} is not {FORMAT_VERSION}")
        for tree in self.trees:
            if max(tree.feature) >= n:
                raise WeightsError(f"JudgeWeights: a tree splits on feature {max(tree.feature)} of {n}")
        if (self.range_low or self.range_high) and not (len(self.range_low) == len(self.range_high) == n):
            raise WeightsError(
                f"JudgeWeights: {n} features but {len(self.range_low)} range_low and "
                f"{len(self.range_high)} range_high values"
            )
        if any(low > high for low, high in zip(self.range_low, self.range_high, strict=True)):
            raise WeightsError("JudgeWeights: a range_low value is above its range_high")
        if self.reuse_reference <= 0:
            raise WeightsError("JudgeWeights.reuse_reference must be positive")

    def need(self, x: Sequence[float]) -> float:
        """The probability that the agent uses this result again."""
        z = self.intercept
        for value, mean, scale, coef in zip(x, self.mean, self.scale, self.coef, strict=True):
            z += coef * (value - mean) / scale
        for tree in self.trees:
            z += tree.score(x)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def need_function(self) -> Callable[[Sequence[float]], float]:
        """`need` as one generated function (built once per weights): the same operations on the same
        constants in the same order, so the same float, without walking the node arrays."""
        # Kept beside the weights rather than in them, so that they stay plain data (copied, pickled).
        found = _COMPILED.get(id(self))
        if found is None:
            found = _COMPILED[id(self)] = compile_need(self)
            weakref.finalize(self, _COMPILED.pop, id(self), None)
        return found

    def value(self, need: float, chars: int) -> float:
        """Log need per ``size_exponent`` power of size: what the policy ranks pairs by."""
        return math.log(max(need, 1e-12)) - self.size_exponent * math.log1p(chars)

    def moved(self, shift: float) -> JudgeWeights:
        """These weights with both policy levels moved by ``shift`` (more goes as they rise)."""
        return attrs.evolve(
            self, keep_level=round(self.keep_level + shift, 9), call_level=round(self.call_level + shift, 9)
        )

    def answers(self, value: float) -> tuple[float, float]:
        """``(keep_call, keep_result)`` for a pair of that value."""
        return _sigmoid(self.slope * (value - self.call_level)), _sigmoid(
            self.slope * (value - self.keep_level)
        )

    def to_json(self) -> str:
        """The weights as indented JSON (the shipped file's form)."""
        return pretty_json(converter.unstructure(self), indent=1)

    @classmethod
    def from_json(cls, text: str, *, source: str = "weights") -> JudgeWeights:
        """Weights from JSON text; a `WeightsError` naming ``source`` and what is wrong."""
        try:
            data = strict_loads(text)
            return converter.structure(data, cls)
        except WeightsError as exc:
            raise WeightsError(f"{source}: {exc}") from None
        except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
            inner = _weights_error_in(exc)
            if inner is not None:
                raise WeightsError(f"{source}: {inner}") from None
            detail = "; ".join(str(e) for e in getattr(exc, "exceptions", ())) or str(exc)
            raise WeightsError(f"{source}: not a judge weights file ({detail})") from None

    @classmethod
    def load(cls, path: str | Path) -> JudgeWeights:
        """Weights from a file written by `to_json` (``tracetrim fit -o``)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise WeightsError(f"cannot read judge weights {path}: {exc.strerror or exc}") from None
        return cls.from_json(text, source=str(path))


_COMPILED: dict[int, Callable[[Sequence[float]], float]] = {}
"""`JudgeWeights.need_function` of each live weights object, by its id."""


def _tree_lines(tree: Tree, node: int, depth: int) -> Iterable[str]:
    """``tree``'s walk from ``node`` as nested ``if`` statements that add the leaf to ``z``."""
    pad = "    " * depth
    feature = tree.feature[node]
    if feature < 0:
        yield f"{pad}z += {tree.value[node]!r}"
        return
    yield f"{pad}if x{feature} <= {tree.threshold[node]!r}:"
    yield from _tree_lines(tree, tree.left[node], depth + 1)
    yield f"{pad}else:"
    yield from _tree_lines(tree, tree.right[node], depth + 1)


def need_source(weights: JudgeWeights) -> str:
    """Python source of ``need(x)`` for ``weights``: `JudgeWeights.need` unrolled.

    Floats are written with ``repr`` (which reads back as the same float) and every addition
    happens in `JudgeWeights.need`'s order, so the result is bit for bit the same (for the finite
    features the judge computes: a zero coefficient's term, a signed zero, is left out).
    """
    count = len(weights.features)
    # Each feature in a local of its own (x0, x1, ...): reading a local is cheaper than indexing.
    unpacked = ", ".join(f"x{n}" for n in range(count)) + ("," if count == 1 else "")
    lines = ["def need(x):", f"    {unpacked} = x", f"    z = {weights.intercept!r}"]
    for n, (mean, scale, coef) in enumerate(zip(weights.mean, weights.scale, weights.coef, strict=True)):
        # A zero coefficient (all of them in a trees-only fit) adds a signed zero: no change to z
        # that the result can tell apart, so no line.
        if coef != 0.0:
            lines.append(f"    z += {coef!r} * (x{n} - {mean!r}) / {scale!r}")
    for tree in weights.trees:
        lines.extend(_tree_lines(tree, 0, 1))
    lines.append("    return 1.0 / (1.0 + exp(-z)) if z > -700 else 0.0")
    return "\n".join(lines) + "\n"


def compile_need(weights: JudgeWeights) -> Callable[[Sequence[float]], float]:
    """`need_source` compiled: many times faster than walking the trees node by node. Trees too deep
    for Python's parser (nested far beyond what a fit makes) keep the node-by-node `JudgeWeights.need`."""
    namespace: dict[str, Any] = {"exp": math.exp}
    try:
        code = compile(need_source(weights), f"<need of judge weights {weights.version}>", "exec")
    except (SyntaxError, RecursionError, MemoryError):
        return weights.need
    exec(code, namespace)  # our own generated source: constants and comparisons only
    function: Callable[[Sequence[float]], float] = namespace["need"]
    return function


def _weights_error_in(exc: BaseException) -> WeightsError | None:
    """The `WeightsError` a nested value raised, out of cattrs' exception groups."""
    if isinstance(exc, WeightsError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _weights_error_in(inner)
        if found is not None:
            return found
    return None


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
