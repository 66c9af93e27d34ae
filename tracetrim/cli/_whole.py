"""``--emit history``: the compacted history written back as the whole file it came from, in its shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracetrim.cli._errors import CliError
from tracetrim.cli._formats import from_neutral
from tracetrim.cli._input import HistoryFile
from tracetrim.formats import HISTORY_FORMATS, JsonLines
from tracetrim.formats._common import ValidatedHistory


def whole_file(document: Mapping[str, Any], history: HistoryFile) -> Any:
    """The file ``history`` was read from, holding the contract's ``messages`` of ``document`` (a
    `result_document`: neutral ``messages`` and ``changed``).

    Unless ``changed`` that is the file's own value. Otherwise every key of the file stays, in its
    order and with its value (``info``, ``trajectory_format``, ``model``, ``tools``, ...); only the
    message list, and a field the format's writer gives back (Anthropic's ``system``), are replaced,
    where the format keeps them (an Agent Framework session's ``state["in_memory"]``).
    A field the writer needs and the file lacked is added rather than lost, last.
    """
    original = history.document
    if not document.get("changed"):
        return original
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise CliError(f"{history.source}: the result holds no message list to write back")
    # adopted: the plan's history, validated by its runner before it was adopted
    written = from_neutral(ValidatedHistory(messages), history.format, history.source)
    if not isinstance(original, dict):
        extra = sorted(set(written) - {"messages"})
        if extra:
            raise CliError(
                f"{history.source}: the compacted history needs {', '.join(extra)} beside its messages, "
                "which the file's bare list cannot hold; use --emit result"
            )
        rebuilt: list[Any] = written["messages"]
        return JsonLines(rebuilt) if isinstance(original, JsonLines) else rebuilt
    shape = HISTORY_FORMATS[history.format]
    key = shape.messages_key
    holder = shape.holder(original)
    out: dict[str, Any] = {}
    for name, value in holder.items():
        if name == key:
            out[name] = written["messages"]
        elif name == "messages":  # the writer's "messages" is this format's list under `key`
            out[name] = value
        else:
            out[name] = written.get(name, value)
    for name, value in written.items():
        if name != "messages" and name not in out:
            out[name] = value
    return shape.with_holder(original, out)


def render(value: Any, history: HistoryFile) -> bytes:
    """The file to write for ``value`` (`whole_file`): the input's own bytes when that is the input
    unchanged, else ``value`` written the way the input was (`FileStyle`: indent, separators, escapes,
    line ends, byte-order mark; JSONL for a file that was JSONL)."""
    if value is history.document and history.raw is not None:
        return history.raw
    return history.style.dump(value)


def default_name(history: HistoryFile) -> str:
    """The name the whole file gets in ``--output-dir``: the input's own name (stdin: ``stdin.json``, or
    ``stdin.jsonl`` for JSONL)."""
    name = history.file_name
    if history.source != "stdin" and not history.source.startswith("stdin["):
        return name
    return name + (".jsonl" if isinstance(history.document, JsonLines) else ".json")
