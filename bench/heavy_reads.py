"""One run cannot slow another: a light page's latency while a heavy run's data is requested 12 times at once, or
while 16 clients diff two large runs.

A synthetic run whose Dynamo graph has NODES nodes (the shape the engine records, every node on one line of the
user's file) is stored the way a worker stores it; a real gunicorn (the embedded default's 2 processes x 8
threads) serves it. Measured, interleaved in one run: another run's page (GET /r/<slug>) alone, then while 12
clients fetch the heavy run's graph payload, report download and a line's provenance in a loop; with --diff, the
health check and that page while 16 clients diff two runs of NODES nodes that differ in every third node.
Usage: python bench/heavy_reads.py [NODES] [--diff]   (results: docs/benchmarks.md, "Heavy reads")
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

from collections import Counter  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from urllib.error import HTTPError  # noqa: E402

from storage import runstore  # noqa: E402
from storage.config import PROJECT_ROOT, Settings  # noqa: E402
from storage.db import migrate, session_factory  # noqa: E402
from workers.launch import web_command  # noqa: E402

HEAVY_CLIENTS = 12
DIFF_CLIENTS = 16


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


def _settings(instance: str) -> Settings:
    settings = Settings.from_env(
        instance_path=instance,
        database_url=f"sqlite:///{instance}/pt2scope.sqlite",
        broker_url=f"sqla+sqlite:///{instance}/broker.sqlite",
    )
    migrate(settings.database_url)
    return settings


@contextmanager
def _server(settings: Settings):
    """A real gunicorn on a free port, as the embedded default runs it; yields its base URL once it answers."""
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
        yield base
    finally:
        server.terminate()
        server.wait()


def _while_clients(urls: list[str], clients: int, probes: list[str], samples: int) -> tuple[list, list, Counter]:
    """``clients`` threads fetch ``urls`` in a loop while each probe URL is fetched ``samples`` times: (probe
    times, client times, client status counts). The clients run in a process of their own, as other users' browsers
    do: threads of this one would make each probe wait on this process's GIL while they copy 50 MB responses, a
    wait no user's page has."""
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--clients", str(clients), *urls],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "started\n"
    time.sleep(1.0)
    loaded = []
    for _ in range(samples):
        for probe in probes:
            loaded.append(fetch(probe))
        time.sleep(0.1)
    out, _ = process.communicate("")  # stdin closed: the clients stop and report
    result = json.loads(out)
    return loaded, result["times"], Counter({int(k) if k.isdigit() else k: v for k, v in result["statuses"].items()})


def _clients_main(clients: int, urls: list[str]) -> None:
    """The client process of _while_clients: fetches until its stdin closes, then prints its times and statuses."""
    times, statuses, stop = [], Counter(), threading.Event()

    def client(i: int) -> None:
        while not stop.is_set():
            try:
                times.append(fetch(urls[i % len(urls)]))
                statuses[200] += 1
            except HTTPError as exc:
                statuses[exc.code] += 1
            except OSError:
                statuses["error"] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    print("started", flush=True)
    sys.stdin.read()
    stop.set()
    for thread in threads:
        thread.join()
    print(json.dumps({"times": times, "statuses": statuses}))


def measure(instance: str, nodes: int, light_samples: int = 20) -> dict:
    """{"idle": [s], "loaded": [s], "heavy": [s], "store_s": s} for one server on ``instance``."""
    settings = _settings(instance)
    light = store(settings, heavy_report(10))
    started = time.perf_counter()
    heavy = store(settings, heavy_report(nodes))
    store_s = time.perf_counter() - started
    with _server(settings) as base:
        page = f"{base}/r/{light}"
        fetch(page)
        idle = [fetch(page) for _ in range(light_samples)]
        heavy_urls = [
            f"{base}/r/{heavy}/graphs/dynamo-0.json",
            f"{base}/r/{heavy}/report.json",
            f"{base}/r/{heavy}/provenance.json?line=6",
        ]
        loaded, heavy_times, _ = _while_clients(heavy_urls, HEAVY_CLIENTS, [page], light_samples)
    return {"idle": idle, "loaded": loaded, "heavy": heavy_times, "store_s": store_s}


def measure_diffs(instance: str, nodes: int, light_samples: int = 15) -> dict:
    """{"idle": [s], "loaded": [s] (health and a light page), "diff": [s], "statuses": {code: n}} while
    DIFF_CLIENTS clients diff two runs of ``nodes`` nodes."""
    settings = _settings(instance)
    light = store(settings, heavy_report(10))
    changed = heavy_report(nodes)
    for i, node in enumerate(changed["dynamo"]["graphs"][0]["nodes"]):
        if i % 3 == 0:
            node["target"] = "torch.cos"
    a, b = store(settings, heavy_report(nodes)), store(settings, changed)
    with _server(settings) as base:
        probes = [f"{base}/api/health", f"{base}/r/{light}"]
        idle = [fetch(probe) for _ in range(light_samples) for probe in probes]
        loaded, diff_times, statuses = _while_clients([f"{base}/api/diff/{a}/{b}"], DIFF_CLIENTS, probes, light_samples)
    return {"idle": idle, "loaded": loaded, "diff": diff_times, "statuses": dict(statuses)}


def main() -> None:
    if sys.argv[1:2] == ["--clients"]:
        _clients_main(int(sys.argv[2]), sys.argv[3:])
        return
    args = [a for a in sys.argv[1:] if a != "--diff"]
    nodes = int(args[0]) if args else 200_000
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-heavy-") as instance:
        if "--diff" in sys.argv:
            result = measure_diffs(instance, nodes)
            print(
                f"load {open('/proc/loadavg').read().split()[0]}; two runs of {nodes} nodes, {DIFF_CLIENTS} diff clients"
            )
            print(f"diff answers: {result['statuses']}")
        else:
            result = measure(instance, nodes)
            print(
                f"load {open('/proc/loadavg').read().split()[0]}; heavy run: {nodes} nodes, stored in "
                f"{result['store_s']:.1f} s; {HEAVY_CLIENTS} heavy clients"
            )
    print("| what | n | median s | min s | max s |\n| --- | --- | --- | --- | --- |")
    for name in ("idle", "loaded", "diff" if "--diff" in sys.argv else "heavy"):
        times = result[name]
        print(f"| {name} | {len(times)} | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |")


if __name__ == "__main__":
    main()
