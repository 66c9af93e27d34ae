"""Requests per second of ``tracetrim serve`` with 1, 2 and 4 worker processes over one shared archive.

Run: ``python benchmarks/bench_service.py [--workers 1,2,4] [--seconds 15] [--concurrency 16]
[--mode enforce|shadow] [--archive URL] [--model learned] [--json FILE]``.

For each worker count a fresh ``tracetrim serve --workers N`` starts on a free loopback port with the
archive (default: a new SQLite file; ``--archive redis://127.0.0.1:6379/0`` or ``postgresql://...``
share across machines too). The benchmark waits until every process answers ``/healthz``, warms up
for 2 seconds, then ``--concurrency`` clients in a separate load process post the bundled
``payment_retry`` history (41 messages, 50 KB, 19 tool calls) to ``POST /v1/compact_context`` as fast
as answers come back, each ENFORCE request under its own scope (so each one archives a snapshot), for
``--seconds``. It reports answered requests per second, latency percentiles and errors. The load
process competes with the server for the same CPUs, so run it on a machine with cores to spare;
the figures are the server's throughput only if the load generator is not the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _body(mode: str) -> dict[str, Any]:
    scenario = json.loads((ROOT / "tracetrim" / "_examples" / "payment_retry.json").read_text())
    body = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    return body | {"options": {"mode": mode, "minimum_reduction": 0.0}}


async def _load(url: str, seconds: float, concurrency: int, mode: str) -> dict[str, Any]:
    """``concurrency`` clients posting for ``seconds``; counts and latencies of the answers."""
    import httpx

    template = _body(mode)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    stop = time.monotonic() + seconds
    run = uuid.uuid4().hex[:8]

    async def client(number: int) -> None:
        limits = httpx.Limits(max_keepalive_connections=0)  # new connections spread over the workers
        async with httpx.AsyncClient(timeout=120, limits=limits) as http:
            sent = 0
            while time.monotonic() < stop:
                body = dict(template)
                if mode == "enforce":
                    body["scope"] = {
                        "user_id": f"bench-{run}",
                        "agent_id": f"c{number}",
                        "session_id": str(sent),
                    }
                started = time.perf_counter()
                try:
                    response = await http.post(f"{url}/v1/compact_context", json=body)
                    ok = response.status_code == 200 and response.json().get("status") == "DECIDED"
                    key = "ok" if ok else f"HTTP {response.status_code} {response.json().get('reason', '')}"
                except httpx.HTTPError as exc:
                    key = type(exc).__name__
                if key == "ok":
                    latencies.append(time.perf_counter() - started)
                else:
                    errors[key] = errors.get(key, 0) + 1
                sent += 1

    started = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(concurrency)))
    elapsed = time.monotonic() - started
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0.0

    return {
        "requests": len(latencies),
        "seconds": round(elapsed, 2),
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(pct(0.5), 1),
        "p95_ms": round(pct(0.95), 1),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else 0.0,
        "errors": errors,
    }


def _wait_for_workers(url: str, workers: int, timeout: float = 120.0) -> None:
    import httpx

    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=5) as http:
        while len(seen) < workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(seen)} of {workers} workers answered within {timeout:g} s")
            try:
                seen.add(http.get(f"{url}/healthz").json()["pid"])
            except httpx.HTTPError:
                time.sleep(0.2)


def _measure(workers: int, args: argparse.Namespace, archive: str) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "tracetrim", "serve", "--port", str(port), "--workers", str(workers)]
    command += ["--archive", archive, "--model-backend", args.model, "--log-level", "warning"]
    command += ["--max-connections", str(max(256, args.concurrency * 4))]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_workers(url, workers)
        load = [
            sys.executable,
            __file__,
            "--load",
            url,
            "--concurrency",
            str(args.concurrency),
            "--mode",
            args.mode,
        ]
        subprocess.run([*load, "--seconds", "2"], check=True, capture_output=True)  # warm-up
        done = subprocess.run(
            [*load, "--seconds", str(args.seconds)], check=True, capture_output=True, text=True
        )
        return {"workers": workers, **json.loads(done.stdout)}
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    """Measure each worker count in turn and print one row per count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts (default 1,2,4)")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per worker count")
    parser.add_argument("--concurrency", type=int, default=16, help="clients sending at once (default 16)")
    parser.add_argument("--mode", choices=("enforce", "shadow"), default="enforce")
    parser.add_argument("--archive", default=None, help="archive URL (default: a new SQLite file)")
    parser.add_argument("--model", choices=("learned",), default="learned")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--load", default=None, help=argparse.SUPPRESS)  # the load process itself
    args = parser.parse_args()
    if args.load:
        print(json.dumps(asyncio.run(_load(args.load, args.seconds, args.concurrency, args.mode))))
        return
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for workers in (int(w) for w in args.workers.split(",")):
            archive = args.archive or f"sqlite:{Path(scratch) / f'bench-{workers}.db'}"
            rows.append(_measure(workers, args, archive))
            row = rows[-1]
            print(
                f"workers {row['workers']}: {row['rps']:>7.1f} req/s  p50 {row['p50_ms']:>7.1f} ms  "
                f"p95 {row['p95_ms']:>7.1f} ms  ({row['requests']} answered in {row['seconds']} s, "
                f"errors {row['errors'] or 'none'})",
                flush=True,
            )
    print(f"cpus: {os.cpu_count()}, mode {args.mode}, model {args.model}, concurrency {args.concurrency}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
