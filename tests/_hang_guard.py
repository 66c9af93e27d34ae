"""A guard against a hang: code run in a fresh interpreter must finish within a generous limit."""

from __future__ import annotations

import subprocess
import sys

import pytest


def finishes(code: str, seconds: float = 60.0) -> None:
    """Run ``code`` in a fresh interpreter, failing if it is still running after ``seconds``.

    For inputs that take milliseconds when read in one pass and minutes when the reading is quadratic:
    a guard, not a timing. A process rather than a thread, since a regex holds the interpreter until
    it is done and a thread's join could not time it out."""
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {seconds} s")
