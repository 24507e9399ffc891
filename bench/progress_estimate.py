"""How true the progress page is: the time left it shows against the time the report actually took, and the stage
it names ("Now: ...") against the stage that was running, sampled every half second through the API.

Runs R jobs of one example one after another on one real worker (the embedded default: SQLite data and broker),
each a distinct variant (a different constant) so none is answered by an earlier one. The first job has no earlier
run to be measured against (the estimate then comes from its own steps); the later ones do. For each sample taken
while the job runs: the estimate's error, (estimate - actual) / actual, where actual is the time from the sample to
the report stored; and whether the step named was the one running (from the stored events). Prints, per job and
for the later jobs together, the median absolute error with its p10-p90, and the share of samples naming the
right step.

    .venv/bin/python bench/progress_estimate.py [--runs 4] [--example seed] [--configs eager,inductor_default]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from storage import progress, runstore  # noqa: E402
from storage.db import session_factory  # noqa: E402
from storage.models import Run  # noqa: E402
from tests.support import Worker, make_settings, wait_until  # noqa: E402
from webapp import create_app  # noqa: E402


def quantiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    cuts = statistics.quantiles(values, n=10)
    return cuts[0], statistics.median(values), cuts[-1]


def one_job(client, settings, code: str, configs: list[str]) -> dict:
    slug = client.post("/api/runs", json={"code": code, "configs": configs}).get_json()["id"]
    samples = []  # (unix time, time_left_s, current step)
    while True:
        status = client.get(f"/api/runs/{slug}").get_json()
        now = time.time()
        if status["status"] in ("succeeded", "failed"):
            break
        if status["status"] == "running":
            current = status["current"]
            samples.append((now, status["time_left_s"], current and (current["stage"], current["config"])))
        time.sleep(0.5)
    with session_factory(settings.database_url)() as session:
        run = runstore.get_run(session, slug)
        readable = run.finished_at
        intervals = _step_intervals(run)
        steps = progress.progress_steps(run)
    readable_unix = readable.replace(tzinfo=UTC).timestamp()
    errors = [
        (left - (readable_unix - t)) / (readable_unix - t)
        for t, left, _ in samples
        if left is not None and readable_unix - t > 1.0
    ]
    named = [_running_at(intervals, t) == step for t, _, step in samples if step]
    return {
        "status": status["status"],
        "samples": len(samples),
        "estimated": sum(1 for _, left, _ in samples if left is not None),
        "errors": errors,
        "named_right": sum(named) / len(named) if named else float("nan"),
        "seconds": sum(s["seconds"] or 0 for s in steps if s["stage"] not in progress.AFTER_REPORT),
    }


def _step_intervals(run: Run) -> list[tuple[float, float, tuple]]:
    """(start, end, (stage, config)) of each step, from the stored events' times."""
    open_steps, out = {}, []
    for event in run.events:
        if event.kind != "stage":
            continue
        at = event.created_at.replace(tzinfo=UTC).timestamp()
        key = (event.stage, event.config)
        if event.state == "started":
            open_steps.setdefault(key, at)
        elif key in open_steps:
            out.append((open_steps.pop(key), at, key))
    return out


def _running_at(intervals, t: float):
    """The step that was running at t: of those begun and not ended, the one begun last."""
    running = [(start, key) for start, end, key in intervals if start <= t < end]
    return max(running)[1] if running else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--example", default="seed")
    parser.add_argument("--configs", default="eager,inductor_default")
    args = parser.parse_args()
    configs = args.configs.split(",")
    source = open(os.path.join(ROOT, "examples", f"{args.example}.py")).read()
    load_before = open("/proc/loadavg").read().split()[:3]
    results = []
    with tempfile.TemporaryDirectory(prefix="pt2scope-progress-") as folder:
        settings = make_settings(folder, pch_warmup=False, rate_limit_count=0)
        client = create_app(settings).test_client()
        with Worker(settings) as worker:
            wait_until(worker.online, timeout=90, what="the worker")
            for i in range(args.runs):
                code = f"{source}\n# variant {i}\n"
                results.append(one_job(client, settings, code, configs))
                print(f"  job {i + 1}: {results[-1]['status']}, {results[-1]['samples']} samples", flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(
        f"\nprogress estimate: {args.runs} jobs of {args.example} ({','.join(configs)}), one after another, "
        f"embedded worker; {os.cpu_count()} CPUs, load before {' '.join(load_before)}, after {' '.join(load_after)}"
    )
    print(
        f"{'job':>3} {'measured against':>17} {'samples':>8} {'with estimate':>14} "
        f"{'|error| p10 / median / p90':>28} {'Now right':>10} {'steps s':>8}"
    )
    for i, r in enumerate(results):
        low, mid, high = quantiles([abs(e) for e in r["errors"]])
        against = "its own steps" if i == 0 else f"{i} earlier run(s)"
        print(
            f"{i + 1:>3} {against:>17} {r['samples']:>8} {r['estimated']:>14} "
            f"{low:>9.0%} / {mid:>5.0%} / {high:>5.0%} {r['named_right']:>10.0%} {r['seconds']:>8.1f}"
        )
    later = [e for r in results[1:] for e in r["errors"]]
    if later:
        low, mid, high = quantiles([abs(e) for e in later])
        signed = statistics.median(later)
        print(
            f"jobs 2-{args.runs} together: |error| median {mid:.0%} (p10 {low:.0%}, p90 {high:.0%}), signed median "
            f"{signed:+.0%} ({'over' if signed > 0 else 'under'}estimates)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
