"""Cold vs warm compile, as a job reports it (runtime.compile_cache): the recorded compile (new cache folders,
graph caches off), then the same model compiled in a fresh process with the kernel binaries it left ("warmup",
graph caches empty), then again with every cache filled ("warm"). Runs N jobs of each example in turn; prints the
total compile seconds of each compile, medians and spreads, and the warm compile's cache hits.
    python bench/cold_warm.py [--reps N] [examples ...]"""

import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.job import JobRequest, run_job  # noqa: E402


def job(path: str) -> dict:
    with open(path) as f, tempfile.TemporaryDirectory() as job_dir:
        report = run_job(
            JobRequest(code=f.read(), filename=os.path.basename(path), configs=["eager", "inductor_default"]),
            job_dir=job_dir,
        )
    assert report["status"] == "ok", report["failure"]
    return report["runtime"]["compile_cache"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("examples", nargs="*", default=["seed"])
    args = parser.parse_args()
    for name in args.examples:
        totals = {"cold": [], "warmup": [], "warm": []}
        hits = None
        for _ in range(args.reps):
            cache = job(os.path.join(ROOT, "examples", name + ".py"))
            for label in totals:
                entry = cache.get(label) or {}
                totals[label].append((entry.get("seconds") or {}).get("total"))
            hits = {k: (v["hits"], v["misses"]) for k, v in (cache["warm"].get("caches") or {}).items()}
            print(name, totals, flush=True)
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        for label, values in totals.items():
            values = [v for v in values if v is not None]
            if values:
                print(
                    f"{name:<10} {label:<7} median {statistics.median(values):7.2f} s  (min {min(values):.2f}, "
                    f"max {max(values):.2f}, n={len(values)})"
                )
        print(f"warm compile's cache (hits, misses): {hits}; load average {load}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
