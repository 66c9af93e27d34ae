"""Running the service under uvicorn with limits: connection caps (per client too), header and idle timers."""

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

CLIENT_LIMITS_ATTRIBUTE = "tracetrim_client_limits"
"""Where `HeaderTimeoutH11Protocol` finds its `ClientLimits` on the uvicorn ``Config``."""


@attrs.frozen
class ClientLimits:
    """The per-client and idle limits `HeaderTimeoutH11Protocol` enforces (see `ServerLimits`)."""

    max_connections_per_client: int = 64
    max_idle_per_client: int = 16
    evict_idle_after_s: float = 1.0


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection that has not sent a whole request head in time,
    and keeping one client's connections, idle ones above all, from taking every slot.

    uvicorn alone keeps a connection that never finishes its request line and headers open forever
    (its keep-alive timer starts only after a first response), so a few hundred slow clients can hold
    every slot. The timer starts when the connection opens and again after each response; a complete
    request head stops it (the body then has the app's own read timeout).

    A connection is *idle* while that timer runs: it has no request in progress (it has sent nothing
    yet, part of a head, or is kept alive after a response). Idle connections are what an attacker
    holds for free, so they are the ones given up (`ClientLimits`): a client (one remote address)
    with more than ``max_idle_per_client`` idle connections loses its longest-idle ones; a new
    connection from a client that already holds ``max_connections_per_client`` is closed at once; and
    when the whole server is full (uvicorn's ``limit_concurrency``), a new connection closes the
    connections idle longest, if idle at least ``evict_idle_after_s``, instead of every request
    getting 503. A connection with a request in progress is never closed for room.
    """

    _header_timer: asyncio.TimerHandle | None = None
    _idle_since: float | None = None

    def _header_timeout_s(self) -> float:
        return float(getattr(self.config, HEADER_TIMEOUT_ATTRIBUTE, 10.0))

    def _client_limits(self) -> ClientLimits:
        limits = getattr(self.config, CLIENT_LIMITS_ATTRIBUTE, None)
        return limits if isinstance(limits, ClientLimits) else ClientLimits()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self._header_timeout_s(), self._header_expired)
        self._idle_since = self.loop.time()

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self._idle_since = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        limits = self._client_limits()
        if self._same_client_count() > limits.max_connections_per_client:
            self._evict_idle(self._same_client_idle(), 1)  # the client's own idle one makes room first
            if self._same_client_count() > limits.max_connections_per_client:
                self._close_for_room("this client already holds its share of connections")
                return
        self._limit_client_idle(limits)
        self._limit_server_idle(limits)

    def _is_idle(self) -> bool:
        """No request in progress (a pipelined one may have started after the timer was armed)."""
        return self._idle_since is not None and (self.cycle is None or self.cycle.response_complete)

    def _open_peers(self) -> list[HeaderTimeoutH11Protocol]:
        """The server's other connections still open (all run this protocol)."""
        return [
            c
            for c in self.connections
            if c is not self and isinstance(c, HeaderTimeoutH11Protocol) and not c.transport.is_closing()
        ]

    def _same_client(self, other: HeaderTimeoutH11Protocol) -> bool:
        return self.client is not None and other.client is not None and other.client[0] == self.client[0]

    def _same_client_count(self) -> int:
        """Open connections from this connection's address, itself included."""
        return 1 + sum(1 for c in self._open_peers() if self._same_client(c))

    def _same_client_idle(self) -> list[HeaderTimeoutH11Protocol]:
        """This address's other idle connections, longest idle first."""
        idle = [c for c in self._open_peers() if c._is_idle() and self._same_client(c)]
        return sorted(idle, key=lambda c: c._idle_since or 0.0)

    def _limit_client_idle(self, limits: ClientLimits) -> None:
        idle = self._same_client_idle()
        mine = 1 if self._is_idle() else 0
        self._evict_idle(idle, len(idle) + mine - limits.max_idle_per_client)

    def _limit_server_idle(self, limits: ClientLimits) -> None:
        limit = self.limit_concurrency
        if limit is None or len(self.connections) < limit:
            return
        now = self.loop.time()
        stale = [
            c
            for c in self._open_peers()
            if c._is_idle() and now - (c._idle_since or now) >= limits.evict_idle_after_s
        ]
        stale.sort(key=lambda c: c._idle_since or 0.0)
        # uvicorn answers 503 while connections >= limit: leave one slot free for this connection
        self._evict_idle(stale, len(self.connections) - limit + 1)

    @staticmethod
    def _evict_idle(idle: list[HeaderTimeoutH11Protocol], count: int) -> None:
        for victim in idle[: max(0, count)]:
            victim._close_for_room("idle while another connection needed its slot")

    def _close_for_room(self, why: str) -> None:
        # Out of the count at once: uvicorn counts connections when the next request head arrives,
        # which may be before this transport reports itself lost.
        self.connections.discard(self)
        self._disarm()
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
            # debug, not info: a client opening thousands of connections would write as many lines
            _log.debug("closed connection from %s: %s", client, why)
            self.transport.close()

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
            self._limit_client_idle(self._client_limits())

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
    - ``graceful_s``: on shutdown, requests in flight get this long to finish;
    - ``max_connections_per_client``: open connections one remote address may hold; one more is
      closed at once (after that address's own idle connections have made what room they can);
    - ``max_idle_per_client``: idle connections (no request in progress: nothing sent yet, part of a
      head, or kept alive) one address may hold; above it, its longest-idle ones are closed;
    - ``evict_idle_after_s``: when the server holds ``max_connections``, a new connection closes the
      connections idle longest, if idle at least this long, so idle ones never lock others out.
    Behind a reverse proxy every connection comes from the proxy's address: raise the per-client
    limits to ``max_connections`` there (the proxy keeps its own per-client limits).
    The request body's own deadline is `ServiceSettings.read_timeout_s` (408).
    """

    max_connections: int = attrs.field(default=256, validator=_positive)
    header_timeout_s: float = attrs.field(default=10.0, validator=_positive)
    keep_alive_s: int = attrs.field(default=5, validator=_positive)
    backlog: int = attrs.field(default=2048, validator=_positive)
    graceful_s: int = attrs.field(default=10, validator=_positive)
    max_connections_per_client: int = attrs.field(default=64, validator=_positive)
    max_idle_per_client: int = attrs.field(default=16, validator=_positive)
    evict_idle_after_s: float = attrs.field(default=1.0, validator=_positive)


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
    setattr(
        config,
        CLIENT_LIMITS_ATTRIBUTE,
        ClientLimits(
            limits.max_connections_per_client, limits.max_idle_per_client, limits.evict_idle_after_s
        ),
    )
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
