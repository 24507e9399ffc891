"""Is a job's speedup the next job's? N jobs of one model, one after the other, each in its own fresh processes.

Prints one row per job: the speedup the Runtime tab shows (across the job's measuring processes), its interval and
whether it was decided, each measuring process's median, the capture process's own figure and the machine's load;
then how many decided intervals hold the median of the other jobs' speedups (issue 18: a decided figure a user
cannot reproduce in the next job is not a result).

    .venv/bin/python bench/repeatability.py [--jobs 5] [--model examples/seed.py] [--config inductor_default]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.job import JobRequest, run_job  # noqa: E402


def one_job(code: str, filename: str, config: str, device: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="pt2scope-repeat-") as job_dir:
        report = run_job(
            JobRequest(code=code, filename=filename, configs=["eager", config], device=device), job_dir=job_dir
        )
    if report["status"] != "ok":
        raise SystemExit(f"the job failed: {report['failure']['message']}")
    rt = report["runtime"]
    bench = {b["config"]: b for b in rt["benchmarks"]}
    return {
        "speedup": bench[config]["speedup"],
        "capture": bench[config].get("capture_speedup") or bench[config]["speedup"],
        "processes": rt.get("processes") or {},
        "load": rt["load"],
        "env": report["environment"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--model", default=os.path.join(ROOT, "examples", "seed.py"))
    parser.add_argument("--config", default="inductor_default")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    with open(args.model) as f:
        code = f.read()
    print("| job | load before | speedup (Runtime tab) | decided | per process | capture process | other cores |")
    print("|---|---|---|---|---|---|---|")
    jobs = []
    for i in range(args.jobs):
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        job = one_job(code, os.path.basename(args.model), args.config, args.device)
        s, c = job["speedup"], job["capture"]
        per = ", ".join(f"{v:.2f}x" for v in s.get("processes") or []) or "-"
        print(
            f"| {i + 1} | {load_before:.2f} | {s['value']:.2f}x ({s['low']:.2f}-{s['high']:.2f}) | {s['decided']} "
            f"| {per} | {c['value']:.2f}x ({c['low']:.2f}-{c['high']:.2f}) {'decided' if c['decided'] else 'undecided'} "
            f"| {job['load'].get('other_cpu_cores')} | ",
            f"{time.monotonic() - started:.0f} s",
            flush=True,
        )
        jobs.append(job)
    values = [j["speedup"]["value"] for j in jobs]
    holds = 0
    decided = [k for k, j in enumerate(jobs) if j["speedup"]["decided"]]
    for k in decided:
        others = statistics.median(v for m, v in enumerate(values) if m != k)
        holds += jobs[k]["speedup"]["low"] <= others <= jobs[k]["speedup"]["high"]
    middle = statistics.median(values)
    within = sum(abs(jobs[k]["speedup"]["value"] / middle - 1) <= 0.15 for k in decided)
    env = jobs[0]["env"]
    print(
        f"\n{len(decided)} of {len(jobs)} decided; {holds} of {len(decided)} decided intervals hold the median of the "
        f"other jobs; {within} of {len(decided)} decided figures within 15% of the median of all ({middle:.2f}x). "
        f"Machine: {env['cpu_model']}, {env['cpu_count']} cores, torch {env['torch_version']}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
