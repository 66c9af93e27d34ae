"""Models at the edge: the judge protocol and the learned default judge, decision models (the
protocol, HTTP backends, a scripted model) and summarizers (the `Summarizer` protocol, `ChatSummarizer`)."""

from tracetrim._public import publish
from tracetrim.decision._agentscope import AgentScopeClassifierModel
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._env import from_env
from tracetrim.decision._history import (
    HistoryJudge,
    HistoryView,
    JudgedPair,
    Judgements,
    JudgeNote,
    PairJudgement,
)
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._learned import LearnedDecisionModel
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel
from tracetrim.decision._protocol import (
    BinaryQuestion,
    DecisionModel,
    DecisionModelError,
    DecisionResponse,
    Usage,
)
from tracetrim.decision._scripted import ScriptedCall, ScriptedDecisionModel
from tracetrim.decision._summarizer import ChatSummarizer, Summarizer, SummarizerError, Summary
from tracetrim.decision._systemone import SystemOneModel
from tracetrim.decision._weights import JudgeWeights, WeightsError

__all__ = [
    "AgentScopeClassifierModel",
    "BinaryQuestion",
    "ChatLogprobsModel",
    "ChatSummarizer",
    "DecisionModel",
    "DecisionModelError",
    "DecisionResponse",
    "HistoryJudge",
    "HistoryView",
    "JudgeNote",
    "JudgeWeights",
    "JudgedPair",
    "Judgements",
    "LearnedDecisionModel",
    "OpenAIDecisionsModel",
    "PairJudgement",
    "RetryPolicy",
    "ScriptedCall",
    "ScriptedDecisionModel",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "SystemOneModel",
    "Usage",
    "WeightsError",
    "from_env",
]

publish(__name__, globals())
