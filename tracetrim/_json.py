"""The one canonical JSON encoding, used for sizes, digests and change detection everywhere."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# One encoder for the process: json.dumps with options builds a new encoder on every call,
# which dominates the cost for the many small blocks the planner measures.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Encode ``value`` as canonical JSON: sorted keys, no spaces, non-ASCII kept, NaN refused.

    Raises ``ValueError`` for NaN/Infinity and ``TypeError`` for values JSON cannot carry.
    """
    return _ENCODER.encode(value)


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def compact_json(value: Any) -> str:
    """Like `canonical_json` but in the value's own key order: the same length, cheaper to make.

    Used to copy a history and fingerprint it; digests always use `canonical_json`.
    """
    return _COMPACT.encode(value)


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value`` as UTF-8 bytes."""
    return canonical_json(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Lower-case hex SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_bytes(value))
