"""The stall watch on a GPU node (issue 21): endless loops past the eager run end at the stall limit and name the
user's line there too, and legitimate CUDA jobs (Triton compiles, CUDA graphs, autotuning) stay clear of it.

Part 1: the three loop attacks of tests/security/attacks run through the CLI with `--device cuda`, a 10 s stall
limit and the configs the CPU test uses (eager; the user's backend where the file names one); each row: how the job
ended, in how many seconds, and whether the message names the expected stage and line.
Part 2: bench/stall_margins.py over the files given (default: the seed, a transformer block and resnet18) under the
default limits and the device's default ladder.

    python bench/gpu_stall.py [FILE ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ATTACKS = os.path.join(ROOT, "tests", "security", "attacks")
STALL_LIMIT_S = 10
# attack -> what the failure message must say (tests/security/test_job_boundary.py asserts the same on the CPU, where
# the job's file is called model.py; here the CLI runs the attack's own file, so its name is the place named)
EXPECTED = {
    "loop_when_compiled": "during stage 'dynamo'",
    "loop_after_some_calls": "stage 'benchmark' at loop_after_some_calls.py:11",
    "loop_in_backend": "stage 'benchmark' at loop_in_backend.py:7",
}
MARGIN_FILES = ["examples/seed.py", "bench/models/transformer_block.py", "examples/resnet18.py"]


def loop_rows(out: str) -> list[str]:
    rows = []
    for name, expected in EXPECTED.items():
        folder = os.path.join(out, name)
        command = [sys.executable, "-m", "engine", "explore", os.path.join(ATTACKS, name + ".py"), "--device", "cuda"]
        command += ["--configs", "eager", "--stall-limit", str(STALL_LIMIT_S), "--no-warm-compile"]
        command += ["--quiet", "--out", folder]
        started = time.monotonic()
        subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - started
        try:
            with open(os.path.join(folder, "report.json")) as f:
                report = json.load(f)
        except OSError:
            rows.append(f"| {name} | no report | {wall:.1f} | no | - |")
            continue
        failure = report.get("failure") or {}
        message = failure.get("message", "")
        held = (
            failure.get("kind") == "timeout" and f"no progress for {STALL_LIMIT_S} s" in message and expected in message
        )
        rows.append(
            f"| {name} | {report['status']} {failure.get('kind', '')} | {wall:.1f} | {'yes' if held else 'NO'} | "
            f"{message[:150]} |"
        )
    return rows


def main() -> None:
    loops_only = "--loops-only" in sys.argv  # part 1 alone
    files = [a for a in sys.argv[1:] if a != "--loops-only"] or MARGIN_FILES
    with tempfile.TemporaryDirectory(prefix="gpu-stall-") as out:
        print(f"load {os.getloadavg()[0]:.2f}; loops with --device cuda, stall limit {STALL_LIMIT_S} s")
        print("| attack | ended | wall s | held (timeout, limit and place named) | message |")
        print("| --- | --- | --- | --- | --- |")
        for row in loop_rows(out):
            print(row, flush=True)
    if loops_only:
        return
    margins = [sys.executable, os.path.join(ROOT, "bench", "stall_margins.py"), *files, "--device", "cuda"]
    sys.exit(subprocess.run(margins, cwd=ROOT).returncode)


if __name__ == "__main__":
    main()
