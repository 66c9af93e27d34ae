"""`tracetrim mcp`: the recall tool over MCP (stdio), so an agent that goes on with a compacted session
(Claude Code, Codex, Gemini CLI, Qwen Code, OpenCode) can fetch what a tombstone or a shortened result
names instead of running the tool again (needs the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from tracetrim._scope import Scope
from tracetrim.archive import Archive, RecallTool
from tracetrim.cli._archive_args import add_archive_arguments, with_archive
from tracetrim.cli._errors import CliError

_INSTRUCTIONS = (
    "Earlier tool results in this conversation may have been shortened or removed to save context; a "
    "[tracetrim: ...] note names each one's call id. Call this server's recall_tool_result tool (some "
    "agents list it as mcp__tracetrim__recall_tool_result) with that id to get the full original result "
    "instead of running the tool again."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` sub-command."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve recall_tool_result over MCP (stdio) for one archive scope, for agents that resume "
        "compacted sessions",
        description="Serve the recall tool to an agent over MCP on stdin/stdout (needs: pip install "
        "'tracetrim[mcp]'). Register it with the agent as a stdio server, for example "
        "`claude mcp add tracetrim -- tracetrim mcp --archive DIR --user U --agent A --session S`. Each "
        "call returns the original result archived for a call id, newest snapshot first.",
    )
    add_archive_arguments(parser, required=True)
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="append one JSON line per recall (a Followup) to FILE, where `tracetrim audit` counts losses",
    )
    parser.set_defaults(handler=_run)


def _server(tool: RecallTool) -> Any:
    """An MCP server offering ``tool`` (`RecallTool.answer`: a wrong id is a sentence, never an error)."""
    try:
        from mcp.server import MCPServer
    except ImportError:
        raise CliError("tracetrim mcp needs the MCP SDK: pip install 'tracetrim[mcp]'") from None
    server = MCPServer("tracetrim", instructions=_INSTRUCTIONS)
    # plain text back, as the tool result it stands for (no {"result": ...} wrapper)
    server.add_tool(tool.function, name=tool.name, description=tool.description, structured_output=False)
    return server


def _run(args: argparse.Namespace) -> int:
    reporter = None
    if args.records:
        import tracetrim

        path = Path(args.records)
        if path.parent and not path.parent.is_dir():
            raise CliError(f"--records: folder {str(path.parent)!r} does not exist")
        reporter = tracetrim.JsonLinesObserver(path).report

    async def serve(archive: Archive, scope: Scope) -> int:
        server = _server(RecallTool(archive, scope, reporter=reporter))
        await server.run_stdio_async()
        return 0

    code: int = asyncio.run(with_archive(args, serve))
    return code
