"""Decision models: the protocol, the embedded lexical default, HTTP backends and a scripted model."""

from tracetrim.decision._lexical import LexicalDecisionModel
from tracetrim.decision._protocol import (
    BinaryQuestion,
    DecisionModel,
    DecisionModelError,
    DecisionResponse,
    Usage,
)
from tracetrim.decision._scripted import ScriptedCall, ScriptedDecisionModel

__all__ = [
    "BinaryQuestion",
    "DecisionModel",
    "DecisionModelError",
    "DecisionResponse",
    "LexicalDecisionModel",
    "ScriptedCall",
    "ScriptedDecisionModel",
    "Usage",
]
