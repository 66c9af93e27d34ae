"""Bytes to stdout as they are: a history given back byte for byte, whatever stream stdout is."""

from __future__ import annotations

import sys


def write_bytes(data: bytes) -> None:
    """``data`` on stdout as the bytes they are (a stdout replaced by a text stream gets their text)."""
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        sys.stdout.write(data.decode("utf-8"))
        return
    sys.stdout.flush()  # what was written as text before goes first
    stream.write(data)
    stream.flush()
