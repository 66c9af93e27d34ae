"""`RecallTool`: an agent tool that fetches an archived tool result by call id, so markers are actionable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tracetrim._followup import Followup, Reporter
from tracetrim._json import canonical_json
from tracetrim._logging import logger as _log
from tracetrim._marker import RECALL_TOOL_NAME, is_shortened
from tracetrim._scope import Scope
from tracetrim._snapshot import text_of_output
from tracetrim._validators import FieldTypeError, FieldValueError
from tracetrim.archive._calls import find_call
from tracetrim.archive._errors import ArchiveError, ArchiveNotFoundError, CallNotFoundError
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
    all text comes back as its canonical JSON. Calling the instance raises `CallNotFoundError` when
    nothing is archived under that id and `InvalidReferenceError` for a bad reference (for code that
    wants to tell); `answer` and `function`, what an agent is given, never raise for those: they return
    one clear sentence the model can act on. Register `function` where a framework wants a plain
    function (all four harness examples do). ``reporter`` (e.g. `tracetrim.JsonLinesObserver.report`)
    gets a `tracetrim.Followup` for each result recalled: the evidence ``tracetrim audit`` measures
    losses with. Its errors are logged and swallowed.
    """

    name = RECALL_TOOL_NAME
    description = RECALL_TOOL_DESCRIPTION
    json_schema = RECALL_TOOL_SCHEMA

    def __init__(
        self, archive: Archive, scope: Scope, *, max_snapshots: int = 100, reporter: Reporter | None = None
    ) -> None:
        if max_snapshots < 1:
            raise FieldValueError(f"max_snapshots must be at least 1, got {max_snapshots!r}")
        if reporter is not None and not callable(reporter):
            raise FieldTypeError(f"reporter must be a callable taking a tracetrim.Followup, got {reporter!r}")
        self.archive = archive
        self.scope = scope
        self.max_snapshots = max_snapshots
        self.reporter = reporter

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
                self._report(call_id, ref)
                return _output_text(blocks.result.get("output"))
        if not refs:
            where = scope_label(self.scope)
            raise CallNotFoundError(
                f"no archived result for tool call {call_id!r}: nothing is archived in {where}"
            )
        where = f"snapshot {refs[0]}" if archive_ref else f"the {len(refs)} newest snapshots"
        raise CallNotFoundError(
            f"no archived result for tool call {call_id!r} in {where} of {scope_label(self.scope)}"
        )

    async def answer(self, call_id: str, archive_ref: str | None = None) -> str:
        """What the model gets: the original result text, or a sentence saying why there is none.

        Nothing archived under ``call_id``, a malformed or unknown reference and an archive that cannot
        be read all come back as a ``[tracetrim: ...]`` message instead of an exception, so a wrong id
        from the model never ends the agent's run.
        """
        try:
            return await self(call_id, archive_ref)
        except ArchiveNotFoundError as exc:
            return (
                f"[tracetrim: nothing to recall: {exc}. Only results that were shortened or removed to "
                "save space are archived; a result still shown in full above needs no recall. Check the "
                "call id in the marker, or run the tool again.]"
            )
        except ArchiveError as exc:
            return f"[tracetrim: cannot recall tool call {call_id!r}: {exc}]"

    def _report(self, call_id: str, ref: str) -> None:
        if self.reporter is None:
            return
        try:
            self.reporter(Followup.recalled(call_id, self.scope, ref))
        except Exception:  # reporting must never cost the agent its recalled result
            _log.warning("tracetrim.recall_report_failed", call_id=call_id, exc_info=True)

    @property
    def function(self) -> Callable[[str, str | None], Awaitable[str]]:
        """This tool as a plain async function with a name, docstring and annotations (it never raises
        for a missing or wrong id: see `answer`)."""
        tool = self

        async def recall_tool_result(call_id: str, archive_ref: str | None = None) -> str:
            return await tool.answer(call_id, archive_ref)

        params = RECALL_TOOL_SCHEMA["properties"]
        recall_tool_result.__doc__ = (
            f"{RECALL_TOOL_DESCRIPTION}\n\nArgs:\n    call_id: {params['call_id']['description']}"
            f"\n    archive_ref: {params['archive_ref']['description']}\n"
        )
        return recall_tool_result
