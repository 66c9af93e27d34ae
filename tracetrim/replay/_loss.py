"""Loss accounting: was what a model call used still in its prompt, and if not, does anything point to it?"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from tracetrim._marker import SUMMARY_ACTION, mark_of, parse_shortened_note, tombstone_call_id
from tracetrim._snapshot import Message, text_of_output


class Missing(enum.StrEnum):
    """What a prompt offers for an earlier result whose used strings it no longer holds."""

    RECALLABLE = "recallable"
    """A tracetrim marker names the call (a shortened-result note, a removed-result stub, a tombstone,
    a summary's list of call ids): the archived original is one recall away."""
    RERUN = "rerun"
    """The call is still there but its result was cleared or trimmed by a placeholder: the agent can
    see what it ran and run it again (if the tool is repeatable and nothing changed since)."""
    SILENT = "silent"
    """Nothing in the prompt points to it: the agent cannot know it is gone."""


def missing_kind(prompt: Sequence[Message], call_id: str) -> Missing:
    """How the prompt points to call ``call_id`` whose result's used strings it lacks."""
    visible = False
    for message in prompt:
        mark = mark_of(message)
        if mark is not None and mark.get("action") == SUMMARY_ACTION and call_id in mark.get("call_ids", ()):
            return Missing.RECALLABLE
        for block in message["content"]:
            kind = block.get("type")
            if kind == "tool_result" and str(block.get("id")) == call_id:
                text = text_of_output(block["output"])
                note = parse_shortened_note(text) if text is not None else None
                if note is not None and note.call_id == call_id:
                    return Missing.RECALLABLE
            elif kind == "text" and tombstone_call_id(block) == call_id:
                return Missing.RECALLABLE
            elif kind == "tool_call" and str(block.get("id")) == call_id:
                visible = True
    return Missing.RERUN if visible else Missing.SILENT
