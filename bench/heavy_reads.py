"""One run cannot slow another: a light page's latency while a heavy run's data is requested 12 times at once.

A synthetic run whose Dynamo graph has NODES nodes (the shape the engine records, every node on one line of the
user's file) is stored the way a worker stores it; a real gunicorn (the embedded default's 2 processes x 8
threads) serves it. Measured, interleaved in one run: another run's page (GET /r/<slug>) alone, then while 12
clients fetch the heavy run's graph payload, report download and a line's provenance in a loop.
Usage: python bench/heavy_reads.py [NODES]   (results: docs/benchmarks.md, "Heavy reads")
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from storage import runstore  # noqa: E402
from storage.config import PROJECT_ROOT, Settings  # noqa: E402
from storage.db import migrate, session_factory  # noqa: E402
from workers.launch import web_command  # noqa: E402

HEAVY_CLIENTS = 12


def heavy_report(nodes: int) -> dict:
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        report = json.load(f)
    template = report["dynamo"]["graphs"][0]["nodes"][1]
    report["dynamo"]["graphs"][0]["nodes"] = [
        {**template, "name": f"sin_{i}", "args": [f"sin_{i - 1}"] if i else ["l_x_"]} for i in range(nodes)
    ]
    return report


def store(settings: Settings, report: dict) -> str:
    with session_factory(settings.database_url)() as session:
        run = runstore.create_run(
            session,
            runstore.Submission(
                code=report["source"]["code"],
                filename=report["source"]["filename"],
                device="cpu",
                train=None,
                configs=["eager"],
            ),
        )
        runstore.store_report(session, run.id, report)
        return run.slug


def fetch(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as response:
        response.read()
    return time.perf_counter() - started


def measure(instance: str, nodes: int, light_samples: int = 20) -> dict:
    """{"idle": [s], "loaded": [s], "heavy": [s], "store_s": s} for one server on ``instance``."""
    settings = Settings.from_env(
        instance_path=instance,
        database_url=f"sqlite:///{instance}/pt2scope.sqlite",
        broker_url=f"sqla+sqlite:///{instance}/broker.sqlite",
    )
    migrate(settings.database_url)
    light = store(settings, heavy_report(10))
    started = time.perf_counter()
    heavy = store(settings, heavy_report(nodes))
    store_s = time.perf_counter() - started
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        web_command("127.0.0.1", port),
        cwd=PROJECT_ROOT,
        env={**os.environ, **settings.to_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                fetch(f"{base}/api/health")
                break
            except OSError:
                time.sleep(0.2)
        page = f"{base}/r/{light}"
        fetch(page)
        idle = [fetch(page) for _ in range(light_samples)]
        heavy_urls = [
            f"{base}/r/{heavy}/graphs/dynamo-0.json",
            f"{base}/r/{heavy}/report.json",
            f"{base}/r/{heavy}/provenance.json?line=6",
        ]
        heavy_times, stop = [], threading.Event()

        def client(i: int) -> None:
            while not stop.is_set():
                try:
                    heavy_times.append(fetch(heavy_urls[i % len(heavy_urls)]))
                except OSError:
                    pass

        clients = [threading.Thread(target=client, args=(i,)) for i in range(HEAVY_CLIENTS)]
        for thread in clients:
            thread.start()
        time.sleep(1.0)
        loaded = []
        for _ in range(light_samples):
            loaded.append(fetch(page))
            time.sleep(0.1)
        stop.set()
        for thread in clients:
            thread.join()
    finally:
        server.terminate()
        server.wait()
    return {"idle": idle, "loaded": loaded, "heavy": heavy_times, "store_s": store_s}


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-heavy-") as instance:
        result = measure(instance, nodes)
    print(
        f"load {open('/proc/loadavg').read().split()[0]}; heavy run: {nodes} nodes, stored in "
        f"{result['store_s']:.1f} s; {HEAVY_CLIENTS} heavy clients"
    )
    print("| what | n | median s | min s | max s |\n| --- | --- | --- | --- | --- |")
    for name in ("idle", "loaded", "heavy"):
        times = result[name]
        print(f"| {name} | {len(times)} | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |")


if __name__ == "__main__":
    main()
