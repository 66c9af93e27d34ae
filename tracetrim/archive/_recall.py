"""`RecallTool`: an agent tool that fetches an archived tool result by call id, so markers are actionable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tracetrim._json import canonical_json
from tracetrim._marker import RECALL_TOOL_NAME, is_shortened
from tracetrim._scope import Scope
from tracetrim._snapshot import text_of_output
from tracetrim.archive._calls import find_call
from tracetrim.archive._errors import CallNotFoundError
from tracetrim.archive._protocol import Archive, check_ref, scope_label

RECALL_TOOL_DESCRIPTION = (
    "Return the full, original result of an earlier tool call whose result was shortened or removed "
    "from the conversation to save space. Use the call id (and the archive reference, if the marker "
    "gives one) instead of running the tool again."
)
RECALL_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "call_id": {"type": "string", "description": "The id of the tool call whose result you need."},
        "archive_ref": {
            "type": ["string", "null"],
            "description": "The 64-character archive reference named in the marker, if any.",
        },
    },
    "required": ["call_id"],
    "additionalProperties": False,
}


def _output_text(output: Any) -> str:
    text = text_of_output(output) if isinstance(output, (str, list)) else None
    return text if text is not None else canonical_json(output)


class RecallTool:
    """``await tool(call_id, archive_ref=None) -> str``: the original result text for one scope.

    Without ``archive_ref`` the scope's snapshots are searched newest first, skipping copies that
    were themselves already shortened (``max_snapshots`` bounds the search). A result that is not
    all text comes back as its canonical JSON. Not found raises `CallNotFoundError`, a bad
    reference `InvalidReferenceError`; both have one clear message to show the agent. Register
    the instance itself, or `function` where a framework wants a plain function.
    """

    name = RECALL_TOOL_NAME
    description = RECALL_TOOL_DESCRIPTION
    json_schema = RECALL_TOOL_SCHEMA

    def __init__(self, archive: Archive, scope: Scope, *, max_snapshots: int = 100) -> None:
        if max_snapshots < 1:
            raise ValueError(f"max_snapshots must be at least 1, got {max_snapshots!r}")
        self.archive = archive
        self.scope = scope
        self.max_snapshots = max_snapshots

    def __repr__(self) -> str:
        return f"RecallTool({self.archive!r}, {scope_label(self.scope)})"

    async def __call__(self, call_id: str, archive_ref: str | None = None) -> str:
        """Return the original result text of tool call ``call_id`` from the archive."""
        if not isinstance(call_id, str) or not call_id:
            raise CallNotFoundError("recall needs a non-empty call id")
        if archive_ref:
            refs = [check_ref(archive_ref)]
        else:
            entries = await self.archive.list(self.scope)
            refs = [entry.ref for entry in reversed(entries)][: self.max_snapshots]
        for ref in refs:
            blocks = find_call(await self.archive.restore(self.scope, ref), call_id)
            if blocks is not None and blocks.result is not None and not is_shortened(blocks.result):
                return _output_text(blocks.result.get("output"))
        where = f"snapshot {refs[0]}" if archive_ref else f"the {len(refs)} newest snapshots"
        raise CallNotFoundError(
            f"no archived result for tool call {call_id!r} in {where} of {scope_label(self.scope)}"
        )

    @property
    def function(self) -> Callable[[str, str | None], Awaitable[str]]:
        """This tool as a plain async function with a name, docstring and annotations."""
        tool = self

        async def recall_tool_result(call_id: str, archive_ref: str | None = None) -> str:
            return await tool(call_id, archive_ref)

        params = RECALL_TOOL_SCHEMA["properties"]
        recall_tool_result.__doc__ = (
            f"{RECALL_TOOL_DESCRIPTION}\n\nArgs:\n    call_id: {params['call_id']['description']}"
            f"\n    archive_ref: {params['archive_ref']['description']}\n"
        )
        return recall_tool_result
