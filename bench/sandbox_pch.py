"""Job time of the seed (configs eager,inductor_default) in the bubblewrap sandbox, with and without the shared
precompiled header (engine.sandbox): `python bench/sandbox_pch.py [ROUNDS]`. Cold and warm jobs alternate, so
load from other users of the machine falls on both alike. Results: docs/benchmarks.md, "Sandbox"."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.job import JobRequest, run_job, warm_up_shared_pch  # noqa: E402
from engine.sandbox import Isolation  # noqa: E402

SEED = open(os.path.join(os.path.dirname(__file__), "..", "examples", "seed.py")).read()


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pt2scope-pch-bench-") as root:
        warm = Isolation(shared_pch_dir=os.path.join(root, "pch"))
        started = time.monotonic()
        warm_up_shared_pch(warm)
        print(f"warm-up (once per worker start): {time.monotonic() - started:.1f} s")
        results = {"cold": [], "shared": []}
        for i in range(rounds):
            for name, isolation in (("cold", Isolation()), ("shared", warm)):
                report = run_job(
                    JobRequest(code=SEED, filename="seed.py", configs=["eager", "inductor_default"]),
                    os.path.join(root, f"{name}-{i}"),
                    isolation=isolation,
                )
                assert report["status"] == "ok", report["failure"]
                inductor = next(s["seconds"] for s in report["stages"] if s["name"] == "inductor")
                results[name].append((report["runtime"]["job_seconds"], inductor))
        print(f"{'precompiled header':<20}{'job s (median)':>16}{'inductor stage s':>18}  runs")
        for name, runs in results.items():
            print(
                f"{name:<20}{statistics.median(r[0] for r in runs):>16.1f}"
                f"{statistics.median(r[1] for r in runs):>18.1f}  {', '.join(f'{r[0]:.1f}' for r in runs)}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
