"""Idle and half-open connections cannot starve the server (issue 35, point 4): per-client and idle limits.

Each test runs uvicorn with the configuration ``tracetrim serve`` uses (`tracetrim.service.server_config`)
on a free loopback port and opens real sockets. Linux routes all of 127.0.0.0/8 to the loopback device,
so binding a client socket to 127.0.0.2 (or .3, ...) makes it another client address; where that is not
possible, the tests that need a second address are skipped.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests._service_app import require_service_extra, serving

PARTIAL_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # never finished


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    require_service_extra()


@contextlib.contextmanager
def running(**limits: Any) -> Iterator[Any]:
    """The app under `server_config` with ``limits`` (a header timeout far beyond the test's length,
    so the header timer is not what frees the slots)."""
    limits.setdefault("header_timeout_s", 120)
    with serving(limits) as server:
        yield server


def second_address(last: int = 2) -> str:
    """127.0.0.``last``, when this machine lets a socket use it as its source address."""
    address = f"127.0.0.{last}"
    try:
        with socket.socket() as probe:
            probe.bind((address, 0))
    except OSError:
        pytest.skip(f"cannot bind a client socket to {address}")
    return address


def open_idle(
    port: int, count: int, source: str = "127.0.0.1", *, partial: bool = True
) -> list[socket.socket]:
    """``count`` connections from ``source``: half send nothing, half (when ``partial``) part of a
    request head."""
    held = []
    for i in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.settimeout(10)
        sock.connect(("127.0.0.1", port))
        if partial and i % 2:
            sock.sendall(PARTIAL_HEAD)
        held.append(sock)
    return held


def closed_by_server(held: list[socket.socket], wait_s: float = 3.0) -> int:
    """How many of ``held`` the server has closed (EOF or reset), waiting up to ``wait_s`` in all."""
    deadline = time.monotonic() + wait_s
    closed = 0
    for sock in held:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(4096) == b"":
                closed += 1
        except (ConnectionResetError, BrokenPipeError):
            closed += 1
        except TimeoutError:
            pass
    return closed


def healthz(url: str, source: str = "127.0.0.1") -> int:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10) as client:
        return client.get(f"{url}/healthz").status_code


def close_all(held: list[socket.socket]) -> None:
    for sock in held:
        sock.close()


def test_healthz_answers_while_one_client_holds_300_idle_connections() -> None:
    """300 idle or half-open connections from one address used to fill all 256 slots: /healthz was
    503 until the header timeout closed them, and reconnecting kept it there. Now the address keeps
    its 16 newest idle connections and the rest are closed as the next ones arrive."""
    attacker = second_address()
    with running() as server:
        held = open_idle(server.port, 300, attacker)
        try:
            assert healthz(server.url) == 200
            assert healthz(server.url, attacker) == 200  # its own new connection is served too
            assert closed_by_server(held) >= 300 - 16
            again = open_idle(server.port, 300, attacker)  # reconnecting changes nothing
            held += again
            assert healthz(server.url) == 200
        finally:
            close_all(held)


def test_the_same_address_still_gets_healthz_through() -> None:
    """Every client here is 127.0.0.1, the load balancer's probe included: the probe's connection
    takes the place of the longest-idle one instead of being refused."""
    with running() as server:
        held = open_idle(server.port, 300)
        try:
            for _ in range(3):
                assert healthz(server.url) == 200
            assert closed_by_server(held) >= 300 - 16
        finally:
            close_all(held)


def test_a_full_server_gives_up_its_longest_idle_connections() -> None:
    """Many addresses, each under its own idle cap, filling every slot: a new connection closes the
    ones idle longest (past ``evict_idle_after_s``) instead of every request getting 503."""
    sources = [second_address(last) for last in range(3, 7)]
    with running(max_connections=41, max_idle_per_client=16, evict_idle_after_s=0.3) as server:
        held = [sock for source in sources for sock in open_idle(server.port, 10, source)]
        try:
            time.sleep(0.6)  # all 40 are now idle past evict_idle_after_s
            assert healthz(server.url) == 200
            assert closed_by_server(held, wait_s=1.0) >= 1
        finally:
            close_all(held)


def test_one_address_cannot_hold_more_than_its_share_of_busy_connections() -> None:
    """Connections sending a body slowly are busy, not idle, so nothing evicts them; the per-client
    cap stops one address holding more than ``max_connections_per_client`` of them."""
    attacker = second_address()
    slow_head = (
        b"POST /v1/compact_context HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{"
    )
    with running(max_connections_per_client=4) as server:
        busy = open_idle(server.port, 4, attacker, partial=False)
        try:
            for sock in busy:
                sock.sendall(slow_head)
            time.sleep(0.3)
            extra = open_idle(server.port, 1, attacker)
            busy += extra
            assert closed_by_server(extra) == 1
            assert closed_by_server(busy[:4], wait_s=0.3) == 0  # requests in progress are kept
            assert healthz(server.url) == 200  # another address is served
        finally:
            close_all(busy)
