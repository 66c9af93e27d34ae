"""The judge's compiled ``need``: the same float as walking the trees, bit for bit."""

from __future__ import annotations

import pickle
import random

import pytest

from tracetrim.decision._learned import default_weights
from tracetrim.decision._weights import JudgeWeights, Tree, compile_need, need_source


def _vectors(count: int, size: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    picks = (lambda: 0.0, lambda: 1.0, lambda: rng.random() * 6, lambda: rng.gauss(0, 4), lambda: -0.0)
    return [[rng.choice(picks)() for _ in range(size)] for _ in range(count)]


def test_the_shipped_judge_compiles_to_the_same_floats() -> None:
    weights = default_weights()
    need = weights.need_function()
    assert need is weights.need_function()  # built once per weights
    for x in _vectors(3000, len(weights.features), seed=1):
        assert need(x).hex() == weights.need(x).hex()
    # A vector sitting exactly on every threshold goes left, as `Tree.score` sends it.
    for tree in weights.trees[:20]:
        for node, feature in enumerate(tree.feature):
            if feature >= 0:
                x = [0.0] * len(weights.features)
                x[feature] = tree.threshold[node]
                assert need(x).hex() == weights.need(x).hex()


def test_a_logistic_part_and_trees_add_up_in_the_same_order() -> None:
    trees = [
        Tree(
            feature=[1, -1, 0, -1, -1],
            threshold=[0.5, 0, -1.25, 0, 0],
            left=[1, 0, 3, 0, 0],
            right=[2, 0, 4, 0, 0],
            value=[0, 0.125, 0, -0.3, 1.7e-3],
        ),
        Tree(feature=[-1], threshold=[0.0], left=[0], right=[0], value=[0.1]),
    ]
    weights = JudgeWeights(
        features=("a", "b", "c"),
        mean=(0.1, -2.0, 3.0),
        scale=(1.5, 0.3, 7.0),
        coef=(0.7, -1.1, 1e-9),
        intercept=0.2,
        trees=trees,
    )
    need = compile_need(weights)
    for x in _vectors(2000, 3, seed=2):
        assert need(x).hex() == weights.need(x).hex()
    with pytest.raises(ValueError):  # a vector of the wrong length is refused, as `need` refuses it
        need([0.0, 1.0])
    assert "x2" in need_source(weights)


def test_zero_coefficients_are_left_out_and_change_no_float() -> None:
    # A trees-only fit has every coefficient zero; each would add a signed zero to z.
    trees = [
        Tree(
            feature=[0, -1, -1],
            threshold=[0.5, 0, 0],
            left=[1, 0, 0],
            right=[2, 0, 0],
            value=[0, -0.25, 0.75],
        )
    ]
    for intercept in (0.0, -0.0, 0.3):
        weights = JudgeWeights(
            features=("a", "b", "c"),
            mean=(0.1, -2.0, 3.0),
            scale=(1.5, 0.3, 7.0),
            coef=(0.0, -1.1, 0.0),
            intercept=intercept,
            trees=trees,
        )
        source = need_source(weights)
        assert "(x0 -" not in source and "(x2 -" not in source and "(x1 -" in source
        need = compile_need(weights)
        for x in _vectors(2000, 3, seed=3):
            assert need(x).hex() == weights.need(x).hex()


def test_a_tree_too_deep_to_compile_falls_back_to_walking_it() -> None:
    depth = 400  # far deeper than Python's parser nests; no fit makes such a tree
    feature = [0] * depth + [-1, -1]
    left = [n + 1 for n in range(depth)] + [0, 0]
    right = [depth + 1] * depth + [0, 0]
    value = [0.0] * depth + [0.25, -0.5]
    tree = Tree(
        feature=feature,
        threshold=[float(-n) for n in range(depth)] + [0, 0],
        left=left,
        right=right,
        value=value,
    )
    weights = JudgeWeights(
        features=("a",), mean=(0.0,), scale=(1.0,), coef=(0.0,), intercept=0.0, trees=[tree]
    )
    need = weights.need_function()
    assert need == weights.need  # the node walk itself
    for x in ([-1000.0], [0.5], [-3.5]):
        assert need(x) == weights.need(x)


def test_weights_stay_plain_data_once_compiled() -> None:
    weights = default_weights()
    weights.need_function()
    copied = pickle.loads(pickle.dumps(weights))  # a function made by exec could not be pickled
    assert copied == weights
    assert copied.need_function() is not weights.need_function()
    x = [0.5] * len(weights.features)
    assert copied.need_function()(x) == weights.need(x)
