"""A real ``tracetrim serve`` process for tests: started on a free loopback port, stopped with SIGINT."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

_START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_process(
    *flags: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``python -m tracetrim serve --port P *flags``; yields its URL once ``/healthz`` answers.

    stderr goes to ``cwd/serve.log`` (read it after the block for what the server logged).
    """
    port = free_port()
    command = [sys.executable, "-m", "tracetrim", "serve", "--port", str(port), *flags]
    log = (cwd / "serve.log").open("w")
    environment = {**os.environ, **(env or {})}
    process = subprocess.Popen(
        command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True, env=environment
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + _START_TIMEOUT_S
    try:
        while True:
            if process.poll() is not None:
                log.flush()
                raise AssertionError(f"serve exited early: {(cwd / 'serve.log').read_text()}")
            try:
                httpx.get(f"{url}/healthz", timeout=1, headers=dict(headers or {}))
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url, process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
