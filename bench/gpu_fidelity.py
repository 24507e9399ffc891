"""GPU fidelity: pt2scope's reported numbers against independent measurements of the same functions, in the same
session on the same GPU. Run on the device machine:
    python bench/gpu_fidelity.py OUT_DIR
For each model and config it compares
  - our per-step median (CUDA events around each step of a back-to-back loop) with an independent loop wall time
    (perf_counter around N back-to-back steps, one synchronize): both are what a user's loop costs;
  - our GPU-busy time per step (profiler, device kernels only) with triton.testing.do_bench's median, which flushes
    the L2 before each repetition and so hides the host's launch time: both are GPU time.
Goal: within 5%. Prints one table; writes each case's report under OUT_DIR."""
import json
import os
import runpy
import subprocess
import sys
import time

import torch
import torch.utils._pytree as pytree

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["seed_large", "transformer_block", "mlp_train_large"]
CONFIGS = ["eager", "inductor_default", "inductor_reduce_overhead"]
LOOP_STEPS = 300


def explore(case, out):
    t0 = time.time()
    cmd = [sys.executable, "-m", "engine", "explore", os.path.join(HERE, "models", case + ".py"), "--device", "cuda",
           "--configs", ",".join(CONFIGS), "--out", out, "--quiet"]
    proc = subprocess.run(cmd, cwd=os.path.dirname(HERE), capture_output=True, text=True)
    print(proc.stdout[-2500:], proc.stderr[-1500:], f"[{case}: {time.time() - t0:.1f}s]", flush=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def make_step(model, args, train, fn, cudagraphs):
    params = [p for p in model.parameters()] if isinstance(model, torch.nn.Module) else []

    def step():
        if cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        if train:
            for p in params:
                p.grad = None
            fn(*args).float().sum().backward()
        else:
            with torch.no_grad():
                fn(*args)

    return step


def loop_wall_ms(step):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(LOOP_STEPS):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000 / LOOP_STEPS


def independent(case):
    """{config: (loop wall ms, do_bench median ms)} on the same model file, compiled afresh."""
    from triton.testing import do_bench

    ns = runpy.run_path(os.path.join(HERE, "models", case + ".py"))
    model = ns["model"].to("cuda") if isinstance(ns["model"], torch.nn.Module) else ns["model"]
    args = pytree.tree_map_only(torch.Tensor, lambda t: t.to("cuda"), ns["example_inputs"])
    train = bool(ns.get("train"))
    results = {}
    for config in CONFIGS:
        torch._dynamo.reset()
        mode = {"inductor_default": "default", "inductor_reduce_overhead": "reduce-overhead"}.get(config)
        fn = model if config == "eager" else torch.compile(model, mode=mode)
        step = make_step(model, args, train, fn, cudagraphs=config == "inductor_reduce_overhead")
        wall = loop_wall_ms(step)
        results[config] = (wall, do_bench(step, warmup=100, rep=500, return_mode="median"))
    return results


def main(out_root):
    rows = []
    for case in CASES:
        report = explore(case, os.path.join(out_root, case))
        if report["status"] != "ok":
            print("FAILED", case, report["failure"])
            continue
        kernels = report["inductor"]["kernels"]
        print(f"{case}: {len(kernels)} kernels, e.g. {kernels[0]['name']} <- {kernels[0]['source_nodes']}; "
              f"cudagraphs: {report['runtime']['cudagraphs']}", flush=True)
        ours = {b["config"]: b for b in report["runtime"]["benchmarks"]}
        ref = independent(case)
        for config in CONFIGS:
            b, (wall, bench) = ours[config], ref[config]
            rows.append((case, config, b["median_ms"], wall, b["median_ms"] / wall - 1, b.get("gpu_busy_ms"), bench,
                         b["gpu_busy_ms"] / bench - 1 if b.get("gpu_busy_ms") else None,
                         b.get("speedup_vs_eager"), ref["eager"][0] / wall))
    print(f"\n{'case':<18}{'config':<26}{'ours ms':>9}{'loop ms':>9}{'diff':>8}{'busy ms':>9}{'do_bench':>9}"
          f"{'diff':>8}{'ours x':>8}{'loop x':>8}")
    for r in rows:
        busy = f"{r[5]:>9.4f}{r[6]:>9.4f}{r[7] * 100:>7.1f}%" if r[7] is not None else f"{'-':>9}{r[6]:>9.4f}{'-':>8}"
        print(f"{r[0]:<18}{r[1]:<26}{r[2]:>9.4f}{r[3]:>9.4f}{r[4] * 100:>7.1f}%{busy}{r[8]:>8.2f}{r[9]:>8.2f}")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-fidelity-out")
