"""A classroom pressing Run at once: N distinct seed-sized models and M identical ones submitted together through
the API of the production configuration (tests/deploy/stack.py: the compose file's migrate, web and worker
commands here, against this machine's PostgreSQL and a Redis db of its own), with K workers, each pinned to its own
cores (taskset on CPU; CUDA_VISIBLE_DEVICES, one GPU each, with --device cuda).

The distinct models are the seed with a different constant each (`tanh(x) * 1.1`, ...): different graphs, so
every one compiles its own kernel, as thirty students' edits would. The identical ones are the gallery seed, sent
M times: they should become one run. Prints, per run: submit to readable (the report stored), submit to released
(the worker done with the job: the next one may start), submit to complete (every figure stored: a job that left
its warm compile for an idle worker, workers/deferred.py, completes when that has run), the worker's busy time
(claim to release), the queue wait; then the last readable time and the makespan (the last complete), with the
machine's load before and after.

--embedded runs the embedded default instead (`python -m service serve`: SQLite, its broker, one worker), as on
the GPU machine, which has no PostgreSQL or Redis; --defer on,off runs one pass with jobs leaving their warm
compile for later and one without (PT2SCOPE_DEFER_POST_REPORT), side by side.

Each worker warms up as deployed (the trusted precompiled header its CPU jobs share: without it every CPU job
compiles its own, 1-3 minutes of g++ under load) and the burst is sent once every worker says it is ready
(--no-header skips it, for configs without Inductor); the trusted kernel cache of the gallery is off (it would
answer the identical seeds' kernels); the rate limit is off for the one client. Each pass (worker count) sends codes
of its own, so no pass is answered by an earlier one's runs.

    .venv/bin/python bench/classroom.py N [--identical M] [--workers K] [--device cpu|cuda] [--configs a,b]
    e.g. .venv/bin/python bench/classroom.py 4 --identical 2 --workers 1,2
    GPU: python bench/classroom.py 8 --identical 8 --device cuda --embedded --defer on,off
         (and --configs eager,inductor_default for the short ladder)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
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


def for_pass(code: str, label: str) -> str:
    """Each pass its own codes (a comment): one pass's runs never answer the next pass's submissions."""
    return f"{code}\n# classroom pass: {label}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("distinct", type=int, help="N: distinct seed-sized models")
    parser.add_argument("--identical", type=int, default=0, help="M: copies of the gallery seed, sent too")
    parser.add_argument("--workers", default="1", help="comma-separated worker counts K, one pass each")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--configs", default="", help="comma-separated; default: the device's default ladder")
    parser.add_argument("--embedded", action="store_true", help="the embedded default (SQLite, one worker)")
    parser.add_argument("--defer", default="on", help="on, off or on,off: jobs leave their warm compile for later")
    parser.add_argument(
        "--no-header",
        action="store_true",
        help="skip the workers' precompiled-header warm-up (minutes under load): for configs without Inductor",
    )
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    print(
        f"classroom: {args.distinct} distinct + {args.identical} identical seed-sized jobs at once, device "
        f"{args.device}, configs {','.join(configs) or 'the default ladder'}; "
        f"{'embedded (SQLite, one worker)' if args.embedded else 'PostgreSQL + Redis'}; "
        f"{os.cpu_count()} CPUs ({cpu})"
    )
    # A bench stopped from outside (timeout) still stops the servers and workers it started (their `finally`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    passes = []
    defers = args.defer.split(",")
    with tempfile.TemporaryDirectory(prefix="pt2scope-classroom-") as workdir:
        if args.embedded:
            for defer in defers:
                passes.append(embedded_pass(workdir, defer, args, configs))
                print_pass(passes[-1])
        else:
            with stack.local_deployment(sys.executable, workdir, REDIS_DB, PT2SCOPE_RATE_LIMIT="0") as deployment:
                for count in (int(n) for n in args.workers.split(",")):
                    for defer in defers:
                        passes.append(one_pass(deployment, workdir, count, args, configs, defer))
                        print_pass(passes[-1])
    if len(passes) > 1:
        base = passes[0]
        for result in passes[1:]:
            print(
                f"{result['workers']} workers, defer {result['defer']} against {base['workers']}, defer "
                f"{base['defer']}: last readable "
                f"{base['last_readable'] / result['last_readable']:.2f}x sooner, makespan "
                f"{base['makespan'] / result['makespan']:.2f}x shorter"
            )
    return 0


def embedded_pass(workdir: str, defer: str, args, configs: list[str]) -> dict:
    """One burst against `python -m service serve` (SQLite, its broker, one embedded worker)."""
    load_before = open("/proc/loadavg").read().split()[:3]
    log = os.path.join(workdir, f"serve-{defer}.log")
    with stack.embedded_service(
        sys.executable,
        os.path.join(workdir, f"embedded-defer-{defer}"),
        log,
        "gpu" if args.device == "cuda" else "cpu",
        PT2SCOPE_RATE_LIMIT="0",
        PT2SCOPE_KERNEL_CACHE_GALLERY="none",
        PT2SCOPE_DEFER_POST_REPORT="1" if defer == "on" else "0",
        **({"PT2SCOPE_PCH_WARMUP": "false"} if args.no_header else {}),
    ) as base:
        if args.device == "cpu" and not args.no_header:
            wait_until(
                lambda: "precompiled header ready" in open(log).read(), timeout=900, what="the header", interval=1
            )
        result = burst(base, for_pass_bodies(args, configs, f"embedded, defer {defer}"))
    return {**result, "workers": 1, "defer": defer, "load": (load_before, open("/proc/loadavg").read().split()[:3])}


def for_pass_bodies(args, configs: list[str], label: str) -> list[dict]:
    bodies = [{"code": for_pass(distinct_model(i), label), "filename": f"student{i}.py"} for i in range(args.distinct)]
    bodies += [{"code": for_pass(SEED, label), "filename": "seed.py"} for _ in range(args.identical)]
    for body in bodies:
        body.update(device=args.device, **({"configs": configs} if configs else {}))
    return bodies


def one_pass(deployment, workdir: str, count: int, args, configs: list[str], defer: str = "on") -> dict:
    cores = sorted(os.sched_getaffinity(0))
    per_worker = max(len(cores) // count, 1)
    load_before = open("/proc/loadavg").read().split()[:3]
    workers = []
    with contextlib.ExitStack() as running:
        for i in range(count):
            env = dict(
                PT2SCOPE_INSTANCE=os.path.join(workdir, f"worker-{count}-{defer}-{i}"),
                PT2SCOPE_KERNEL_CACHE_GALLERY="none",
                PT2SCOPE_DEFER_POST_REPORT="1" if defer == "on" else "0",
                **({"PT2SCOPE_PCH_WARMUP": "false"} if args.no_header else {}),
                **deployment.env,
            )
            service = "worker"
            if args.device == "cuda":
                service, env["CUDA_VISIBLE_DEVICES"] = "worker-gpu", str(i)
            worker = stack.LocalService(
                service, sys.executable, os.path.join(workdir, f"worker-{count}-{defer}-{i}.log"), **env
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
        result = burst(base, for_pass_bodies(args, configs, f"{count} worker(s), defer {defer}"))
    load_after = open("/proc/loadavg").read().split()[:3]
    return {**result, "workers": count, "defer": defer, "load": (load_before, load_after)}


def burst(base: str, bodies: list[dict]) -> dict:
    """Submit every body at once, as a class pressing Run; wait until every run is complete (every figure stored,
    deferred warm compiles included)."""
    submitted = time.time()
    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(lambda body: _post(f"{base}/api/runs", body), bodies))
    ids = list(dict.fromkeys(answer["id"] for answer in answers))
    complete: dict[str, float] = {}
    statuses = wait_until(
        lambda: _all_complete(base, ids, complete), timeout=900 * len(ids), what="every run to complete", interval=1.0
    )
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
                "released": released - submitted,
                "complete": complete[status["id"]] - submitted,
                "busy": released - started,
                "worker": status["worker"],
                "start": started,
                "end": released,
            }
        )
    return {
        "phases": _timeline_phases(base, [s["id"] for s in statuses if s["status"] == "succeeded"]),
        "submissions": len(bodies),
        "runs": len(ids),
        "rows": sorted(rows, key=lambda r: r["readable"]),
        "last_readable": max(r["readable"] for r in rows),
        "makespan": max(r["complete"] for r in rows),
    }


def print_pass(result: dict) -> None:
    """One pass's table, printed as soon as the pass ends (a bench stopped later keeps it)."""
    rows = result["rows"]
    print(
        f"\n{result['workers']} worker(s), defer {result['defer']}: {result['submissions']} submissions became "
        f"{result['runs']} runs; load "
        f"before {' '.join(result['load'][0])}, after {' '.join(result['load'][1])}"
    )
    print(
        f"{'file':<14} {'wait s':>7} {'readable s':>11} {'released s':>11} {'complete s':>11} {'worker busy s':>14}"
        "  worker"
    )
    for row in rows:
        print(
            f"{row['file']:<14} {row['wait']:>7.1f} {row['readable']:>11.1f} {row['released']:>11.1f} "
            f"{row['complete']:>11.1f} {row['busy']:>14.1f}  {row['worker']}"
        )
    busy = [r["busy"] for r in rows]
    print(
        f"last readable {result['last_readable']:.1f} s, makespan {result['makespan']:.1f} s; worker busy per job "
        f"median {statistics.median(busy):.1f} s (min {min(busy):.1f}, max {max(busy):.1f}); one worker's sum "
        f"{sum(busy):.1f} s"
    )
    print("timeline phases per run (median s, range):")
    for name, values in result["phases"].items():
        print(f"  {name:<22} {statistics.median(values):7.2f}  ({min(values):.2f}-{max(values):.2f})")


def _all_complete(base: str, ids: list[str], complete: dict[str, float]) -> list[dict] | None:
    """Every run's status once each is complete: failed, or released with no warm compile still to come (its
    first moment seen so goes into ``complete``)."""
    statuses = [_get(f"{base}/api/runs/{run_id}") for run_id in ids]
    for status in statuses:
        if status["id"] in complete or not (status["status"] == "failed" or status["released_at"]):
            continue
        if status["status"] == "succeeded":
            warm = _get(f"{base}/api/runs/{status['id']}/report")["runtime"]["compile_cache"]["warm"] or {}
            if warm.get("status") in ("pending", "deferred"):
                continue
        complete[status["id"]] = time.time()
    return statuses if len(complete) == len(ids) else None


def _timeline_phases(base: str, ids: list[str]) -> dict[str, list[float]]:
    """Each top-level phase of the runs' stored timelines (the worker's, the job's), in seconds: where a worker's
    time per job goes."""
    phases: dict[str, list[float]] = {}
    for run_id in ids:
        for phase in _get(f"{base}/api/runs/{run_id}/report")["timeline"]["phases"]:
            if phase["depth"] == 0:
                phases.setdefault(phase["phase"], []).append(phase["end_s"] - phase["start_s"])
    return phases


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
