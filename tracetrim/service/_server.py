"""Running the service under uvicorn with limits: connection cap, header and idle timeouts, quiet logs."""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from typing import Any

import attrs
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from tracetrim._validators import positive_number

_log = logging.getLogger("tracetrim.service")

HEADER_TIMEOUT_ATTRIBUTE = "tracetrim_header_timeout_s"
"""Where `HeaderTimeoutH11Protocol` finds its timeout on the uvicorn ``Config`` (it survives pickling
into ``--workers`` processes, unlike a class attribute set at run time)."""


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection that has not sent a whole request head in time.

    uvicorn alone keeps a connection that never finishes its request line and headers open forever
    (its keep-alive timer starts only after a first response), so a few hundred slow clients can hold
    every slot. The timer starts when the connection opens and again after each response; a complete
    request head stops it (the body then has the app's own read timeout).
    """

    _header_timer: asyncio.TimerHandle | None = None

    def _header_timeout_s(self) -> float:
        return float(getattr(self.config, HEADER_TIMEOUT_ATTRIBUTE, 10.0))

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self._header_timeout_s(), self._header_expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a request head arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def _header_expired(self) -> None:
        self._header_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being served; its body has the app's read timeout
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
            _log.info("closed connection from %s: no complete request head within the header timeout", client)
            self.transport.close()


_positive = positive_number()


@attrs.frozen(kw_only=True)
class ServerLimits:
    """What one server process accepts: connections and how long each may take to speak.

    - ``max_connections``: beyond this many open connections (or requests in flight) uvicorn answers
      503 at once instead of queueing;
    - ``header_timeout_s``: a connection must send a complete request head within this long after it
      opens or after its previous response (`HeaderTimeoutH11Protocol`);
    - ``keep_alive_s``: an idle kept-alive connection is closed after this long;
    - ``backlog``: connections the kernel queues before ``accept``;
    - ``graceful_s``: on shutdown, requests in flight get this long to finish.
    The request body's own deadline is `ServiceSettings.read_timeout_s` (408).
    """

    max_connections: int = attrs.field(default=256, validator=_positive)
    header_timeout_s: float = attrs.field(default=10.0, validator=_positive)
    keep_alive_s: int = attrs.field(default=5, validator=_positive)
    backlog: int = attrs.field(default=2048, validator=_positive)
    graceful_s: int = attrs.field(default=10, validator=_positive)


# A worker importing tracetrim on a busy machine can take longer than uvicorn's 5 s default to answer
# its first health ping, and would be killed and restarted over and over (uvicorn 0.36+ pings).
_HEALTHCHECK = (
    {"timeout_worker_healthcheck": 30}
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters
    else {}
)


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging setup, with the service's own lines (``tracetrim.service``) on the same handler.

    Plan records (the ``tracetrim`` logger) stay where the host sends them: they name scopes, which the
    service otherwise keeps out of its logs.
    """
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["loggers"]["tracetrim.service"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return config


def server_config(
    app: Any,
    *,
    host: str,
    port: int,
    limits: ServerLimits,
    workers: int = 1,
    log_level: str = "info",
    factory: bool = False,
    **options: Any,
) -> uvicorn.Config:
    """A uvicorn ``Config`` serving ``app`` (an ASGI app, or an import string with ``workers`` > 1)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        workers=workers,
        factory=factory,
        http=HeaderTimeoutH11Protocol,
        limit_concurrency=limits.max_connections,
        timeout_keep_alive=limits.keep_alive_s,
        backlog=limits.backlog,
        timeout_graceful_shutdown=limits.graceful_s,
        log_level=log_level,
        **({"log_config": log_config(log_level)} | _HEALTHCHECK | options),
    )
    setattr(config, HEADER_TIMEOUT_ATTRIBUTE, limits.header_timeout_s)
    return config


def serve(config: uvicorn.Config) -> bool:
    """Run ``config`` until interrupted: in this process, or ``config.workers`` processes sharing
    one listening socket. False when the server could not start."""
    from uvicorn.supervisors import Multiprocess

    server = uvicorn.Server(config)
    try:
        if config.workers > 1:
            socket = config.bind_socket()
            Multiprocess(config, sockets=[socket]).run()
            return True
        server.run()
    except KeyboardInterrupt:
        pass
    return bool(server.started)
