"""The CLI against the plain script it explains: `python -m engine explore FILE --configs ...` beside a fresh
`python` that imports torch, compiles FILE's model and calls it once (bench/job_phases.py's reference script), each
with a new, empty kernel cache, interleaved rep by rep so both see the same load. Prints each one's wall time, the
CLI's over the script's (the goal: at most 1.2x), and where the CLI's seconds went: its report's timeline summed
per phase (contract.timeline.phase_seconds), with what the timeline does not name (wall minus the phases).
``--baseline DIR``: another checkout's CLI (the code before a change) timed too, in the same reps.

    .venv/bin/python bench/cli_speed.py [--file examples/seed.py] [--configs eager,inductor_default] [--reps 3]
        [--device cpu|cuda] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from job_phases import SCRIPT  # noqa: E402

from contract.timeline import phase_seconds  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(command: list[str], env: dict, cwd: str = ROOT) -> float:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def warm_processes(report: dict) -> str:
    """The CLI's two warm-compile processes as its report says (a failed one would make the CLI look fast)."""
    cache = report["runtime"]["compile_cache"]
    parts = []
    for name in ("warmup", "warm"):
        entry = cache.get(name) or {}
        wall = entry.get("wall_seconds")
        took = f" {wall:.2f} s" if wall is not None else ""
        why = f" ({entry['reason'][:300]})" if entry.get("reason") else ""
        parts.append(f"{name}: {entry.get('status')} {entry.get('started') or ''}{took}{why}")
    return "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default=os.path.join("examples", "seed.py"))
    parser.add_argument("--configs", default="eager,inductor_default")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--baseline", help="another checkout whose CLI is timed in the same reps")
    parser.add_argument(
        "--without-warm-compile",
        action="store_true",
        help="also time the CLI with --no-warm-compile in the same reps: what the rest of the job costs",
    )
    args = parser.parse_args()
    load_before = open("/proc/loadavg").read().split()[:3]
    script, cli, phases, baseline, no_warm = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="pt2scope-cli-speed-") as folder:
        for rep in range(args.reps):
            cache = os.path.join(folder, f"script-cache-{rep}")
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            script.append(timed([sys.executable, "-c", SCRIPT, args.file, args.device], env))
            out = os.path.join(folder, f"cli-{rep}")
            command = [sys.executable, "-m", "engine", "explore", os.path.abspath(args.file), "--quiet", "--out"]
            options = ["--configs", args.configs, "--device", args.device]
            if args.baseline:
                baseline.append(timed(command + [out + "-baseline"] + options, dict(os.environ), args.baseline))
            if args.without_warm_compile:
                no_warm.append(timed(command + [out + "-no-warm"] + options + ["--no-warm-compile"], dict(os.environ)))
            cli.append(timed(command + [out] + options, dict(os.environ)))
            with open(os.path.join(out, "report.json")) as f:
                report = json.load(f)
            phases.append(phase_seconds(report["timeline"]))
            before = f", baseline CLI {baseline[-1]:6.2f} s" if baseline else ""
            before += f", CLI --no-warm-compile {no_warm[-1]:6.2f} s" if no_warm else ""
            print(f"  rep {rep + 1}: script {script[-1]:6.2f} s{before}, CLI {cli[-1]:6.2f} s", flush=True)
            print(f"         {warm_processes(report)}", flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(
        f"\nCLI speed: {args.file} --configs {args.configs} on {args.device}, {args.reps} reps interleaved; "
        f"{os.cpu_count()} CPUs, load before {' '.join(load_before)}, after {' '.join(load_after)}"
    )
    runs = (("plain script", script), ("baseline CLI", baseline), ("CLI --no-warm-compile", no_warm), ("CLI", cli))
    for name, walls in runs:
        if walls:
            print(f"{name:<22} median {statistics.median(walls):6.2f} s (min {min(walls):.2f}, max {max(walls):.2f})")
    for name, walls in runs[1:]:
        if walls:
            ratios = [c / s for c, s in zip(walls, script)]
            print(
                f"{name} / script: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
                f"max {max(ratios):.2f}); goal: at most 1.20x"
            )
    names = sorted({n for p in phases for n in p}, key=lambda n: -statistics.median(p.get(n, 0.0) for p in phases))
    print(f"\n{'CLI phase (report timeline)':<40} {'median s':>9} {'share':>6}")
    for name in names:
        median = statistics.median(p.get(name, 0.0) for p in phases)
        print(f"{name:<40} {median:>9.2f} {median / statistics.median(cli):>6.0%}")
    unnamed = statistics.median(
        c - sum(v for k, v in p.items() if not k.startswith("prestart:")) for c, p in zip(cli, phases)
    )
    print(f"{'(wall not named by the timeline)':<40} {unnamed:>9.2f} {unnamed / statistics.median(cli):>6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
