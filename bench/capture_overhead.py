"""Capture overhead: the engine's recorded compile (every stage hooked and logged) against plain torch.compile,
with the same cache settings: a new, empty kernel cache folder per run and graph caches off (what pt2scope does
for every job). Measured: the first call, compile included (forward + backward when training), in ms.
Runs alternate plain/recorded in fresh processes; prints medians, spreads and the ratio. Goal: <= 1.10x.
    python bench/capture_overhead.py [--reps N] [examples ...]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.job import JobRequest, run_job  # noqa: E402

# Plain torch.compile, loaded by the same loader as the engine, timed the same way (engine.stages.runtime.workload).
PLAIN = """
import sys, time, json
import torch, torch._inductor.config as ic, torch._functorch.config as fc
from engine.usercode import load
from engine.stages.runtime.workload import Workload
ic.fx_graph_cache = False; fc.enable_autograd_cache = False
p = load(open(sys.argv[1]).read(), sys.argv[1].rsplit('/', 1)[-1], 'cpu', None)
w = Workload(p.model, p.inputs_list, p.train, p.loss_fn, 'cpu')
w.result(p.model)
ms, _, _ = w.result(torch.compile(p.model))
print(json.dumps({"first_call_ms": ms}))
"""


def plain(path):
    # A fresh TMPDIR too, as each job gets: Inductor keeps its C++ precompiled header under
    # $TMPDIR/torchinductor_<user>/precompiled_headers, and a warm one saves about 10 s of a cold CPU compile
    # (measured: plain seed 20.9 s with a new TMPDIR, 9.7 s with a used one).
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": ROOT, "TMPDIR": cache, "HOME": cache}
        out = subprocess.run([sys.executable, "-c", PLAIN, path], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["first_call_ms"]


def recorded(path):
    with open(path) as f, tempfile.TemporaryDirectory() as job_dir:
        report = run_job(
            JobRequest(code=f.read(), filename=os.path.basename(path), configs=["eager", "inductor_default"]),
            job_dir=job_dir,
        )
    assert report["status"] == "ok", report["failure"]
    return report["runtime"]["first_call_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("examples", nargs="*", default=["seed", "mlp_train"])
    args = parser.parse_args()
    rows = []
    for name in args.examples:
        path = os.path.join(ROOT, "examples", name + ".py")
        times = {"plain": [], "recorded": []}
        for _ in range(args.reps):  # alternate, so drift on a noisy machine hits both alike
            times["plain"].append(plain(path))
            times["recorded"].append(recorded(path))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append(
            (
                name,
                med["plain"],
                min(times["plain"]),
                max(times["plain"]),
                med["recorded"],
                min(times["recorded"]),
                max(times["recorded"]),
                med["recorded"] / med["plain"],
            )
        )
        print(name, times, flush=True)
    print(f"\n{'example':<12}{'plain ms (min-max)':>30}{'recorded ms (min-max)':>32}{'ratio':>8}")
    for r in rows:
        print(
            f"{r[0]:<12}{r[1]:>10.0f} ({r[2]:.0f}-{r[3]:.0f}){'':>5}{r[4]:>10.0f} ({r[5]:.0f}-{r[6]:.0f}){'':>5}"
            f"{r[7]:>8.3f}x"
        )
    print(f"reps={args.reps}, cold kernel cache per run, graph caches off; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
