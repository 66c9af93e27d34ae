"""`RemoteJudge`: a remote `DecisionModel` as the planner's one judge protocol, and `as_judge`."""

from __future__ import annotations

from typing import Protocol, TypeAlias

from tracetrim._tokens import TokenCounter, estimate_tokens
from tracetrim._validators import FieldTypeError
from tracetrim.decision._goal import default_next_action
from tracetrim.decision._history import HistoryJudge, HistoryView, Judgements, PairJudgement
from tracetrim.decision._protocol import DecisionModel
from tracetrim.decision._remote._answers import ask
from tracetrim.decision._remote._batches import make_batches
from tracetrim.decision._remote._observation import observe

ModelOrJudge: TypeAlias = DecisionModel | HistoryJudge
"""What a `Compactor` takes as its model: a judge of whole histories, or a remote-style model."""


class RemoteSettings(Protocol):
    """The settings only a remote model needs (`tracetrim.CompactorConfig` has them all)."""

    @property
    def max_state_tokens(self) -> int: ...
    @property
    def max_request_tokens(self) -> int: ...
    @property
    def max_questions(self) -> int: ...
    @property
    def max_concurrency(self) -> int: ...
    @property
    def preserve_recent_messages(self) -> int: ...
    @property
    def result_preview_chars(self) -> int: ...
    @property
    def token_counter(self) -> TokenCounter | None: ...


def model_name(model: object) -> str:
    """A model's own short name (its ``name`` or ``model``), else its class name."""
    name = getattr(model, "name", None) or getattr(model, "model", None)
    return name if isinstance(name, str) and name else type(model).__name__


class RemoteJudge:
    """A `DecisionModel` judging whole histories: it fits a bounded state, asks in batches, checks.

    Per plan it builds the observation (`observe`: the goal, the next action, the conversation and
    one record per tool call, fitted under ``max_state_tokens``), packs two questions per candidate
    into batches (`make_batches`, under ``max_questions`` and ``max_request_tokens``), asks them at
    most ``max_concurrency`` at once (`ask`) and accepts only a complete set of valid answers. Each
    failure is a `JudgeError` whose ``reason`` the plan's outcome reports; the deadline is the
    planner's, around the whole call.
    """

    def __init__(self, model: DecisionModel, settings: RemoteSettings) -> None:
        self.model = model
        self.settings = settings

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return model_name(self.model)

    async def judge(self, view: HistoryView) -> Judgements:
        """Both answers for every pair of ``view``, with what asking cost and the state's fit."""
        settings = self.settings
        count = settings.token_counter or estimate_tokens
        observation = observe(
            view.messages,
            view.tool_pairs,
            goal=view.goal,
            next_action=view.host_next_action or default_next_action(view.messages),
            preserve_recent=settings.preserve_recent_messages,
            preview_chars=settings.result_preview_chars,
            max_tokens=settings.max_state_tokens,
            count_tokens=count,
        )
        batches = make_batches(
            view.pairs,
            state_tokens=observation.tokens,
            max_questions=settings.max_questions,
            max_request_tokens=settings.max_request_tokens,
            count_tokens=count,
        )
        answers = await ask(self.model, observation.state, batches, max_concurrency=settings.max_concurrency)
        found = answers.probabilities
        judged = {
            pair.key: PairJudgement(
                keep_call=found[f"call_{pair.key}"], keep_result=found[f"result_{pair.key}"]
            )
            for pair in view.pairs
        }
        return Judgements(
            judged,
            requests=answers.requests,
            retries=answers.retries,
            usage=answers.usage,
            state_tokens=observation.tokens,
            stage=observation.stage,
        )

    def __repr__(self) -> str:
        return f"RemoteJudge({self.model!r})"


def check_model(model: object) -> None:
    """Raise `FieldTypeError` unless ``model`` is something `as_judge` takes."""
    if not (isinstance(model, HistoryJudge) or callable(model)):
        raise FieldTypeError(
            "model must be a DecisionModel (an async callable taking state and questions) "
            "or a HistoryJudge (with judge(view))"
        )


def as_judge(model: ModelOrJudge, settings: RemoteSettings) -> HistoryJudge:
    """``model`` as the planner judges with: a `HistoryJudge` as it is, a `DecisionModel` wrapped
    in a `RemoteJudge` with ``settings``. The one place a model's kind picks how it is asked."""
    if isinstance(model, HistoryJudge):
        return model
    check_model(model)
    return RemoteJudge(model, settings)
