"""Counting how much JSON tracetrim encodes: every encoder in `tracetrim._json`, wrapped for a while.

`counting_encodes` replaces the module's orjson and its two json encoders with counting stand-ins.
Each encode is weighed by what of a given history it carried: a message or a content block of the
history (alone, in a list or in a snapshot document) counts its bytes towards ``history``, and so
does an item of the same history in another format (``also``: what a converter reads, e.g. to derive
ids from content); anything else (a rebuilt message or block, a question, the frame around a
message's blocks) towards ``other``. Messages and blocks are recognised by value, with the standard
library's encoder, which is not counted.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import orjson

import tracetrim._json as tj


def _key(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


@attrs.define
class EncodeCount:
    """Bytes that went through tracetrim's JSON encoders, split by whether they were the history's."""

    originals: frozenset[str]
    history_bytes: int
    alternates: frozenset[str] = frozenset()
    history: int = 0
    other: int = 0
    calls: int = 0

    def add(self, value: Any, size: int) -> None:
        """Count one encode of ``value`` that made ``size`` bytes."""
        self.calls += 1
        carried = self._carried(value)
        self.history += carried
        self.other += max(size - carried, 0)

    def _carried(self, value: Any) -> int:
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            value = value["messages"]  # a snapshot document
        items = value if isinstance(value, list) else [value]
        carried = 0
        for item in items:
            if not isinstance(item, dict):
                continue
            key = _key(item)
            if (("role" in item or "type" in item) and key in self.originals) or key in self.alternates:
                carried += len(orjson.dumps(item))
        return carried

    @property
    def histories(self) -> float:
        """How many times the whole history was encoded (its messages' and blocks' bytes over its own)."""
        return self.history / self.history_bytes

    @property
    def others(self) -> float:
        """Everything else encoded, in histories."""
        return self.other / self.history_bytes


class _Orjson:
    def __init__(self, count: EncodeCount) -> None:
        self._count = count
        self.OPT_SORT_KEYS = orjson.OPT_SORT_KEYS
        self.OPT_INDENT_2 = orjson.OPT_INDENT_2
        self.JSONEncodeError = orjson.JSONEncodeError

    def dumps(self, value: Any, option: int | None = None) -> bytes:
        data = orjson.dumps(value, option=option)
        if not (option or 0) & orjson.OPT_INDENT_2:
            # an indented encode is what a command prints (`pretty_json`): its bytes carry the history
            # by design, as the service's answer does, and the plan's encodes are what is counted
            self._count.add(value, len(data))
        return data


class _Encoder:
    def __init__(self, encoder: Any, count: EncodeCount) -> None:
        self._encoder = encoder
        self._count = count

    def encode(self, value: Any) -> str:
        text: str = self._encoder.encode(value)
        self._count.add(value, len(text.encode("utf-8", "surrogatepass")))
        return text


@contextlib.contextmanager
def counting_encodes(history: Sequence[Any], also: Sequence[Any] = ()) -> Iterator[EncodeCount]:
    """Count every encode made through `tracetrim._json` inside the block, weighed against ``history``
    (neutral messages); ``also`` holds the same history's items in the format an entry point read."""
    keys = {_key(message) for message in history}
    keys |= {_key(block) for message in history for block in message.get("content", ())}
    count = EncodeCount(
        originals=frozenset(key for key in keys if key is not None),
        history_bytes=sum(len(orjson.dumps(m)) for m in history) + len(history) + 1,
        alternates=frozenset(key for key in map(_key, also) if key is not None),
    )
    saved = tj.orjson, tj._ENCODER, tj._COMPACT
    tj.orjson = _Orjson(count)  # type: ignore[assignment]
    tj._ENCODER = _Encoder(saved[1], count)  # type: ignore[assignment]
    tj._COMPACT = _Encoder(saved[2], count)  # type: ignore[assignment]
    try:
        yield count
    finally:
        tj.orjson, tj._ENCODER, tj._COMPACT = saved


MAX_HISTORIES = 2.0
"""A compaction encodes the whole history at most this often (its copy, then the check that it did
not change while planning; the archive stores the copy's bytes)."""

OWNED_HISTORIES = 1.05
"""An entry point that plans its own copy of the history (the CLI's file, the service's body, an
adapter's conversion) encodes it once: the runner does not check a private copy for changes. The
0.05 covers what is measured on its own besides (a shortened pair's call block)."""


def enforcing_compactor() -> Any:
    """A `Compactor` in ENFORCE mode over an in-memory archive that drops the first two read_file pairs
    (c1, c2) and keeps the rest: what is written back is most of the history."""
    import tracetrim as tt
    from tracetrim.archive import KeyValueArchive, MemoryStore
    from tracetrim.decision import ScriptedDecisionModel

    return tt.Compactor(
        ScriptedDecisionModel.by_call_id({"c1": (0.0, 0.0), "c2": (0.0, 0.0)}, default=(1.0, 1.0)),
        config=tt.CompactorConfig(eligible_tools={"read_file"}, preserve_recent_messages=4),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
