"""API latency: report pages under 50 concurrent clients on loopback, through the production web tier.

Runs the compose file's `migrate` and `web` services here (tests/deploy/stack.py: gunicorn with the compose
file's WEB_CONCURRENCY=2 processes x PT2SCOPE_WEB_THREADS=8 threads, PostgreSQL, Redis), stores the largest
recorded report (tests/fixtures/reports/, a real engine run) as one finished run, then 50 keep-alive clients
(one asyncio loop in this process) fetch its pages round-robin: the report tabs and the run's JSON. A bounded
number of requests: --requests in all after --warmup. Each latency is one request's send to its last byte.

The client shares the machine's CPUs with the server: on 2 cores the numbers include that contention.

    .venv/bin/python bench/api_latency.py [--clients 50] [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from storage import runstore  # noqa: E402
from storage.config import Settings  # noqa: E402
from storage.db import session_factory  # noqa: E402
from tests.deploy import stack  # noqa: E402

REDIS_DB = 15  # a db index of its own, flushed before and after
REPORTS = os.path.join(ROOT, "tests", "fixtures", "reports")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    report_path = max(glob.glob(os.path.join(REPORTS, "*.json")), key=os.path.getsize)
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="pt2scope-latency-") as workdir,
        stack.local_deployment(sys.executable, workdir, REDIS_DB) as deployment,
    ):
        slug = store_finished_run(deployment.env["DATABASE_URL"], report_path)
        paths = [
            f"/r/{slug}",
            *(f"/r/{slug}/{tab}" for tab in ("dynamo", "aot", "inductor", "runtime")),
            f"/api/runs/{slug}",
            f"/api/runs/{slug}/report",
        ]
        asyncio.run(measure(deployment.base_url, paths, args.clients, args.warmup))
        started = time.perf_counter()
        timings = asyncio.run(measure(deployment.base_url, paths, args.clients, args.requests))
        wall = time.perf_counter() - started
    print(
        f"\nAPI latency: {args.clients} concurrent keep-alive clients, {args.requests} requests after "
        f"{args.warmup} warm-up, report {os.path.basename(report_path)} "
        f"({os.path.getsize(report_path) // 1024} KiB); gunicorn 2 processes x 8 threads, PostgreSQL; "
        f"{os.cpu_count()} CPUs, load before: {load:.2f}"
    )
    print(f"{'path':<28}{'n':>6}{'median ms':>11}{'p99 ms':>9}{'max ms':>9}{'KiB':>8}")
    everything = []
    for path in paths:
        samples = timings[path]
        everything += [ms for ms, _ in samples]
        label = path.replace(slug, "<id>")
        latencies = sorted(ms for ms, _ in samples)
        print(
            f"{label:<28}{len(latencies):>6}{statistics.median(latencies):>11.1f}{percentile(latencies, 99):>9.1f}"
            f"{latencies[-1]:>9.1f}{samples[0][1] / 1024:>8.0f}"
        )
    everything.sort()
    print(
        f"{'all':<28}{len(everything):>6}{statistics.median(everything):>11.1f}"
        f"{percentile(everything, 99):>9.1f}{everything[-1]:>9.1f}   {len(everything) / wall:.0f} requests/s"
    )
    return 0


def store_finished_run(database_url: str, report_path: str) -> str:
    """The report as a worker stores it: one succeeded run, its sections in the database."""
    with open(report_path) as f:
        report = json.load(f)
    name = os.path.splitext(os.path.basename(report_path))[0]
    example = os.path.join(ROOT, "examples", f"{name}.py")
    with open(example) as f:
        code = f.read()
    settings = Settings.from_env(database_url=database_url)
    with session_factory(settings.database_url)() as session:
        run = runstore.create_run(
            session, runstore.Submission(code=code, filename=f"{name}.py", device="cpu", train=None, configs=["eager"])
        )
        runstore.claim_run(session, run.id, "bench@localhost", os.getpid())
        runstore.store_report(session, run.id, report)
        return run.slug


async def measure(base_url: str, paths: list[str], clients: int, total: int) -> dict[str, list[tuple[float, int]]]:
    """{path: [(milliseconds, body bytes)]}: ``total`` requests over ``clients`` connections, paths in turn."""
    url = urlsplit(base_url)
    timings: dict[str, list[tuple[float, int]]] = {path: [] for path in paths}
    counter = iter(range(total))

    async def client() -> None:
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        try:
            for number in counter:
                path = paths[number % len(paths)]
                started = time.perf_counter()
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode())
                status, body, keep_alive = await read_response(reader)
                timings[path].append(((time.perf_counter() - started) * 1000, len(body)))
                if status != 200:
                    raise SystemExit(f"GET {path}: HTTP {status}")
                if not keep_alive:
                    writer.close()
                    reader, writer = await asyncio.open_connection(url.hostname, url.port)
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return timings


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    if "content-length" not in headers:
        raise SystemExit(f"response without Content-Length: {head[0]}")
    body = await reader.readexactly(int(headers["content-length"]))
    return status, body, headers.get("connection", "").lower() != "close"


def percentile(ordered: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


if __name__ == "__main__":
    sys.exit(main())
