"""The seed job with and without the worker's trusted kernel cache, interleaved, as a warm worker runs it.

Builds a shared precompiled header and the trusted kernel cache of the seed once (as a worker does at start, both
timed), then runs N seed jobs (configs eager,inductor_default) with the cache bound and N without, alternating, each
through engine.job.run_job with scratch=True as workers/tasks.py does. Prints per job the recorded compile's total
and code-generation seconds, the whole job's seconds (runtime.job_seconds) and the kernel hits/misses, then the
median and min-max of each, with the 1-min load before each job.
    python bench/kernel_cache.py [--reps N]"""

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.job import JobRequest, run_job, warm_up_kernel_cache, warm_up_shared_pch  # noqa: E402
from engine.sandbox import Isolation  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")


def load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def seed_job(isolation: Isolation, folder: str) -> dict:
    with open(os.path.join(EXAMPLES, "seed.py")) as f:
        request = JobRequest(code=f.read(), filename="seed.py", configs=["eager", "inductor_default"])
    before, started = load(), time.monotonic()
    report = run_job(
        request, job_dir=os.path.join(folder, f"job-{time.monotonic_ns()}"), isolation=isolation, scratch=True
    )
    wall = time.monotonic() - started
    assert report["status"] == "ok", report["failure"]
    cold = report["runtime"]["compile_cache"]["cold"]
    kernels = cold["caches"]["kernels"]
    return {
        "compile": cold["seconds"]["total"],
        "codegen": cold["seconds"]["codegen"],
        "job": report["runtime"]["job_seconds"],
        "wall": wall,
        "load": before,
        "hits": kernels["hits"],
        "misses": kernels["misses"],
        "trusted": kernels["trusted_binaries"],
    }


def spread(values) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-kernels-") as folder:
        without = Isolation(shared_pch_dir=os.path.join(folder, "pch"))
        with_cache = Isolation(shared_pch_dir=without.shared_pch_dir, kernel_cache_dir=os.path.join(folder, "kernels"))
        started = time.monotonic()
        warm_up_shared_pch(without)
        pch_s = time.monotonic() - started
        started = time.monotonic()
        published = warm_up_kernel_cache(with_cache, EXAMPLES, ["seed.py"])
        print(
            f"worker start: precompiled header {pch_s:.1f} s, kernel cache {time.monotonic() - started:.1f} s "
            f"({len(published)} files)",
            flush=True,
        )
        runs = {"trusted cache": [], "no cache": []}
        for _ in range(args.reps):
            for label, isolation in (("trusted cache", with_cache), ("no cache", without)):
                result = seed_job(isolation, folder)
                runs[label].append(result)
                print(label, result, flush=True)
    print(f"\n{'':<14}{'recorded compile s':>24}{'codegen s':>24}{'job s':>24}{'load':>16}  kernels (hit/miss)")
    for label, results in runs.items():
        cells = [spread([r[key] for r in results]) for key in ("compile", "codegen", "job", "load")]
        hits = sorted({(r["hits"], r["misses"]) for r in results})
        print(f"{label:<14}" + "".join(f"{c:>24}" for c in cells[:3]) + f"{cells[3]:>16}  {hits}")
    print(f"{os.cpu_count()} CPUs, n={args.reps} each, interleaved")


if __name__ == "__main__":
    main()
