"""How long a seed-sized job holds its worker when other jobs wait (issue 20 item 1: at most 15 s on the H200), and
where that time goes: each job is run as a worker runs it in a burst (engine.run_job with a prestarted child, the
next one prestarted while the job runs, and a sink that defers the warm compile, engine.sink.Deferral), then its
deferred work alone (engine.job.run_post_report), as the idle worker runs it. Prints, per job: start to readable
(the early report handed over), readable to the job's end, the job's top-level timeline phases in seconds, and
the deferred work's wall time; then medians with their ranges.

    .venv/bin/python bench/worker_time.py [--jobs 5] [--device cpu|cuda] [--configs eager,inductor_default]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from cli_speed import warm_processes  # noqa: E402

from contract.timeline import phase_seconds  # noqa: E402
from engine.job import JobRequest, PrestartedChild, run_job, run_post_report  # noqa: E402
from engine.sandbox import Isolation  # noqa: E402
from engine.sink import Deferral, ReportSink  # noqa: E402
from tests.support import SEED  # noqa: E402


class Burst(ReportSink):
    """A worker's sink in a burst: another job always waits, so the warm compile is deferred."""

    def __init__(self, keep_dir: str) -> None:
        self.keep_dir, self.readable = keep_dir, None

    def defer_post_report(self) -> Deferral:
        return Deferral("the bench's next job waited", self.keep_dir)

    def early(self, report: dict) -> None:
        self.readable = time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--configs", default="eager,inductor_default")
    args = parser.parse_args()
    isolation = Isolation.from_env()
    configs = args.configs.split(",")
    rows, phases, later_phases = [], defaultdict(list), defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="pt2scope-worker-time-") as root:

        def prestart(i: int) -> PrestartedChild:
            template = JobRequest(code="", device=args.device)
            return PrestartedChild(template, os.path.join(root, f"prestart-{i}"), isolation, scratch=True)

        ahead = prestart(0)
        time.sleep(15)  # the first child's imports done, as a worker's is after its previous job
        for i in range(args.jobs):
            code = SEED.replace("torch.tanh(x)", f"torch.tanh(x) * {1 + (i + 1) / 10:g}")
            request = JobRequest(code=code, filename=f"student{i}.py", device=args.device, configs=configs)
            sink = Burst(os.path.join(root, f"kept-{i}"))
            started = time.monotonic()
            child, ahead = ahead, None
            report = run_job(request, os.path.join(root, f"job-{i}"), sink, isolation, scratch=True, prestarted=child)
            ended = time.monotonic()
            ahead = prestart(i + 1)  # the worker prestarts the next child after each job (workers.tasks)
            if report["status"] != "ok" or report["failure"]:
                raise SystemExit(f"job {i} failed: {report['failure']}")
            for phase in report["timeline"]["phases"]:
                if phase["depth"] == 0:
                    phases[phase["phase"]].append(phase["end_s"] - phase["start_s"])
            later = time.monotonic()
            done = run_post_report(request, sink.keep_dir, os.path.join(root, f"later-{i}"), isolation=isolation)
            warm = done["runtime"]["compile_cache"]["warm"]
            for name, seconds in phase_seconds(done["timeline"]).items():
                if not name.startswith("prestart:"):
                    later_phases[name].append(seconds)
            rows.append(
                {
                    "readable": sink.readable - started,
                    "held": ended - started,
                    "after_readable": ended - sink.readable,
                    "deferred": time.monotonic() - later,
                    "warm": warm.get("status"),
                }
            )
            figures = ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items())
            print(f"  job {i}: {figures}\n         deferred work's {warm_processes(done)}", flush=True)
            time.sleep(15)  # the next child's imports done
        ahead.discard()
    print(f"\nworker time per seed-sized job ({args.device}, {','.join(configs)}), jobs run as in a burst:")
    print(f"{'job':>4} {'readable s':>11} {'held s':>8} {'after readable s':>17} {'deferred work s':>16}  warm")
    for i, row in enumerate(rows):
        print(
            f"{i:>4} {row['readable']:>11.2f} {row['held']:>8.2f} {row['after_readable']:>17.2f} "
            f"{row['deferred']:>16.2f}  {row['warm']}"
        )
    for key in ("readable", "held", "after_readable", "deferred"):
        values = [row[key] for row in rows]
        print(f"{key}: median {statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})")
    print("job timeline, top-level phases (median s, range):")
    for name, values in phases.items():
        print(f"  {name:<22} {statistics.median(values):7.2f}  ({min(values):.2f}-{max(values):.2f})")
    print("deferred work's timeline, phases (median s, range):")
    for name, values in later_phases.items():
        print(f"  {name:<40} {statistics.median(values):7.2f}  ({min(values):.2f}-{max(values):.2f})")
    print(f"load after: {' '.join(open('/proc/loadavg').read().split()[:3])}; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
