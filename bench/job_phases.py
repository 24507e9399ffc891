"""Where a job's seconds go, phase by phase, on a warm embedded worker, against a plain user script.

Starts `python -m service serve` on a free port with a fresh instance folder (SQLite data and broker, one embedded
worker, its shared precompiled header), waits for the header and one warm-up job (not counted), then interleaves
``--runs`` jobs submitted through the API (``fresh: true``, so none is answered from an earlier identical run)
with the plain-script reference: a fresh `python` that imports torch, compiles the same file's model and calls it
once, with a new, empty kernel cache (as every job has). Each job's phases come from its report's ``timeline``
(contract.timeline.phase_seconds); the client's own times are measured beside them: submit to the report
readable (the run succeeded: an Inductor job's report is stored before its warm compile) and to complete (the
warm compile filled in). It waits for the worker's trusted caches (precompiled header, kernel cache) first. Every
figure carries the 1-minute load average read before it. ``--device cuda`` submits GPU jobs (a GPU worker), and
the plain script then runs on the GPU.

``--env NAME=VALUE`` (repeatable) starts a second instance beside the first with those settings, and each round
submits to both and runs the script, so all of them see the same load. ``--compare`` is ``--env
PT2SCOPE_PRESTART=0``: the default worker prestarts the next job's sandboxed child, the second does not. After
each job the bench waits ``--settle`` seconds, so whatever a worker does after a job (prestarting the next child:
its imports) does not overlap the next measurement. With two instances a last table puts them side by side.

    .venv/bin/python bench/job_phases.py [--runs 5] [--configs eager,inductor_default] [--device cpu|cuda]
        [--compare | --env K=V] [--settle 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from submit_latency import POLL_S, ROOT, _free_port, _get_json, _wait_for  # noqa: E402

from contract.timeline import phase_seconds  # noqa: E402

SEED_PATH = os.path.join(ROOT, "examples", "seed.py")
# The reference: what a user would run by hand, timed from inside (import, first compiled call) and outside.
SCRIPT = """
import json, runpy, sys, time
started = time.time()
import torch
imported = time.time()
device = sys.argv[2]
program = runpy.run_path(sys.argv[1])
model, inputs = program["model"], [t.to(device) for t in program["example_inputs"]]
if isinstance(model, torch.nn.Module):
    model = model.to(device)
compiled = torch.compile(model)
compiled(*inputs)
if device == "cuda":
    torch.cuda.synchronize()
called = time.time()
print(json.dumps({"import_torch": imported - started, "compile_and_call": called - imported}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--configs", default="eager,inductor_default", help="empty: the device's default ladder")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", help="also write every measurement here")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE: a second instance with these")
    parser.add_argument("--compare", action="store_true", help="the same as --env PT2SCOPE_PRESTART=0")
    parser.add_argument("--settle", type=float, default=15.0, help="seconds to wait after each job")
    args = parser.parse_args()
    if args.compare:
        args.env.append("PT2SCOPE_PRESTART=0")
    configs = [c for c in args.configs.split(",") if c]
    with open(SEED_PATH) as f:
        seed = f.read()

    variants = {"default settings": {}}
    if args.env:
        variants[" ".join(args.env)] = dict(item.split("=", 1) for item in args.env)
    jobs = {name: [] for name in variants}
    scripts = []
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-") as folder:
        servers = {
            name: _serve(os.path.join(folder, str(i)), extra) for i, (name, extra) in enumerate(variants.items())
        }
        try:
            for base, instance, env, _ in servers.values():
                _wait_for(base + "/", timeout=120)
                _wait_for_worker(base, "gpu" if args.device == "cuda" else "cpu", timeout=120)
                _wait_for_pch(instance, env, timeout=900)
            for base, *_ in servers.values():
                _one_job(base, seed, configs, args.device)  # warm-up: the worker's first job
                time.sleep(args.settle)
            for _ in range(args.runs):
                for name, (base, *_) in servers.items():
                    jobs[name].append(_one_job(base, seed, configs, args.device))
                    print(json.dumps({"instance": name, **jobs[name][-1]}), flush=True)  # kept if cut short
                    time.sleep(args.settle)
                scripts.append(_one_script(args.device))
        finally:
            for *_, server in servers.values():
                os.killpg(server.pid, signal.SIGTERM)  # the group this started: gunicorn and the worker
                server.wait(timeout=60)
    for name, rows in jobs.items():
        print(f"== {name}")
        _print_table(rows, scripts, configs)
    if len(jobs) == 2:
        _print_side_by_side(jobs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"configs": configs, "jobs": jobs, "scripts": scripts, "cpu": _cpu()}, f, indent=1)
    return 0


def _serve(instance: str, extra_env: dict):
    """An embedded instance (`python -m service serve`) in its own folder and process group."""
    os.makedirs(instance)
    port = _free_port()
    env = {**os.environ, "PT2SCOPE_INSTANCE": instance, **extra_env}
    for key in ("DATABASE_URL", "CELERY_BROKER_URL"):  # the embedded default, whatever the shell has set
        env.pop(key, None)
    server = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return f"http://127.0.0.1:{port}", instance, env, server


def _wait_for_worker(base: str, queue: str, timeout: float) -> None:
    """The web app refuses a GPU job until a worker of the gpu queue is online (its heartbeat): wait for one."""
    deadline = time.monotonic() + timeout
    while not _get_json(base + "/api/status")["queues"].get(queue, {}).get("workers"):
        if time.monotonic() > deadline:
            raise SystemExit(f"no worker of the {queue} queue came online within {timeout} s")
        time.sleep(0.5)


def _wait_for_pch(instance: str, env: dict, timeout: float) -> None:
    """The worker's shared precompiled header is built at start; a job that starts before it compiles its own."""
    if env.get("PT2SCOPE_ISOLATION") == "none" or env.get("PT2SCOPE_PCH_WARMUP", "1") in ("0", "false"):
        return
    deadline = time.monotonic() + timeout
    kernel_cache = env.get("PT2SCOPE_KERNEL_CACHE_GALLERY", "seed.py") != "none"  # built after the header
    while not os.path.exists(os.path.join(instance, "pch", ".built-for")) or (
        kernel_cache and not os.path.exists(os.path.join(instance, "kernel-cache", "current"))
    ):
        if time.monotonic() > deadline:
            raise SystemExit(f"the shared precompiled header and kernel cache were not built within {timeout} s")
        time.sleep(0.5)


def _one_job(base: str, code: str, configs: list[str], device: str) -> dict:
    """One fresh job through the API: the seconds until its report is readable (the run succeeded, its warm
    compile possibly still measuring) and until it is complete."""
    load = _load()
    body = json.dumps({"code": code, "filename": "seed.py", "device": device, "configs": configs, "fresh": True})
    started = time.perf_counter()
    request = urllib.request.Request(
        base + "/api/runs", data=body.encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:
        run = json.load(response)
    while (status := _get_json(f"{base}/api/runs/{run['id']}"))["status"] not in ("succeeded", "failed"):
        time.sleep(POLL_S)
    readable = time.perf_counter() - started
    while status.get("still_measuring"):
        time.sleep(POLL_S)
        status = _get_json(f"{base}/api/runs/{run['id']}")
    report = _get_json(f"{base}/api/runs/{run['id']}/report")
    total = time.perf_counter() - started
    if report["status"] != "ok":
        raise SystemExit(f"run failed: {report['failure']}")
    timeline = report["timeline"]
    return {
        "load": load,
        "client_readable_s": readable,
        "client_total_s": total,
        "report_stored_s": timeline.get("report_stored_s") or timeline["wall_s"],
        "wall_s": timeline["wall_s"],
        "untracked_s": timeline["untracked_s"],
        "phases": phase_seconds(timeline),
        "compile_workers_start_s": sum(
            p["end_s"] - p["start_s"] for p in timeline["phases"] if p["phase"] == "compile_workers_start"
        ),
        "shared_pch": report["isolation"]["shared_pch"],
        "prestarted": timeline.get("prestarted", False),
        "bandwidth_measured_in_prestart": report["runtime"]["memory_bandwidth"].get("measured_in_prestart", False),
        "caches": report["caches"],
    }


def _one_script(device: str) -> dict:
    load = _load()
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-script-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, SEED_PATH, device], env=env, capture_output=True, text=True, check=True
        ).stdout
        total = time.perf_counter() - started
    return {"load": load, "process_s": total, **json.loads(out.strip().splitlines()[-1])}


def _print_table(jobs: list[dict], scripts: list[dict], configs: list[str]) -> None:
    def row(label, values, load=None):
        spread = f"{min(values):>7.2f}{max(values):>7.2f}"
        print(f"{label:<36}{statistics.median(values):>8.2f}{spread}" + (f"   load {load}" if load else ""))

    loads = [j["load"] for j in jobs] + [s["load"] for s in scripts]
    print(
        f"seed, configs {','.join(configs)}; {len(jobs)} jobs on a warm worker (after 1 warm-up), interleaved with "
        f"{len(scripts)} plain scripts; {_cpu()}; 1-min load {min(loads):.1f}-{max(loads):.1f} "
        f"(median {statistics.median(loads):.1f})"
    )
    print(f"{'seconds':<36}{'median':>8}{'min':>7}{'max':>7}")
    names = []
    for job in jobs:
        names += [name for name in job["phases"] if name not in names]
    for name in names:
        row(f"  {name}", [job["phases"].get(name, 0.0) for job in jobs])
    row("  (compile_workers_start, inside)", [job["compile_workers_start_s"] for job in jobs])
    row("job: request -> report stored (readable)", [job["report_stored_s"] for job in jobs])
    row("job: timeline wall (request -> complete)", [job["wall_s"] for job in jobs])
    row("job: untracked", [job["untracked_s"] for job in jobs])
    row("job: client submit -> report readable", [job["client_readable_s"] for job in jobs])
    row("job: client submit -> complete", [job["client_total_s"] for job in jobs])
    row("script: import torch", [s["import_torch"] for s in scripts])
    row("script: compile + first call", [s["compile_and_call"] for s in scripts])
    row("script: process start to exit", [s["process_s"] for s in scripts])
    print("shared precompiled header bound in every job:", all(job["shared_pch"] for job in jobs))
    print("jobs whose child was prestarted:", sum(job["prestarted"] for job in jobs), "of", len(jobs))


def _print_side_by_side(jobs: dict[str, list[dict]]) -> None:
    """One markdown row per phase: median (min-max) of each instance (docs/benchmarks.md)."""

    def cell(values):
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    (first, a), (second, b) = jobs.items()
    names = []
    for job in a + b:
        names += [name for name in job["phases"] if name not in names]
    print(f"\n| phase | {first} | {second} |\n| --- | --- | --- |")
    for name in names:
        print(
            f"| {name} | {cell([j['phases'].get(name, 0.0) for j in a])} | {cell([j['phases'].get(name, 0.0) for j in b])} |"
        )
    for label, key in (
        ("request to report stored (readable)", "report_stored_s"),
        ("request to complete (warm compile in)", "wall_s"),
        ("untracked", "untracked_s"),
        ("client", "client_total_s"),
    ):
        print(f"| {label} | {cell([j[key] for j in a])} | {cell([j[key] for j in b])} |")
    loads = [j["load"] for j in a + b]
    print(f"1-min load {min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})")


def _load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown CPU")
    return f"{model}, {os.cpu_count()} CPUs"


if __name__ == "__main__":
    sys.exit(main())
