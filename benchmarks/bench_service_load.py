"""The service's memory and latency under hostile load: amplifying bodies and idle-connection pressure.

Run: ``python benchmarks/bench_service_load.py [--clients 6] [--messages 250000] [--idle 300]
[--seconds 10] [--source DIR] [--json FILE]``.

A fresh ``tracetrim serve`` (the learned judge, default limits, one process) starts on a free loopback
port; its resident memory is sampled from ``/proc/PID/status`` every 20 ms (Linux only) while
``/healthz`` is probed from another client every 50 ms. Three phases, each reported with the server's
peak RSS above its idle RSS, the answers' status codes and latencies, and the probe's:

1. ``amplify``: ``--clients`` clients at once each post a body of ``--messages`` one-line OpenAI chat
   messages (``{"role":"user","content":"x"}``: 250,000 of them is 7.5 MB, under the 8 MiB body
   limit): the most messages a body of that size can carry, each costing conversion and validation.
2. ``at-limit``: the same clients post 49,000 such messages (under the service's default
   ``max_messages``, 50,000), which are read, converted, validated and planned: the most work a
   body of tiny messages can cost once it passes the counts.
3. ``idle``: one client (127.0.0.2 where the system allows that source address) holds ``--idle``
   connections, half of them silent and half with a request head never finished, and opens them
   all again every 2 s for ``--seconds``, while another client posts the bundled ``payment_retry``
   history (41 messages, 50 KB) in a loop: its latency and the probe's show whether anyone else is
   still served.

``--source DIR`` serves the ``tracetrim`` found in DIR instead (a checkout of an older version, say),
so one run of this file measures before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AT_LIMIT_MESSAGES = 49_000
PARTIAL_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tiny_messages_body(count: int) -> bytes:
    """``count`` one-line OpenAI chat messages as a ``/v1/compact_context`` body."""
    one = b'{"role":"user","content":"x"}'
    head = b'{"format":"openai","eligible_tool_names":["read_file"],"messages":['
    return head + b",".join([one] * count) + b"]}"


def scenario_body() -> bytes:
    """The bundled payment_retry history as a SHADOW ``/v1/compact_context`` body."""
    scenario = json.loads((ROOT / "tracetrim" / "_examples" / "payment_retry.json").read_text())
    body = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    return json.dumps(body).encode()


def rss_kib(pid: int) -> int:
    """The resident set size of ``pid`` in KiB (0 where ``/proc`` is not there)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler:
    """Samples a process's RSS and probes ``/healthz`` in background threads while entered."""

    def __init__(self, pid: int, url: str) -> None:
        self.pid = pid
        self.url = url
        self.rss: list[int] = []
        self.probes: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._sample), threading.Thread(target=self._probe)]

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.rss.append(rss_kib(self.pid))
            time.sleep(0.02)

    def _probe(self) -> None:
        import httpx

        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                # a new connection each time, as a load balancer's probe makes
                status = httpx.get(f"{self.url}/healthz", timeout=10).status_code
            except httpx.HTTPError as exc:
                status = -1 if not isinstance(exc, httpx.TimeoutException) else -2
            self.probes.append((status, time.perf_counter() - started))
            time.sleep(0.05)

    def __enter__(self) -> Sampler:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def _ms(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def summary(name: str, idle_kib: int, sampler: Sampler, answers: list[tuple[Any, float]]) -> dict[str, Any]:
    """One phase's figures: memory, answers (status or reason: count, latencies) and the probe."""
    probe_ok = [seconds for status, seconds in sampler.probes if status == 200]
    latencies = [seconds for _, seconds in answers]
    return {
        "phase": name,
        "idle_rss_mib": round(idle_kib / 1024, 1),
        "peak_rss_above_idle_mib": round((max(sampler.rss, default=idle_kib) - idle_kib) / 1024, 1),
        "answers": dict(Counter(str(key) for key, _ in answers)),
        "answer_p50_ms": _ms(latencies, 0.5),
        "answer_max_ms": _ms(latencies, 1.0),
        "healthz": dict(Counter(str(status) for status, _ in sampler.probes)),
        "healthz_p50_ms": _ms(probe_ok, 0.5),
        "healthz_max_ms": _ms(probe_ok, 1.0),
    }


def _answer_key(response: Any) -> str:
    try:
        document = response.json()
    except ValueError:
        return str(response.status_code)
    if response.status_code == 200:
        return f"200 {document.get('reason', '')}"
    return f"{response.status_code} {document.get('error', {}).get('code', '')}"


def burst(url: str, body: bytes, clients: int) -> list[tuple[str, float]]:
    """``clients`` posts of ``body`` at once; each answer's key and latency."""
    import httpx

    answers: list[tuple[str, float]] = []
    lock = threading.Lock()

    def post() -> None:
        started = time.perf_counter()
        try:
            response = httpx.post(
                f"{url}/v1/compact_context",
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=300,
            )
            key = _answer_key(response)
        except httpx.HTTPError as exc:
            key = type(exc).__name__
        with lock:
            answers.append((key, time.perf_counter() - started))

    threads = [threading.Thread(target=post) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def _source_address() -> str:
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
        return "127.0.0.2"
    except OSError:
        return "127.0.0.1"


def idle_pressure(port: int, count: int, seconds: float, work: Callable[[], None]) -> dict[str, Any]:
    """Hold ``count`` idle connections from one address, reopened every 2 s, while ``work`` loops."""
    source = _source_address()
    held: list[socket.socket] = []
    stop = time.monotonic() + seconds
    closed_by_server = 0
    rounds = 0

    def reopen() -> None:
        nonlocal closed_by_server
        for sock in held:
            sock.setblocking(False)
            try:
                if sock.recv(1) == b"":
                    closed_by_server += 1
            except BlockingIOError:
                pass
            except OSError:
                closed_by_server += 1
            sock.close()
        held.clear()
        for i in range(count):
            sock = socket.socket()
            sock.bind((source, 0))
            try:
                sock.connect(("127.0.0.1", port))
                if i % 2:
                    sock.sendall(PARTIAL_HEAD)
            except OSError:
                sock.close()
                continue
            held.append(sock)

    worker_stop = threading.Event()

    def loop() -> None:
        while not worker_stop.is_set():
            work()

    worker = threading.Thread(target=loop)
    reopen()
    worker.start()
    try:
        while time.monotonic() < stop:
            time.sleep(min(2.0, max(0.0, stop - time.monotonic())))
            rounds += 1
            reopen()
    finally:
        worker_stop.set()
        worker.join()
        for sock in held:
            sock.close()
    return {
        "source": source,
        "rounds": rounds,
        "opened": count * (rounds + 1),
        "closed_by_server": closed_by_server,
    }


@contextmanager
def serving(source: Path) -> Iterator[tuple[str, int, int]]:
    """``tracetrim serve`` from ``source``; yields its URL, port and pid once ``/healthz`` answers."""
    import httpx

    port = _free_port()
    command = [sys.executable, "-m", "tracetrim", "serve", "--port", str(port)]
    command += ["--model-backend", "learned", "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": str(source)}
    server = subprocess.Popen(command, cwd=source, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)
        yield url, port, server.pid
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    """Run the three phases against one server and print one line per phase."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=6, help="amplifying bodies posted at once (default 6)")
    parser.add_argument("--messages", type=int, default=250_000, help="messages per amplifying body")
    parser.add_argument(
        "--idle", type=int, default=300, help="idle connections one client holds (default 300)"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the idle phase (default 10)")
    parser.add_argument("--source", type=Path, default=ROOT, help="the tracetrim source tree to serve")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    import httpx

    rows: list[dict[str, Any]] = []
    amplifying = tiny_messages_body(args.messages)
    at_limit = tiny_messages_body(AT_LIMIT_MESSAGES)
    small = scenario_body()
    with serving(args.source.resolve()) as (url, port, pid):
        time.sleep(1.0)
        idle_kib = rss_kib(pid)
        for name, body in ((f"amplify {len(amplifying) / 1e6:.1f} MB", amplifying), ("at-limit", at_limit)):
            with Sampler(pid, url) as sampler:
                answers = burst(url, body, args.clients)
            rows.append(summary(name, idle_kib, sampler, answers))
        latencies: list[tuple[str, float]] = []

        def compact_once() -> None:
            started = time.perf_counter()
            try:
                response = httpx.post(
                    f"{url}/v1/compact_context",
                    content=small,
                    headers={"Content-Type": "application/json"},
                    timeout=30,
                )
                key = _answer_key(response)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            latencies.append((key, time.perf_counter() - started))

        with Sampler(pid, url) as sampler:
            pressure = idle_pressure(port, args.idle, args.seconds, compact_once)
        rows.append(summary(f"idle {args.idle}", idle_kib, sampler, latencies) | pressure)
    for row in rows:
        print(
            f"{row['phase']:<16} peak RSS +{row['peak_rss_above_idle_mib']:>6.1f} MiB "
            f"(idle {row['idle_rss_mib']} MiB)  answers {row['answers']}  "
            f"p50 {row['answer_p50_ms']} ms max {row['answer_max_ms']} ms  "
            f"healthz {row['healthz']} p50 {row['healthz_p50_ms']} ms max {row['healthz_max_ms']} ms"
            + (
                f"  ({row['opened']} idle connections opened, {row['closed_by_server']} closed by the server)"
                if "opened" in row
                else ""
            ),
            flush=True,
        )
    print(f"cpus: {os.cpu_count()}, source {args.source}, clients {args.clients}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
