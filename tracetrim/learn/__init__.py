"""Learning the judge: labels from what agents did, features, fitting, held-out frontiers."""

from tracetrim._public import publish
from tracetrim.learn._crossval import (
    MASKING,
    FrontierRow,
    format_frontier,
    hashed_folds,
    held_out_models,
    held_out_point,
    levels_of,
    masking_rows,
    oracle_rows,
    ranked_folds,
)
from tracetrim.learn._examples import (
    CUT_FRACTIONS,
    Cut,
    Examples,
    cut_points,
    cuts,
    examples,
    group_of,
    joined,
    make_cut,
)
from tracetrim.learn._fit import balanced_weights, fit_logistic, fit_weights, fold_of
from tracetrim.learn._frontier import (
    Point,
    ShorteningScore,
    evaluate,
    keep_last,
    label_oracle,
    score_cut,
    shortening_score,
    tracetrim,
)
from tracetrim.learn._labels import Evidence, credited, evidence, findable, history_text
from tracetrim.learn._sources import (
    Trajectory,
    from_file,
    mini_swe_agent,
    shared_datasets,
    swe_agent,
    tau_bench,
)

__all__ = [
    "CUT_FRACTIONS",
    "MASKING",
    "Cut",
    "Evidence",
    "Examples",
    "FrontierRow",
    "Point",
    "ShorteningScore",
    "Trajectory",
    "balanced_weights",
    "credited",
    "cut_points",
    "cuts",
    "evaluate",
    "evidence",
    "examples",
    "findable",
    "fit_logistic",
    "fit_weights",
    "fold_of",
    "format_frontier",
    "from_file",
    "group_of",
    "hashed_folds",
    "held_out_models",
    "held_out_point",
    "history_text",
    "joined",
    "keep_last",
    "label_oracle",
    "levels_of",
    "make_cut",
    "masking_rows",
    "mini_swe_agent",
    "oracle_rows",
    "ranked_folds",
    "score_cut",
    "shared_datasets",
    "shortening_score",
    "swe_agent",
    "tau_bench",
    "tracetrim",
]

publish(__name__, globals())
