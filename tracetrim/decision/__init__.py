"""Decision models: the protocol, the embedded lexical default, HTTP backends and a scripted model."""

from tracetrim.decision._agentscope import AgentScopeClassifierModel
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._env import from_env
from tracetrim.decision._http import RetryPolicy
from tracetrim.decision._lexical import LexicalDecisionModel
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel
from tracetrim.decision._protocol import (
    BinaryQuestion,
    DecisionModel,
    DecisionModelError,
    DecisionResponse,
    Usage,
)
from tracetrim.decision._scripted import ScriptedCall, ScriptedDecisionModel
from tracetrim.decision._systemone import SystemOneModel

__all__ = [
    "AgentScopeClassifierModel",
    "BinaryQuestion",
    "ChatLogprobsModel",
    "DecisionModel",
    "DecisionModelError",
    "DecisionResponse",
    "LexicalDecisionModel",
    "OpenAIDecisionsModel",
    "RetryPolicy",
    "ScriptedCall",
    "ScriptedDecisionModel",
    "SystemOneModel",
    "Usage",
    "from_env",
]
