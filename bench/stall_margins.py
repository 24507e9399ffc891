"""How close legitimate jobs come to the time limits: every gallery example (or the files given) run through the CLI
under the default limits and the device's default ladder, one after the other. Prints per file: the job's status,
its wall time against the job's limit, and per watched stage the longest stretch without progress
(`stages[].longest_quiet_s`) against the stall limit the job applied (contract/limits.py `stall_limit_s` plus ten
eager steps), and whether its measuring processes (the warm compile's) succeeded. A legitimate model stopped early
(its measuring processes included), or one within half of a limit, is named at the end.

    .venv/bin/python bench/stall_margins.py [FILE ...] [--device cpu|cuda] [--configs ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from contract.limits import DEFAULT_LIMITS  # noqa: E402
from engine.stall import STEPS_WITHOUT_MARK  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(path: str, device: str, configs: str, out: str) -> tuple[dict | None, float, str]:
    command = [sys.executable, "-m", "engine", "explore", path, "--device", device, "--quiet", "--out", out]
    if configs:
        command += ["--configs", configs]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    report_path = os.path.join(out, "report.json")
    if not os.path.exists(report_path):
        return None, wall, done.stderr[-500:]
    with open(report_path) as f:
        return json.load(f), wall, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--configs", default="")
    args = parser.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))
    print(
        f"load before: {os.getloadavg()[0]:.2f}; job limit {DEFAULT_LIMITS.time_limit_s:g} s, stall limit "
        f"{DEFAULT_LIMITS.stall_limit_s:g} s + {STEPS_WITHOUT_MARK} eager steps"
    )
    print(
        f"{'file':<22} {'status':<8} {'processes':<10} {'wall s':>7} {'stall limit s':>13} {'longest quiet s':>15}  stage"
    )
    close = []
    with tempfile.TemporaryDirectory(prefix="stall-margins-") as tmp:
        for path in files:
            name = os.path.basename(path)
            report, wall, error = run(path, args.device, args.configs, os.path.join(tmp, name))
            if report is None:
                print(f"{name:<22} no report: {error}")
                close.append(f"{name}: no report")
                continue
            eager_ms = next(
                (b["median_ms"] or 0.0 for b in report["runtime"]["benchmarks"] if b["config"] == "eager"), 0.0
            )  # the job allowed ten of its first eager step, a little longer than this median
            limit = report["request"]["stall_limit_s"] + STEPS_WITHOUT_MARK * eager_ms / 1000
            watched = [s for s in report["stages"] if s.get("longest_quiet_s") is not None]
            worst = max(watched, key=lambda s: s["longest_quiet_s"], default=None)
            quiet = worst["longest_quiet_s"] if worst else 0.0
            where = f"{worst['name']}{':' + worst['config'] if worst.get('config') else ''}" if worst else "-"
            status = report["status"]
            processes = (report["runtime"].get("processes") or {}).get("status") or "-"
            print(f"{name:<22} {status:<8} {processes:<10} {wall:>7.1f} {limit:>13.1f} {quiet:>15.2f}  {where}")
            if status != "ok":
                close.append(f"{name}: {report['failure']['kind']}: {report['failure']['message'][:200]}")
            elif processes == "failed":  # the warm compile's processes are part of the job: stopped there too
                close.append(f"{name}: measuring processes failed: {report['runtime']['processes']['reason'][:200]}")
            elif quiet > limit / 2 or wall > DEFAULT_LIMITS.time_limit_s / 2:
                close.append(f"{name}: within half of a limit")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    print("stopped early or close to a limit: " + ("; ".join(close) if close else "none"))


if __name__ == "__main__":
    main()
