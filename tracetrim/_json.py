"""The one canonical JSON encoding, used for sizes, digests and change detection everywhere."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Encode ``value`` as canonical JSON: sorted keys, no spaces, non-ASCII kept, NaN refused.

    Raises ``ValueError`` for NaN/Infinity and ``TypeError`` for values JSON cannot carry.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value`` as UTF-8 bytes."""
    return canonical_json(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Lower-case hex SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_bytes(value))
