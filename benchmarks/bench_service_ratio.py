"""The service's cost over a bare HTTP endpoint: a 200-message history at concurrency 1 and 8.

Run: ``python benchmarks/bench_service_ratio.py [--seconds 10] [--messages 200] [--concurrency 1,8]``.

Two servers start on free loopback ports on this machine, one at a time, each one process: ``tracetrim
serve`` (the learned judge, SHADOW mode, every pair judged) and a bare Starlette app under uvicorn (the
same HTTP stack, h11) whose one endpoint reads the same body, decodes its JSON and answers a small JSON
object. For each concurrency the same clients (httpx, keep-alive connections) post the same history
for ``--seconds`` after a 2 s warm-up, and the table shows requests per second, median and 95th
percentile latency for both, and the ratios: the service's median latency over the bare endpoint's,
and the bare endpoint's requests per second over the service's. The history is `bench_plan`'s
synthetic one (a thought, a call and a ~1.5 kB result in two messages of three).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

BARE_APP = """
import json
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def compact(request):
    body = json.loads(await request.body())
    return JSONResponse({"status": "DECIDED", "messages": len(body["messages"])})


async def healthz(request):
    return JSONResponse({"ok": True})


app = Starlette(routes=[Route("/v1/compact_context", compact, methods=["POST"]), Route("/healthz", healthz)])
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def request_body(size: int) -> bytes:
    """The posted body: ``size`` synthetic messages, SHADOW, every pair judged."""
    from bench_plan import TOOLS, synthetic_history

    body = {
        "messages": synthetic_history(size),
        "eligible_tool_names": list(TOOLS),
        "options": {"mode": "shadow", "minimum_reduction": 0.0},
    }
    return json.dumps(body).encode()


def _wait(url: str, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:g} s")
        time.sleep(0.2)


@contextmanager
def server(kind: str, folder: Path) -> Iterator[str]:
    """A running server of ``kind`` (``service`` or ``bare``); yields its URL."""
    port = _free_port()
    if kind == "service":
        command = [sys.executable, "-m", "tracetrim", "serve", "--port", str(port)]
        command += ["--archive", f"sqlite:{folder / 'bench.db'}", "--model-backend", "learned"]
        command += ["--log-level", "warning"]
    else:
        (folder / "bare_app.py").write_text(BARE_APP, encoding="utf-8")
        command = [sys.executable, "-m", "uvicorn", "bare_app:app", "--port", str(port), "--http", "h11"]
        command += ["--log-level", "warning", "--app-dir", str(folder)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def load(url: str, body: bytes, concurrency: int, seconds: float) -> dict[str, float]:
    """``concurrency`` clients posting ``body`` for ``seconds``: requests per second and latencies."""
    import httpx

    latencies: list[float] = []
    failures = 0
    stop = time.monotonic() + seconds
    headers = {"content-type": "application/json"}

    async def client() -> None:
        nonlocal failures
        async with httpx.AsyncClient(timeout=120) as http:
            while time.monotonic() < stop:
                started = time.perf_counter()
                response = await http.post(f"{url}/v1/compact_context", content=body, headers=headers)
                if response.status_code == 200 and response.json().get("status") == "DECIDED":
                    latencies.append(time.perf_counter() - started)
                else:
                    failures += 1

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    latencies.sort()
    if failures or not latencies:
        raise SystemExit(f"{url}: {failures} failed answers, {len(latencies)} good ones")
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] * 1000,
    }


def main() -> None:
    """Print one row per concurrency: both servers' figures and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--concurrency", default="1,8")
    args = parser.parse_args()
    body = request_body(args.messages)
    levels = [int(n) for n in args.concurrency.split(",")]
    found: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for kind in ("service", "bare"):
            with server(kind, Path(scratch)) as url:
                for concurrency in levels:
                    asyncio.run(load(url, body, concurrency, 2.0))  # warm-up
                    found[(kind, concurrency)] = asyncio.run(load(url, body, concurrency, args.seconds))
    print(f"{args.messages} messages, {len(body):,} bytes a request, {args.seconds:g} s per row")
    print(
        f"{'clients':>7} {'service rps':>11} {'p50 ms':>7} {'p95 ms':>7} {'bare rps':>9} {'p50 ms':>7}"
        f" {'p95 ms':>7} {'p50 ratio':>9} {'rps ratio':>9}"
    )
    for concurrency in levels:
        service, bare = found[("service", concurrency)], found[("bare", concurrency)]
        row: Any = (
            f"{concurrency:>7} {service['rps']:>11.1f} {service['p50_ms']:>7.1f} {service['p95_ms']:>7.1f}"
            f" {bare['rps']:>9.1f} {bare['p50_ms']:>7.1f} {bare['p95_ms']:>7.1f}"
            f" {service['p50_ms'] / bare['p50_ms']:>8.1f}x {bare['rps'] / service['rps']:>8.1f}x"
        )
        print(row)


if __name__ == "__main__":
    main()
