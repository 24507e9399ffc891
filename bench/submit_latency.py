"""Submit-to-report latency of the embedded default (`make run`), against the engine's own time for the same job.

Starts `python -m service serve` on a free port with a fresh instance folder (SQLite data, SQLite broker, one
embedded worker), submits the seed example over HTTP as a client would, polls the API every 50 ms, and fetches
the report. Overhead = submit-to-report wall time minus report["runtime"]["job_seconds"] (the engine's run_job,
child start to report). One warm-up run is not counted (the worker's first job, started before it beat).

    .venv/bin/python bench/submit_latency.py [--runs 5] [--configs eager,inductor_default]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLL_S = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--configs", default="", help="comma-separated; default: the engine's CPU ladder")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "examples", "seed.py")) as f:
        seed = f.read()
    configs = [c for c in args.configs.split(",") if c]

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-") as instance:
        env = {**os.environ, "PT2SCOPE_INSTANCE": instance}
        for key in ("DATABASE_URL", "CELERY_BROKER_URL"):  # the embedded default, whatever the shell has set
            env.pop(key, None)
        server = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(base + "/", timeout=60)
            rows = [_one_job(base, seed, configs) for _ in range(args.runs + 1)][1:]
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    _print_table(rows, configs)
    return 0


def _one_job(base: str, code: str, configs: list[str]) -> dict:
    body = json.dumps({"code": code, "filename": "seed.py", "device": "cpu", "configs": configs}).encode()
    started = time.perf_counter()
    request = urllib.request.Request(base + "/api/runs", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        run = json.load(response)
    while True:
        status = _get_json(f"{base}/api/runs/{run['id']}")
        if status["status"] in ("succeeded", "failed"):
            break
        time.sleep(POLL_S)
    report = _get_json(f"{base}/api/runs/{run['id']}/report")
    total = time.perf_counter() - started
    if status["status"] != "succeeded":
        raise SystemExit(f"run failed: {status['error']}")
    engine = report["runtime"]["job_seconds"]
    return {"total": total, "engine": engine, "overhead": total - engine}


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url) as response:
        return json.load(response)


def _wait_for(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url).close()
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {timeout} s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _print_table(rows: list[dict], configs: list[str]) -> None:
    print(f"seed, configs: {','.join(configs) or 'engine default (CPU ladder)'}; {len(rows)} runs after 1 warm-up")
    print(f"{'seconds':<28}{'median':>8}{'min':>8}{'max':>8}")
    for key, label in (
        ("total", "submit to report"),
        ("engine", "engine (runtime.job_seconds)"),
        ("overhead", "overhead"),
    ):
        values = [row[key] for row in rows]
        print(f"{label:<28}{statistics.median(values):>8.2f}{min(values):>8.2f}{max(values):>8.2f}")


if __name__ == "__main__":
    sys.exit(main())
