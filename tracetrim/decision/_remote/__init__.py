"""Remote decision models as judges: the bounded state, the batched questions, the checked answers.

`as_judge` turns any `DecisionModel` into the planner's one protocol (`HistoryJudge`) by wrapping it
in a `RemoteJudge`, which owns the observation (`_observation`), the batches (`_batches`) and the
asking (`_answers`); the planner itself never sees a state or a question.
"""

from tracetrim.decision._remote._judge import (
    ModelOrJudge,
    RemoteJudge,
    RemoteSettings,
    as_judge,
    check_model,
    model_name,
)

__all__ = ["ModelOrJudge", "RemoteJudge", "RemoteSettings", "as_judge", "check_model", "model_name"]
