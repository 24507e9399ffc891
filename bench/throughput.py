"""Throughput: jobs per minute through the production configuration on this machine.

Runs the compose file's services here (tests/deploy/stack.py: the `migrate`, `web` and `worker` commands and
environments, against this machine's PostgreSQL and a Redis db of its own), then, for each worker count, starts
that many CPU workers, submits N cheap jobs at once over HTTP (the seed example, configs eager,backend_eager:
no Inductor, so the number is the service's and the engine's start-up cost, not a compile) and waits for all.
Jobs per minute = N / (last finish - first submit), from the server's own timestamps.

Workers skip the precompiled-header warm-up (PT2SCOPE_PCH_WARMUP=false: these configs compile no C++, and the
warm-up would compete for the CPUs while being measured); the rate limit is off for the one client.

    .venv/bin/python bench/throughput.py [--jobs 12] [--workers 1,2] [--configs eager,backend_eager]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import urllib.request
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.deploy import stack  # noqa: E402
from tests.support import SEED, wait_until  # noqa: E402

REDIS_DB = 14  # a db index of its own, flushed before and after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts, one pass each")
    parser.add_argument("--configs", default="eager,backend_eager")
    args = parser.parse_args()
    configs = args.configs.split(",")
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="pt2scope-throughput-") as workdir,
        stack.local_deployment(sys.executable, workdir, REDIS_DB, PT2SCOPE_RATE_LIMIT="0") as deployment,
    ):
        for count in (int(n) for n in args.workers.split(",")):
            rows.append(one_pass(deployment, workdir, count, args.jobs, configs))
    print(
        f"\nthroughput: {args.jobs} jobs of seed, configs {','.join(configs)}; Redis broker, PostgreSQL; "
        f"{os.cpu_count()} CPUs, load before: {rows[0]['load']:.2f}"
    )
    print(
        f"{'workers':>7} {'wall s':>8} {'jobs/min':>9} {'job s median (min-max)':>24} "
        f"{'engine s median':>16} {'wait for a worker s median':>27}"
    )
    for row in rows:
        job = row["job_seconds"]
        print(
            f"{row['workers']:>7} {row['wall']:>8.1f} {row['per_minute']:>9.1f} "
            f"{statistics.median(job):>11.2f} ({min(job):.2f}-{max(job):.2f}){'':>3} "
            f"{statistics.median(row['engine_seconds']):>16.2f} {statistics.median(row['wait_seconds']):>27.2f}"
        )
    return 0


def one_pass(deployment, workdir: str, count: int, jobs: int, configs: list[str]) -> dict:
    load = os.getloadavg()[0]
    with contextlib.ExitStack() as running:
        workers = [
            running.enter_context(
                stack.LocalService(
                    "worker",
                    sys.executable,
                    os.path.join(workdir, f"worker-{count}-{i}.log"),
                    PT2SCOPE_INSTANCE=os.path.join(workdir, f"worker-{count}-{i}"),
                    PT2SCOPE_PCH_WARMUP="false",
                    PT2SCOPE_KERNEL_CACHE_GALLERY="none",
                    **deployment.env,
                )
            )
            for i in range(count)
        ]
        base = deployment.base_url
        wait_until(
            lambda: _status(base)["queues"]["cpu"]["workers"] == count,
            timeout=120,
            what=f"{count} workers to beat",
            interval=0.5,
        )
        ids = [
            _post(f"{base}/api/runs", {"code": SEED, "filename": "seed.py", "configs": configs})["id"]
            for _ in range(jobs)
        ]
        statuses = wait_until(lambda: _all_finished(base, ids), timeout=60 * jobs, what="the jobs", interval=1.0)
    failed = [s for s in statuses if s["status"] != "succeeded"]
    if failed:
        logs = "\n".join(f"--- {worker.log_path}:\n{worker.output()}" for worker in workers)
        raise SystemExit(f"{len(failed)} jobs failed: {failed[0]['error']}\n{logs}")
    created = [_time(s["created_at"]) for s in statuses]
    started = [_time(s["started_at"]) for s in statuses]
    finished = [_time(s["finished_at"]) for s in statuses]
    wall = (max(finished) - min(created)).total_seconds()
    return {
        "workers": count,
        "wall": wall,
        "per_minute": jobs / wall * 60,
        "load": load,
        "job_seconds": [(f - s).total_seconds() for s, f in zip(started, finished)],
        "engine_seconds": [s["engine_seconds"] for s in statuses],
        "wait_seconds": [(s - c).total_seconds() for c, s in zip(created, started)],
    }


def _all_finished(base: str, ids: list[str]) -> list[dict] | None:
    statuses = [_get(f"{base}/api/runs/{run_id}") for run_id in ids]
    return statuses if all(s["status"] in ("succeeded", "failed") for s in statuses) else None


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso.removesuffix("Z"))


def _status(base: str) -> dict:
    return _get(f"{base}/api/status")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


if __name__ == "__main__":
    sys.exit(main())
