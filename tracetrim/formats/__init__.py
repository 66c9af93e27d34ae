"""Lossless converters between the neutral snapshot and other message formats."""

from tracetrim._public import publish
from tracetrim.formats._adk import from_adk, to_adk
from tracetrim.formats._agent_framework import from_agent_framework, to_agent_framework
from tracetrim.formats._ai_sdk import from_ai_sdk, to_ai_sdk
from tracetrim.formats._anthropic import from_anthropic, to_anthropic
from tracetrim.formats._atif import from_atif, to_atif
from tracetrim.formats._bedrock import from_bedrock, to_bedrock
from tracetrim.formats._claude_code import from_claude_code, to_claude_code
from tracetrim.formats._codex import from_codex, to_codex
from tracetrim.formats._file import FileStyle, dump_jsonl, parse_history_text
from tracetrim.formats._gemini import from_gemini, to_gemini
from tracetrim.formats._gemini_cli import from_gemini_cli, to_gemini_cli
from tracetrim.formats._inspect import from_inspect, to_inspect
from tracetrim.formats._langchain import from_langchain, to_langchain
from tracetrim.formats._langchain_json import from_langchain_json, to_langchain_json
from tracetrim.formats._mini_swe_agent import from_mini_swe_agent, load_mini_swe_agent_traj, to_mini_swe_agent
from tracetrim.formats._ollama import from_ollama, to_ollama
from tracetrim.formats._openai_chat import from_openai_chat, to_openai_chat
from tracetrim.formats._openai_responses import from_openai_responses, to_openai_responses
from tracetrim.formats._opencode import from_opencode, to_opencode
from tracetrim.formats._openhands import from_openhands, to_openhands
from tracetrim.formats._openhands_v0 import from_openhands_v0, to_openhands_v0
from tracetrim.formats._pi import from_pi, to_pi
from tracetrim.formats._pydantic_ai import (
    from_pydantic_ai,
    from_pydantic_ai_json,
    to_pydantic_ai,
    to_pydantic_ai_json,
)
from tracetrim.formats._readers import MESSAGES_KEY, READERS
from tracetrim.formats._shape import JsonLines
from tracetrim.formats._swe_agent import from_swe_agent_history, load_swe_agent_traj, to_swe_agent_history
from tracetrim.formats._table import (
    HISTORY_FORMATS,
    FormatError,
    HistoryFormat,
    TrajectoryListError,
    detect_format,
    detect_messages,
    history_format,
    trajectory_items,
    trajectory_list,
)
from tracetrim.formats._tau2 import from_tau2, to_tau2

__all__ = [
    "HISTORY_FORMATS",
    "MESSAGES_KEY",
    "READERS",
    "FileStyle",
    "FormatError",
    "HistoryFormat",
    "JsonLines",
    "TrajectoryListError",
    "detect_format",
    "detect_messages",
    "dump_jsonl",
    "from_adk",
    "from_agent_framework",
    "from_ai_sdk",
    "from_anthropic",
    "from_atif",
    "from_bedrock",
    "from_claude_code",
    "from_codex",
    "from_gemini",
    "from_gemini_cli",
    "from_inspect",
    "from_langchain",
    "from_langchain_json",
    "from_mini_swe_agent",
    "from_ollama",
    "from_openai_chat",
    "from_openai_responses",
    "from_opencode",
    "from_openhands",
    "from_openhands_v0",
    "from_pi",
    "from_pydantic_ai",
    "from_pydantic_ai_json",
    "from_swe_agent_history",
    "from_tau2",
    "history_format",
    "load_mini_swe_agent_traj",
    "load_swe_agent_traj",
    "parse_history_text",
    "to_adk",
    "to_agent_framework",
    "to_ai_sdk",
    "to_anthropic",
    "to_atif",
    "to_bedrock",
    "to_claude_code",
    "to_codex",
    "to_gemini",
    "to_gemini_cli",
    "to_inspect",
    "to_langchain",
    "to_langchain_json",
    "to_mini_swe_agent",
    "to_ollama",
    "to_openai_chat",
    "to_openai_responses",
    "to_opencode",
    "to_openhands",
    "to_openhands_v0",
    "to_pi",
    "to_pydantic_ai",
    "to_pydantic_ai_json",
    "to_swe_agent_history",
    "to_tau2",
    "trajectory_items",
    "trajectory_list",
]

publish(__name__, globals())
