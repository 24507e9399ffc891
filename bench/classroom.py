"""A classroom pressing Run at once: N distinct seed-sized models and M identical ones submitted together through
the API of the production configuration (tests/deploy/stack.py: the compose file's migrate, web and worker
commands here, against this machine's PostgreSQL and a Redis db of its own), with K workers, each pinned to its own
cores (taskset on CPU; CUDA_VISIBLE_DEVICES, one GPU each, with --device cuda).

The distinct models are the seed with a different constant each (`tanh(x) * 1.1`, ...): different graphs, so
every one compiles its own kernel, as thirty students' edits would. The identical ones are the gallery seed, sent
M times: they should become one run. Prints, per run: submit to readable (the report stored), submit to complete
(the worker done: every figure stored), the worker's busy time (claim to release), the queue wait; then the last
readable time and the makespan, with the machine's load before and after.

Each worker warms up as deployed (the trusted precompiled header its CPU jobs share: without it every CPU job
compiles its own, 1-3 minutes of g++ under load) and the burst is sent once every worker says it is ready
(--no-header skips it, for configs without Inductor); the trusted kernel cache of the gallery is off (it would
answer the identical seeds' kernels); the rate limit is off for the one client. Each pass (worker count) sends codes
of its own, so no pass is answered by an earlier one's runs.

    .venv/bin/python bench/classroom.py N [--identical M] [--workers K] [--device cpu|cuda] [--configs a,b]
    e.g. .venv/bin/python bench/classroom.py 4 --identical 2 --workers 1,2
    GPU: .venv/bin/python bench/classroom.py 8 --identical 8 --device cuda --workers 1
         (and --configs eager,inductor_default for the short ladder)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.deploy import stack  # noqa: E402
from tests.support import SEED, wait_until  # noqa: E402

REDIS_DB = 8  # a db index of its own, flushed before and after


def distinct_model(i: int) -> str:
    return SEED.replace("torch.tanh(x)", f"torch.tanh(x) * {1 + (i + 1) / 10:g}")


def for_pass(code: str, count: int) -> str:
    """Each pass its own codes (a comment): one pass's runs never answer the next pass's submissions."""
    return f"{code}\n# classroom pass with {count} worker(s)\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("distinct", type=int, help="N: distinct seed-sized models")
    parser.add_argument("--identical", type=int, default=0, help="M: copies of the gallery seed, sent too")
    parser.add_argument("--workers", default="1", help="comma-separated worker counts K, one pass each")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--configs", default="", help="comma-separated; default: the device's default ladder")
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="skip the workers' precompiled-header warm-up (minutes under load): for configs without Inductor",
    )
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    passes = []
    with (
        tempfile.TemporaryDirectory(prefix="pt2scope-classroom-") as workdir,
        stack.local_deployment(sys.executable, workdir, REDIS_DB, PT2SCOPE_RATE_LIMIT="0") as deployment,
    ):
        for count in (int(n) for n in args.workers.split(",")):
            passes.append(one_pass(deployment, workdir, count, args, configs))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    print(
        f"\nclassroom: {args.distinct} distinct + {args.identical} identical seed-sized jobs at once, device "
        f"{args.device}, configs {','.join(configs) or 'the default ladder'}; PostgreSQL + Redis; "
        f"{os.cpu_count()} CPUs ({cpu})"
    )
    for result in passes:
        print_pass(result)
    if len(passes) > 1:
        base = passes[0]
        for result in passes[1:]:
            print(
                f"{result['workers']} workers against {base['workers']}: last readable "
                f"{base['last_readable'] / result['last_readable']:.2f}x sooner, makespan "
                f"{base['makespan'] / result['makespan']:.2f}x shorter"
            )
    return 0


def one_pass(deployment, workdir: str, count: int, args, configs: list[str]) -> dict:
    cores = sorted(os.sched_getaffinity(0))
    per_worker = max(len(cores) // count, 1)
    load_before = open("/proc/loadavg").read().split()[:3]
    workers = []
    with contextlib.ExitStack() as running:
        for i in range(count):
            env = dict(
                PT2SCOPE_INSTANCE=os.path.join(workdir, f"worker-{count}-{i}"),
                PT2SCOPE_KERNEL_CACHE_GALLERY="none",
                **({"PT2SCOPE_PCH_WARMUP": "false"} if args.no_header else {}),
                **deployment.env,
            )
            service = "worker"
            if args.device == "cuda":
                service, env["CUDA_VISIBLE_DEVICES"] = "worker-gpu", str(i)
            worker = stack.LocalService(
                service, sys.executable, os.path.join(workdir, f"worker-{count}-{i}.log"), **env
            )
            mine = cores[(i * per_worker) % len(cores) :][:per_worker]
            worker.command = ["taskset", "-c", ",".join(map(str, mine)), *worker.command]
            workers.append(running.enter_context(worker))
        base = deployment.base_url
        queue = "gpu" if args.device == "cuda" else "cpu"
        wait_until(
            lambda: _get(f"{base}/api/status")["queues"][queue]["workers"] == count,
            timeout=180,
            what=f"{count} workers to beat",
            interval=0.5,
        )
        if (
            args.device == "cpu" and not args.no_header
        ):  # the header every CPU job shares (workers.tasks._warm_up_caches)
            wait_until(
                lambda: all(
                    "precompiled header ready" in w.output() or "warm-up failed" in w.output() for w in workers
                ),
                timeout=900,
                what="the workers' precompiled headers",
                interval=1.0,
            )
        bodies = [
            {"code": for_pass(distinct_model(i), count), "filename": f"student{i}.py"} for i in range(args.distinct)
        ]
        bodies += [{"code": for_pass(SEED, count), "filename": "seed.py"} for _ in range(args.identical)]
        for body in bodies:
            body.update(device=args.device, **({"configs": configs} if configs else {}))
        submitted = time.time()
        with ThreadPoolExecutor(len(bodies)) as pool:  # at once, as a class pressing Run
            answers = list(pool.map(lambda body: _post(f"{base}/api/runs", body), bodies))
        ids = list(dict.fromkeys(answer["id"] for answer in answers))
        statuses = wait_until(
            lambda: _all_released(base, ids), timeout=900 * len(ids), what="every run to complete", interval=1.0
        )
    load_after = open("/proc/loadavg").read().split()[:3]
    failed = [s for s in statuses if s["status"] != "succeeded"]
    if failed:
        raise SystemExit(f"{len(failed)} run(s) failed: {failed[0]['error']}")
    rows = []
    for status in statuses:
        created, started = _time(status["created_at"]), _time(status["started_at"])
        finished, released = _time(status["finished_at"]), _time(status["released_at"])
        rows.append(
            {
                "file": status["filename"],
                "wait": started - created,
                "readable": finished - submitted,
                "complete": released - submitted,
                "busy": released - started,
                "worker": status["worker"],
                "start": started,
                "end": released,
            }
        )
    return {
        "workers": count,
        "submissions": len(bodies),
        "runs": len(ids),
        "rows": sorted(rows, key=lambda r: r["readable"]),
        "last_readable": max(r["readable"] for r in rows),
        "makespan": max(r["complete"] for r in rows),
        "load": (load_before, load_after),
    }


def print_pass(result: dict) -> None:
    rows = result["rows"]
    print(
        f"\n{result['workers']} worker(s): {result['submissions']} submissions became {result['runs']} runs; load "
        f"before {' '.join(result['load'][0])}, after {' '.join(result['load'][1])}"
    )
    print(f"{'file':<14} {'wait s':>7} {'readable s':>11} {'complete s':>11} {'worker busy s':>14}  worker")
    for row in rows:
        print(
            f"{row['file']:<14} {row['wait']:>7.1f} {row['readable']:>11.1f} {row['complete']:>11.1f} "
            f"{row['busy']:>14.1f}  {row['worker']}"
        )
    busy = [r["busy"] for r in rows]
    print(
        f"last readable {result['last_readable']:.1f} s, makespan {result['makespan']:.1f} s; worker busy per job "
        f"median {statistics.median(busy):.1f} s (min {min(busy):.1f}, max {max(busy):.1f}); one worker's sum "
        f"{sum(busy):.1f} s"
    )


def _all_released(base: str, ids: list[str]) -> list[dict] | None:
    statuses = [_get(f"{base}/api/runs/{run_id}") for run_id in ids]
    done = all(s["status"] == "failed" or (s["status"] == "succeeded" and s["released_at"]) for s in statuses)
    return statuses if done else None


def _time(iso: str | None) -> float:
    return datetime.fromisoformat(iso.removesuffix("Z")).replace(tzinfo=UTC).timestamp() if iso else float("nan")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


if __name__ == "__main__":
    sys.exit(main())
