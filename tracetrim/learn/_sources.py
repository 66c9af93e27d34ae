"""Trajectories to learn from: the shared datasets, and a team's own files, as neutral histories."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from tracetrim._json import strict_loads
from tracetrim._snapshot import Message
from tracetrim._validators import FieldValueError
from tracetrim.compactor._options import request_keys
from tracetrim.formats._common import sent_by_the_host

READ_VERBS = frozenset(
    {"get", "list", "search", "find", "read", "fetch", "lookup", "query", "show", "view", "describe"}
)
"""First words of the tool names that only read (tau-bench names its tools ``verb_object``)."""

PURE_TOOLS = frozenset({"calculate", "think"})
"""tau-bench's tools that change nothing and read nothing: arithmetic and a scratchpad."""


def read_only_tools(names: Iterable[str]) -> frozenset[str]:
    """The tools of ``names`` a host would opt in: those whose first word is a read verb, and the pure ones.

    On tau-bench this is exactly the airline domain's read tools (``get_user_details``,
    ``search_direct_flight``, ``list_all_airports``, ...) and the retail domain's
    (``find_user_id_by_email``, ``get_order_details``, ...), never a write (``book_reservation``,
    ``cancel_pending_order``, ``transfer_to_human_agents``).
    """
    return frozenset(n for n in names if n in PURE_TOOLS or n.split("_", 1)[0].lower() in READ_VERBS)


FORMAT_STORES = "tracetrim."
"""Prefix of the metadata keys where format readers keep what the neutral form lacks (raw model
responses, original roles): the agent never sees them, so learning and measuring leave them out."""
SENT_AS = "tracetrim.sent_as"
"""What `as_seen` keeps of a reader's metadata on a message the host sent as a user turn of tool results
and more (an Anthropic user turn of results and text): the role it was sent with."""


def as_seen(messages: list[Message]) -> list[Message]:
    """``messages`` without the format readers' round-trip metadata: the context the agent saw.

    A mini-swe-agent message carries the model's whole raw response there (about 40% of the file);
    counting it would make every strategy look like it removed less of the history than it did.
    """
    out = []
    for message in messages:
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and any(k.startswith(FORMAT_STORES) for k in metadata):
            kept = {
                k: v
                for k, v in metadata.items()
                if not k.startswith(FORMAT_STORES) or k == "tracetrim.pinned"
            }
            if sent_by_the_host(message) and any(b.get("type") != "tool_result" for b in message["content"]):
                kept[SENT_AS] = {"role": "user"}  # no model call wrote it (`tracetrim.replay.model_turns`)
            message = {k: v for k, v in message.items() if k != "metadata"} | (
                {"metadata": kept} if kept else {}
            )
        out.append(message)
    return out


@attrs.frozen
class Trajectory:
    """One agent run as neutral messages; ``group`` is what held-out folds never split (repo, task)."""

    name: str
    dataset: str
    group: str
    messages: list[Message] = attrs.field(repr=False)
    eligible_tools: frozenset[str] | None = None
    """Tools a host would opt in; None = every tool in the history."""

    def tools(self) -> frozenset[str]:
        """The eligible tools (every tool called in the history when none were named)."""
        return self.eligible_tools if self.eligible_tools is not None else called_tools(self.messages)


def called_tools(messages: Iterable[Message]) -> frozenset[str]:
    """The name of every tool a history calls."""
    return frozenset(str(b["name"]) for m in messages for b in m["content"] if b.get("type") == "tool_call")


def tau_bench(path: Path, limit: int | None = None, *, prefix: str = "") -> list[Trajectory]:
    """tau-bench trajectories (OpenAI chat ``traj``), grouped by task; the read-only tools eligible.

    ``prefix`` goes before each name and group: task ids of two files (two domains) are not the same task.
    """
    from tracetrim.formats import from_openai_chat

    runs = strict_loads(path.read_text(encoding="utf-8"))[:limit]
    out = []
    for n, run in enumerate(runs):
        messages = as_seen(from_openai_chat(run["traj"]))
        out.append(
            Trajectory(
                name=f"{prefix}tau-{run['task_id']}-{run.get('trial', n)}",
                dataset="tau-bench",
                group=f"{prefix}task-{run['task_id']}",
                messages=messages,
                eligible_tools=read_only_tools(called_tools(messages)),
            )
        )
    return out


def tau_bench_folder(folder: Path) -> list[Trajectory]:
    """Every tau-bench file of ``folder`` (one per model and domain: ``gpt-4o-airline.json``, ...).

    With more than one file each run's name and group start with its file's stem.
    """
    files = sorted(folder.glob("*.json"))
    return [t for p in files for t in tau_bench(p, prefix=f"{p.stem}/" if len(files) > 1 else "")]


def swe_agent(folder: Path) -> list[Trajectory]:
    """SWE-agent ``.traj`` histories, each its own group; every tool but ``submit`` eligible."""
    from tracetrim.formats._swe_agent import load_swe_agent_traj

    out = []
    for path in sorted(folder.glob("*.traj")):
        messages = as_seen(load_swe_agent_traj(path))
        tools = called_tools(messages) - {"submit"}
        out.append(Trajectory(path.stem, "swe-agent", path.stem, messages, tools))
    return out


def mini_swe_agent(folder: Path, limit: int | None = None) -> list[Trajectory]:
    """mini-swe-agent SWE-bench runs, grouped by repository (``astropy``, ``sympy``, ...)."""
    from tracetrim.formats import load_mini_swe_agent_traj

    out = []
    for path in sorted(folder.glob("*.traj.json"))[:limit]:
        name = path.name.removesuffix(".traj.json")
        out.append(
            Trajectory(
                name,
                "mini-swe-agent",
                name.split("__")[0],
                as_seen(load_mini_swe_agent_traj(path)),
                frozenset({"bash"}),
            )
        )
    return out


def shared_datasets(shared: Path, *, names: Iterable[str] | None = None) -> dict[str, list[Trajectory]]:
    """The real datasets under ``shared/data`` by name (tau-bench, swe-agent, mini-swe-agent): every
    file of each folder, so more runs (another tau-bench domain, more repositories) join by being there."""
    data = shared / "data"
    readers = {
        "mini-swe-agent": lambda: mini_swe_agent(data / "mini-swe-agent"),
        "swe-agent": lambda: swe_agent(data / "swe-agent"),
        "tau-bench": lambda: tau_bench_folder(data / "tau-bench"),
    }
    wanted = list(names) if names is not None else list(readers)
    return {name: readers[name]() for name in wanted}


def from_file(
    path: Path | str,
    *,
    fmt: str = "auto",
    eligible_tools: frozenset[str] | None = None,
    name: str | None = None,
) -> list[Trajectory]:
    """The trajectories in one file, read as `tracetrim compact` reads it: any format of the format table
    (JSON or JSONL, told apart by shape with ``auto``), a whole history or a list of trajectories
    (tau-bench, tau2 results), each item of a list its own trajectory.

    Each is named ``name`` (default: the path as given), item N of a list ``name[N]``, and is its own
    held-out group. ``eligible_tools`` defaults to the tools the file names (``eligible_tool_names``),
    else its format's (mini-swe-agent: ``bash``), else every tool the history calls. A file that does
    not read raises `FieldValueError` naming it and what is wrong.
    """
    from tracetrim._snapshot import validate_messages
    from tracetrim.formats import (
        HISTORY_FORMATS,
        FormatError,
        detect_format,
        parse_history_text,
        trajectory_items,
        trajectory_list,
    )

    source = str(path)
    name = source if name is None else name
    try:
        data = parse_history_text(Path(path).read_bytes())
    except (OSError, FormatError) as exc:
        raise FieldValueError(f"{source}: cannot read a trajectory ({exc})") from None
    listed = trajectory_list(data) is not None
    items = trajectory_items(data) if listed else [data]
    out = []
    for n, item in enumerate(items):
        label = f"{name}[{n}]" if listed else name
        try:
            kind = detect_format(item) if fmt == "auto" else fmt
            spec = HISTORY_FORMATS[kind]
            raw, fields = spec.split(item)
            requested = request_keys(spec.provider_fields)
            fields = {k: v for k, v in fields.items() if k not in requested}
            messages = as_seen(validate_messages(spec.read(raw, fields)))
        except ValueError as exc:  # FormatError, SnapshotError, FieldValueError
            raise FieldValueError(f"{label if listed else source}: {exc}") from None
        except ImportError as exc:
            raise FieldValueError(f"{source}: the {kind} format needs {exc.name} installed") from None
        tools = eligible_tools
        if tools is None:
            named = item.get("eligible_tool_names") if isinstance(item, dict) else None
            named_tools = frozenset(named) if isinstance(named, list) and named else None
            tools = named_tools or frozenset(spec.default_tools) or None
        out.append(Trajectory(label, kind, label, messages, tools))
    return out
