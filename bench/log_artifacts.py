"""What switching on only the TORCH_LOGS artifacts a reader declares saves (five were once on and unread).

Each run is a fresh process that taps torch's logs as a job does (engine.logtap.LogTap, the structured trace and
the artifacts), then compiles an example with Inductor from a new, empty cache folder with graph caches off (as the
recorded compile) and times the first call. "all" switches on the 13 artifacts the engine enabled before the
registry, "declared" only those the registered readers declare. Runs alternate all/declared; prints medians and
spreads.
    python bench/log_artifacts.py [--reps N] [examples ...]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Before the registry: every artifact any stage might read, read or not.
ALL_BEFORE = [
    "fusion",
    "ir_pre_fusion",
    "ir_post_fusion",
    "schedule",
    "output_code",
    "graph_breaks",
    "guards",
    "recompiles",
    "aot_graphs",
    "perf_hints",
    "cudagraphs",
    "post_grad_graphs",
    "inductor_metrics",
]

RUN = """
import json, sys, torch, torch._inductor.config as ic, torch._functorch.config as fc
from engine import logtap
import engine.stages.dynamo, engine.stages.inductor, engine.stages.runtime.compile_times, engine.stages.runtime.cudagraphs  # the readers declare their inputs
from engine.usercode import load
from engine.stages.runtime.workload import Workload
ic.fx_graph_cache = False; fc.enable_autograd_cache = False
tap = logtap.LogTap()
tap.install(json.loads(sys.argv[2]) if sys.argv[2] != "declared" else None)
p = load(open(sys.argv[1]).read(), sys.argv[1].rsplit('/', 1)[-1], 'cpu', None)
w = Workload(p.model, p.inputs_list, p.train, p.loss_fn, 'cpu')
w.compared_step(p.model, w.fresh())
inst = w.fresh()
ms, _, _ = w.compared_step(torch.compile(inst.model), inst)
print(json.dumps({"first_call_ms": ms, "enabled": tap.enabled}))
"""


def one(path: str, artifacts: str) -> tuple[float, list]:
    with tempfile.TemporaryDirectory() as cache:  # new kernel cache and TMPDIR (precompiled header) per run
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": ROOT, "TMPDIR": cache, "HOME": cache}
        out = subprocess.run(
            [sys.executable, "-c", RUN, path, artifacts], env=env, capture_output=True, text=True, check=True
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["first_call_ms"], result["enabled"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("examples", nargs="*", default=["mlp_train"])
    args = parser.parse_args()
    for name in args.examples:
        path = os.path.join(ROOT, "examples", name + ".py")
        times = {"all": [], "declared": []}
        enabled = {}
        for _ in range(args.reps):  # alternate, so drift on a noisy machine hits both alike
            for label, artifacts in (("all", json.dumps(ALL_BEFORE)), ("declared", "declared")):
                ms, enabled[label] = one(path, artifacts)
                times[label].append(ms)
            print(name, {k: [round(v) for v in t] for k, t in times.items()}, flush=True)
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        for label, values in times.items():
            print(
                f"{name:<10} {label:<9} {len(enabled[label]):>2} artifacts  median {statistics.median(values):8.0f} ms"
                f"  (min {min(values):.0f}, max {max(values):.0f})"
            )
        print(f"reps={args.reps}, load average {' '.join(load)}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
