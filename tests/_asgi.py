"""A real ASGI server for tests: uvicorn serving an app from a background thread on a free loopback port.

The socket is bound to 127.0.0.1 port 0 before the server starts, so the URL is known at once and two
servers never race for a port. Leaving the ``with`` block asks uvicorn to exit and joins its thread:
open connections are closed, requests still running get ``timeout_graceful_shutdown`` seconds to finish.
uvicorn's own log records go to the standard `logging` tree (``log_config=None``), where pytest
captures them; a client that hangs up early is not an error and prints nothing. With ``limits`` the
server runs with the uvicorn configuration of `tracetrim serve` (`tracetrim.service.server_config`).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Literal, Self

import uvicorn
from starlette.types import ASGIApp

if TYPE_CHECKING:
    from tracetrim.service import ServerLimits

_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 10.0


class ThreadedServer:
    """uvicorn serving ``app`` on 127.0.0.1 from a daemon thread while entered; ``url`` is its base URL."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        lifespan: Literal["auto", "on", "off"] = "off",
        limits: ServerLimits | None = None,
    ) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        host, port = self._socket.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        self.port = int(port)
        if limits is not None:  # the configuration `tracetrim serve` runs with
            from tracetrim.service import server_config

            config = server_config(
                app, host=host, port=port, limits=limits, lifespan=lifespan, log_config=None, access_log=False
            )
        else:
            config = uvicorn.Config(
                app,
                lifespan=lifespan,
                log_config=None,
                log_level="warning",
                access_log=False,
                timeout_graceful_shutdown=5,
            )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name=self.url, daemon=True
        )

    def start(self) -> None:
        """Start serving; returns once uvicorn accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._socket.close()
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            time.sleep(0.005)

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread; the socket is closed either way."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(_STOP_TIMEOUT_S)
        self._socket.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
