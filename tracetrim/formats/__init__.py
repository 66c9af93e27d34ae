"""Lossless converters between the neutral snapshot and other message formats."""

from tracetrim._public import publish
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._langchain import from_langchain, to_langchain
from tracetrim.formats._langchain_json import from_langchain_json, to_langchain_json
from tracetrim.formats._mini_swe_agent import from_mini_swe_agent, load_mini_swe_agent_traj, to_mini_swe_agent
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses, to_openai_responses
from tracetrim.formats._pydantic_ai import from_pydantic_ai, to_pydantic_ai
from tracetrim.formats._readers import MESSAGES_KEY, READERS
from tracetrim.formats._swe_agent import from_swe_agent_history, load_swe_agent_traj, to_swe_agent_history
from tracetrim.formats._table import (
    HISTORY_FORMATS,
    FormatError,
    HistoryFormat,
    TrajectoryListError,
    detect_format,
    detect_messages,
    history_format,
    trajectory_list,
)

__all__ = [
    "HISTORY_FORMATS",
    "MESSAGES_KEY",
    "READERS",
    "FormatError",
    "HistoryFormat",
    "TrajectoryListError",
    "detect_format",
    "detect_messages",
    "from_anthropic",
    "from_langchain",
    "from_langchain_json",
    "from_mini_swe_agent",
    "from_openai_chat",
    "from_openai_responses",
    "from_pydantic_ai",
    "from_swe_agent_history",
    "history_format",
    "load_mini_swe_agent_traj",
    "load_swe_agent_traj",
    "to_anthropic",
    "to_langchain",
    "to_langchain_json",
    "to_mini_swe_agent",
    "to_openai_chat",
    "to_openai_responses",
    "to_pydantic_ai",
    "to_swe_agent_history",
    "trajectory_list",
]

publish(__name__, globals())
