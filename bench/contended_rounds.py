"""The seed's speedup on a quiet machine and beside other processes that take cores, job after job interleaved:
what the ladder's contention check (engine.measure.load.CpuWindow) makes of each.

Each pair runs one job alone, then one job while ``--loops`` busy loops (`while True: pass`, one process each)
spin for the whole job. A step that wants every core loses one of its threads to a loop at every parallel
region, so its figures are not a quiet machine's: the job must say so (`runtime.load.contended`, the speedup
"not decided") instead of deciding a speedup. Prints one row per job and the machine's load before it.

    .venv/bin/python bench/contended_rounds.py [--pairs 3] [--loops 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.job import JobRequest, run_job  # noqa: E402

SEED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "seed.py")


def one_job(code: str, loops: int) -> dict:
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(loops)]
    try:
        with tempfile.TemporaryDirectory(prefix="pt2scope-contended-") as job_dir:
            report = run_job(
                JobRequest(code=code, filename="seed.py", configs=["eager", "inductor_default"]), job_dir=job_dir
            )
    finally:
        for p in spinning:
            p.kill()
            p.wait()
    if report["status"] != "ok":
        raise SystemExit(f"the job failed: {report['failure']['message']}")
    rt = report["runtime"]
    ms = {b["config"]: f"{b['median_ms']:.3f} ({b['p10_ms']:.3f}-{b['p90_ms']:.3f})" for b in rt["benchmarks"]}
    compiled = {b["config"]: b for b in rt["benchmarks"]}["inductor_default"]["speedup"]
    env = report["environment"]
    machine = f"{env['cpu_model']}, {env['cpu_count']} cores, torch {env['torch_version']}"
    return {"load": rt["load"], "ms": ms, "speedup": compiled, "rounds": rt["timing"]["rounds"], "machine": machine}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--loops", type=int, default=1)
    args = parser.parse_args()
    with open(SEED) as f:
        code = f.read()
    print(
        "| job | busy loops | load before | other processes' cores | rounds kept | dropped | contended "
        "| eager ms (p10-p90) | inductor ms (p10-p90) | speedup |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i in range(args.pairs):
        for loops in (0, args.loops):
            row = one_job(code, loops)
            load = row["load"]
            print(
                f"| {i + 1} | {loops} | {load['loadavg_before'][0] if load['loadavg_before'] else '?'} "
                f"| {load['other_cpu_cores']} | {row['rounds']} | {load['dropped_rounds']} | {load['contended']} "
                f"| {row['ms']['eager']} | {row['ms']['inductor_default']} | {row['speedup']['text']} |",
                flush=True,
            )
    print(f"\n{row['machine']}; each job: the seed, eager and inductor_default, default isolation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
