"""Concurrent submissions to `python -m service serve` (one embedded worker): N clients submit N distinct files at
once over HTTP. Reports each POST's latency, each run's submit-to-finish time, that every run finished once with a
true status, and how fast a finished run's report pages answered meanwhile (a reader loops over the Overview and
Runtime pages of a run stored before the burst: p50, p99).

    .venv/bin/python bench/concurrent_submissions.py [N] [--postgres] [--code FILE]   (results: docs/benchmarks.md)

--postgres: the production configuration, PostgreSQL (a scratch database on 127.0.0.1:5432) and Redis (db 13 of
127.0.0.1:6379, flushed), instead of the embedded SQLite data and broker. --code FILE: submit FILE instead of the
seed (an attack that defines a model, bench/models/fork_bomb_model.py: how the pages fare while it runs). After the
burst one more seed is submitted: the next job must succeed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = open(os.path.join(ROOT, "examples", "seed.py")).read()


def call(base: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode() if body else None, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@contextmanager
def production_services():
    """A scratch PostgreSQL database and an emptied Redis database; yields their URLs, removes both after."""
    import psycopg
    import redis

    admin_url, database = "postgresql://postgres@127.0.0.1:5432/test", f"pt2scope_bench_{uuid.uuid4().hex[:10]}"
    broker = "redis://127.0.0.1:6379/13"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    redis.Redis.from_url(broker).flushdb()
    try:
        yield {"DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}", "CELERY_BROKER_URL": broker}
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        redis.Redis.from_url(broker).flushdb()


def page_seconds(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
    return time.perf_counter() - started


def wait_finished(base: str, run_id: str) -> str:
    while (status := call(base, f"/api/runs/{run_id}")["status"]) not in ("succeeded", "failed"):
        time.sleep(0.2)
    return status


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    argv = sys.argv[1:]
    code = CODE
    if "--code" in argv:
        at = argv.index("--code")
        with open(argv[at + 1]) as f:
            code = f.read()
        argv = argv[:at] + argv[at + 2 :]
    args = [a for a in argv if not a.startswith("--")]
    count = int(args[0]) if args else 10
    if "--postgres" in argv:
        with production_services() as services:
            measure(count, services, code)
    else:
        measure(count, {}, code)


def measure(count: int, services: dict, submitted: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-submit-") as instance, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {
            **os.environ,
            "PT2SCOPE_INSTANCE": instance,
            "PT2SCOPE_PCH_WARMUP": "0",
            "PT2SCOPE_KERNEL_CACHE_GALLERY": "none",
            "PT2SCOPE_RATE_LIMIT": "0",
            **services,
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    if call(base, "/api/status")["workers"]:
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            stored = call(base, "/api/runs", {"code": CODE, "configs": ["eager"]})["id"]
            wait_finished(base, stored)
            pages, reading = [], threading.Event()

            def reader() -> None:  # a reader of a finished report, all through the burst
                while not reading.is_set():
                    for tab in ("", "/runtime"):
                        pages.append(page_seconds(f"{base}/r/{stored}{tab}"))

            posts, finished, errors, start = {}, {}, [], threading.Barrier(count)

            def submit(i: int) -> None:
                start.wait()
                t0 = time.perf_counter()
                code = submitted + f"\n# client {i}: a file of its own (identical ones would share one run)\n"
                run_id = call(base, "/api/runs", {"code": code, "configs": ["eager"]})["id"]
                posts[run_id] = (t0, time.perf_counter() - t0)

            threads = [threading.Thread(target=submit, args=(i,)) for i in range(count)]
            read = threading.Thread(target=reader)
            read.start()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            while len(finished) < count:
                for run_id, (t0, _) in posts.items():
                    if run_id not in finished:
                        status = call(base, f"/api/runs/{run_id}")
                        if status["status"] in ("succeeded", "failed"):
                            finished[run_id] = (status["status"], time.perf_counter() - t0)
                            if status["error"]:  # what ended it (an attack's: which limit)
                                errors.append(f"{status['error']['kind']}: {status['error']['message'][:150]}")
                time.sleep(0.2)
            after = time.perf_counter()  # the next job after the burst: one more seed, while the reader goes on
            next_id = call(base, "/api/runs", {"code": CODE + "\n# the next job\n", "configs": ["eager"]})["id"]
            next_job = (wait_finished(base, next_id), time.perf_counter() - after)
            reading.set()
            read.join()
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait()
    post_s = [p for _, p in posts.values()]
    done_s = sorted(d for _, d in finished.values())
    statuses = sorted(s for s, _ in finished.values())
    print(
        f"load {open('/proc/loadavg').read().split()[0]}; {'PostgreSQL + Redis' if services else 'SQLite'}; "
        f"{count} distinct submissions at once ({len(posts)} runs), one embedded worker; "
        f"statuses: {statuses.count('succeeded')} succeeded, {statuses.count('failed')} failed"
    )
    print(
        f"report pages meanwhile ({len(pages)} reads): p50 {percentile(pages, 0.5) * 1000:.0f} ms, "
        f"p99 {percentile(pages, 0.99) * 1000:.0f} ms, max {max(pages) * 1000:.0f} ms"
    )
    for error in errors:
        print(f"failed: {error}")
    print(f"the next job (a seed, submitted once the burst finished): {next_job[0]} in {next_job[1]:.1f} s")
    print(f"POST latency: median {statistics.median(post_s):.3f} s (min {min(post_s):.3f}, max {max(post_s):.3f})")
    print(
        f"submit to finished: first {done_s[0]:.1f} s, median {statistics.median(done_s):.1f} s, last "
        f"{done_s[-1]:.1f} s ({done_s[-1] / count:.1f} s per run)"
    )


if __name__ == "__main__":
    main()
