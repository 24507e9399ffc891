"""GPU fidelity: pt2scope's reported speedups against an independent triton.testing.do_bench run of the same
functions, in the same session on the same GPU. Run on the device machine:
    python bench/gpu_fidelity.py OUT_DIR
Prints one table; writes each case's report under OUT_DIR. Goal: reported speedups within 5% of do_bench's."""
import json
import os
import runpy
import subprocess
import sys
import time

import torch
import torch.utils._pytree as pytree

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["seed_large", "transformer_block"]
CONFIGS = ["eager", "inductor_default", "inductor_reduce_overhead"]


def explore(case, out):
    t0 = time.time()
    cmd = [sys.executable, "-m", "engine", "explore", os.path.join(HERE, "models", case + ".py"), "--device", "cuda",
           "--configs", ",".join(CONFIGS), "--out", out, "--quiet"]
    proc = subprocess.run(cmd, cwd=os.path.dirname(HERE), capture_output=True, text=True)
    print(proc.stdout[-3000:], proc.stderr[-3000:], f"[{case}: {time.time() - t0:.1f}s]", flush=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def independent(case):
    """do_bench medians (ms) of eager, inductor default and reduce-overhead on the same model file."""
    from triton.testing import do_bench

    ns = runpy.run_path(os.path.join(HERE, "models", case + ".py"))
    model = ns["model"].to("cuda") if isinstance(ns["model"], torch.nn.Module) else ns["model"]
    args = pytree.tree_map_only(torch.Tensor, lambda t: t.to("cuda"), ns["example_inputs"])
    results = {}
    with torch.no_grad() if isinstance(model, torch.nn.Module) else torch.enable_grad():
        results["eager"] = do_bench(lambda: model(*args), warmup=100, rep=500, return_mode="median")
        torch._dynamo.reset()
        compiled = torch.compile(model)
        compiled(*args)
        results["inductor_default"] = do_bench(lambda: compiled(*args), warmup=100, rep=500, return_mode="median")
        torch._dynamo.reset()
        ro = torch.compile(model, mode="reduce-overhead")

        def step():
            torch.compiler.cudagraph_mark_step_begin()
            ro(*args)

        for _ in range(3):
            step()
        results["inductor_reduce_overhead"] = do_bench(step, warmup=100, rep=500, return_mode="median")
    return results


def main(out_root):
    rows = []
    for case in CASES:
        report = explore(case, os.path.join(out_root, case))
        if report["status"] != "ok":
            print("FAILED", case, report["failure"])
            continue
        ours = {b["config"]: b for b in report["runtime"]["benchmarks"]}
        ref = independent(case)
        kernels = report["inductor"]["kernels"]
        print(f"{case}: {len(kernels)} kernels; first: {kernels[0]['name'] if kernels else None} "
              f"<- {kernels[0]['source_nodes'] if kernels else None}; cudagraphs: {report['runtime']['cudagraphs']}")
        for config in CONFIGS:
            b = ours[config]
            ref_speedup = ref["eager"] / ref[config]
            rows.append((case, config, b["median_ms"], b["p10_ms"], b["p90_ms"], b.get("gpu_busy_ms"),
                         b.get("speedup_vs_eager"), ref[config], ref_speedup,
                         (b.get("speedup_vs_eager") or 0) / ref_speedup - 1,
                         (b["gpu_busy_ms"] / ref[config] - 1) if b.get("gpu_busy_ms") else None))
    print(f"\n{'case':<18}{'config':<26}{'ours ms':>9}{'p10-p90':>17}{'gpu busy':>9}{'ours x':>8}"
          f"{'do_bench ms':>12}{'do_bench x':>11}{'x diff':>8}{'busy/do_bench':>14}")
    for r in rows:
        busy = f"{r[5]:.4f}" if r[5] is not None else "-"
        print(f"{r[0]:<18}{r[1]:<26}{r[2]:>9.4f}{r[3]:>8.4f}-{r[4]:<8.4f}{busy:>9}{r[6]:>8.2f}{r[7]:>12.4f}"
              f"{r[8]:>11.2f}{r[9] * 100:>7.1f}%" + (f"{r[10] * 100:>13.1f}%" if r[10] is not None else ""))
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-fidelity-out")
