"""Which tools a host already declares read-only: MCP's ``readOnlyHint`` and the frameworks' own flags.

A read-only tool's result can be fetched again by calling it again, so it is the natural first choice
for ``CompactorConfig.eligible_tools``; hosts declare it already, and this reads what they declared
rather than asking them to list the names twice. Only an explicit ``True`` counts: a missing hint
means "not known", and MCP itself says a tool is not read-only unless it says so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from tracetrim._validators import FieldValueError
from tracetrim.harness_adapter._strategy import CompactionStrategy

READ_ONLY_TAGS = frozenset({"read_only", "read-only", "readonly"})
"""LangChain tool ``tags`` that mark a tool read-only (LangChain has no flag of its own for it)."""

_HINTS = ("readOnlyHint", "read_only_hint")
"""MCP's annotation, by its wire name and by the Python SDK's field name."""


def _get(value: object, key: str) -> Any:
    """``value[key]`` for a mapping (a tool as JSON), else the attribute (a framework's tool object)."""
    if isinstance(value, Mapping):
        return value.get(key)
    return getattr(value, key, None)


def _hinted(annotations: object) -> bool:
    return annotations is not None and any(_get(annotations, key) is True for key in _HINTS)


def declares_read_only(tool: object) -> bool:
    """Whether ``tool`` says it only reads, in any of the ways the supported hosts say it:

    - an MCP ``Tool`` (``mcp.types.Tool`` or its JSON): ``annotations.readOnlyHint``; openai-agents keeps
      an MCP tool's annotations on its ``FunctionTool`` as ``_mcp_annotations``;
    - AgentScope ``ToolBase`` (its ``FunctionTool``, MCP tools, built-ins such as ``Read``):
      ``is_read_only`` (the static flag: ``check_read_only(input)`` judges one call, not the tool);
    - LangChain ``BaseTool`` / ``StructuredTool`` and pydantic-ai ``Tool`` / ``ToolDefinition``:
      ``metadata`` holding ``readOnlyHint`` / ``read_only_hint`` / ``read_only``, or MCP ``annotations``
      (pydantic-ai's MCP toolsets put them there); LangChain ``tags`` holding one of `READ_ONLY_TAGS`;
    - a pydantic-ai ``ToolsetTool``: its ``tool_def``.
    """
    if _get(tool, "is_read_only") is True:
        return True
    if _hinted(_get(tool, "annotations")) or _hinted(_get(tool, "_mcp_annotations")):
        return True
    metadata = _get(tool, "metadata")
    if isinstance(metadata, Mapping) and (
        _hinted(metadata) or metadata.get("read_only") is True or _hinted(metadata.get("annotations"))
    ):
        return True
    tags = _get(tool, "tags")
    if isinstance(tags, list | tuple | set | frozenset) and any(
        isinstance(t, str) and t in READ_ONLY_TAGS for t in tags
    ):
        return True
    definition = _get(tool, "tool_def")
    return definition is not None and definition is not tool and declares_read_only(definition)


def read_only_tools(tools: Iterable[object]) -> frozenset[str]:
    """The names of the tools in ``tools`` that declare themselves read-only (`declares_read_only`).

    ``tools`` may mix MCP tools (objects or JSON), AgentScope, LangChain, pydantic-ai and openai-agents
    tool objects. Give the result to ``CompactorConfig(eligible_tools=...)``, or let an adapter do it
    on each call with ``eligible_read_only=True``.
    """
    names: set[str] = set()
    for tool in tools:
        name = _get(tool, "name") or _get(_get(tool, "tool_def"), "name")  # a ToolsetTool: its definition's
        if isinstance(name, str) and name and declares_read_only(tool):
            names.add(name)
    return frozenset(names)


def check_widenable(strategy: CompactionStrategy) -> None:
    """Refuse ``eligible_read_only`` for a strategy that has no eligible tools to add to, rather than
    let the flag do nothing."""
    if getattr(strategy, "with_eligible_tools", None) is None:
        raise FieldValueError(
            f"needs a strategy with eligible tools (a Compactor): {type(strategy).__name__} has no "
            "with_eligible_tools(names)",
            field="eligible_read_only",
        )


def with_eligible(strategy: CompactionStrategy, names: Collection[str]) -> CompactionStrategy:
    """``strategy`` with ``names`` opted in as well (its ``with_eligible_tools``: for a `Compactor`, a
    copy whose config adds them), or ``strategy`` itself when there is nothing to add."""
    if not names:
        return strategy
    widened: CompactionStrategy = strategy.with_eligible_tools(names)  # type: ignore[attr-defined]
    return widened
