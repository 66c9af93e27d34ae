"""Plugging tracetrim into agent frameworks: the `CompactionStrategy` protocol and one adapter each.

The adapters live in public submodules that import their framework, so they load only when used:
``tracetrim.harness_adapter.agentscope`` (`TracetrimMiddleware`), ``.langchain``
(`TracetrimAgentMiddleware`), ``.pydantic_ai`` (`TracetrimHistoryProcessor`, `tracetrim_capability`),
``.openai_agents`` (`TracetrimInputFilter`, `CompactingSession`), ``.adk`` (`TracetrimPlugin`),
``.inspect_ai`` (`TracetrimCompaction`) and ``.agent_framework`` (`TracetrimCompactionStrategy`,
Microsoft Agent Framework). The same names are reachable here lazily, e.g.
``tracetrim.harness_adapter.TracetrimMiddleware`` imports AgentScope on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

from tracetrim._public import publish
from tracetrim.harness_adapter._markers import restore_markers
from tracetrim.harness_adapter._read_only import declares_read_only, read_only_tools
from tracetrim.harness_adapter._run import AdapterResult, compact_history
from tracetrim.harness_adapter._strategy import CompactionStrategy

_LAZY = {
    "TracetrimMiddleware": "agentscope",
    "TracetrimAgentMiddleware": "langchain",
    "TracetrimHistoryProcessor": "pydantic_ai",
    "tracetrim_capability": "pydantic_ai",
    "TracetrimInputFilter": "openai_agents",
    "CompactingSession": "openai_agents",
    "TracetrimPlugin": "adk",
    "TracetrimCompaction": "inspect_ai",
    "TracetrimCompactionStrategy": "agent_framework",
}

__all__ = [
    "AdapterResult",
    "CompactionStrategy",
    "compact_history",
    "declares_read_only",
    "read_only_tools",
    "restore_markers",
    *_LAZY,
]

publish(__name__, globals())


def __getattr__(name: str) -> Any:
    """Import an adapter's framework only when that adapter is first used."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
