"""GPU fidelity: pt2scope's reported numbers against independent measurements of the same functions, in the same
session on the same GPU. Run on the device machine:
    python bench/gpu_fidelity.py OUT_DIR [fidelity|cudagraphs|diagnose|all]
fidelity: for each model and config it compares
  - our headline per-step time (median over rounds, interleaved across configs, of N back-to-back steps between
    one pair of CUDA events) with an independent loop: LOOP_STEPS back-to-back steps (at least 1000, and at least
    1 s) between two perf_counter reads and one synchronize, median of 3 rounds interleaved across configs;
  - our GPU-busy time per step (profiler, device kernels only) with triton.testing.do_bench's median, which flushes
    the L2 before each repetition and so hides the host's launch time: both are GPU time.
  Goal: within 5%.
cudagraphs: mode="reduce-overhead" with a list of example inputs (examples/recompile.py) and with training
  (examples/mlp_train.py, bench/models/mlp_train_large.py): each rung's status, CUDA-graph status and verdict.
Prints one table per part; writes each case's report under OUT_DIR."""

import json
import os
import runpy
import statistics
import subprocess
import sys
import time

import torch
import torch.utils._pytree as pytree

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIDELITY_CASES = {
    "seed": "examples/seed.py",
    "seed_large": "bench/models/seed_large.py",
    "transformer_block": "bench/models/transformer_block.py",
    "mlp_train_large": "bench/models/mlp_train_large.py",
}
CUDAGRAPH_CASES = {"recompile_list": "examples/recompile.py", "mlp_train": "examples/mlp_train.py"}
CONFIGS = ["eager", "inductor_default", "inductor_reduce_overhead"]
MIN_LOOP_STEPS, MIN_LOOP_SECONDS, LOOP_ROUNDS = 1000, 1.0, 3


def explore(case, path, out):
    t0 = time.time()
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "explore",
        os.path.join(ROOT, path),
        "--device",
        "cuda",
        "--configs",
        ",".join(CONFIGS),
        "--out",
        out,
        "--quiet",
    ]
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PT2SCOPE_ISOLATION": os.environ.get("PT2SCOPE_ISOLATION", "none")},
    )
    print(proc.stdout[-3000:], proc.stderr[-1500:], f"[{case}: {time.time() - t0:.1f}s]", flush=True)
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


def loop_ms(step, steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000 / steps


def independent(path):
    """{config: (loop ms per step, spread (min, max) over rounds, do_bench median ms)}, compiled afresh here."""
    from triton.testing import do_bench

    ns = runpy.run_path(os.path.join(ROOT, path))
    args = pytree.tree_map_only(torch.Tensor, lambda t: t.to("cuda"), ns["example_inputs"])
    train = bool(ns.get("train"))
    steps = {}
    for config in CONFIGS:
        torch._dynamo.reset()
        model = ns["model"].to("cuda") if isinstance(ns["model"], torch.nn.Module) else ns["model"]
        mode = {"inductor_default": "default", "inductor_reduce_overhead": "reduce-overhead"}.get(config)
        fn = model if config == "eager" else torch.compile(model, mode=mode)
        step = make_step(model, args, train, fn, cudagraphs=config == "inductor_reduce_overhead")
        for _ in range(20):
            step()
        one = loop_ms(step, 20)
        steps[config] = (step, max(MIN_LOOP_STEPS, int(MIN_LOOP_SECONDS * 1000 / max(one, 1e-3))))
    rounds = {c: [] for c in CONFIGS}
    for _ in range(LOOP_ROUNDS):  # interleaved, like pt2scope's rounds
        for config, (step, n) in steps.items():
            rounds[config].append(loop_ms(step, n))
    return {
        c: (statistics.median(r), (min(r), max(r)), do_bench(steps[c][0], warmup=100, rep=500, return_mode="median"))
        for c, r in rounds.items()
    }


def fidelity(out_root):
    rows = []
    for case, path in FIDELITY_CASES.items():
        report = explore(case, path, os.path.join(out_root, case))
        if report["status"] != "ok":
            print("FAILED", case, report["failure"])
            continue
        rt = report["runtime"]
        print(
            f"{case}: load {rt.get('load', {}).get('text')}; bandwidth "
            f"{(rt.get('memory_bandwidth') or {}).get('bytes_per_s', 0) / 1e12:.2f} TB/s; "
            f"{(rt.get('kernel_profile_summary') or {}).get('text')}",
            flush=True,
        )
        ours = {b["config"]: b for b in rt["benchmarks"]}
        ref = independent(path)
        for config in CONFIGS:
            b, (wall, spread, bench) = ours[config], ref[config]
            if b["status"] != "ok":
                print("FAILED", case, config, b["error"])
                continue
            rows.append(
                (
                    case,
                    config,
                    b["median_ms"],
                    b["p10_ms"],
                    b["p90_ms"],
                    wall,
                    spread,
                    b["median_ms"] / wall - 1,
                    b.get("gpu_busy_ms"),
                    bench,
                    b["gpu_busy_ms"] / bench - 1 if b.get("gpu_busy_ms") else None,
                    (b.get("speedup") or {}).get("text"),
                    ref["eager"][0] / wall,
                    b["cudagraphs"].get("status"),
                    b["correctness"]["verdict"],
                )
            )
    print(
        f"\n{'case':<18}{'config':<26}{'ours ms':>9}{'p10-p90':>17}{'loop ms':>9}{'min-max':>17}{'diff':>7}"
        f"{'busy ms':>9}{'do_bench':>9}{'diff':>7}{'loop x':>7}  cudagraphs/verdict  ours speedup"
    )
    for r in rows:
        busy = f"{r[8]:>9.4f}{r[9]:>9.4f}{r[10] * 100:>6.1f}%" if r[10] is not None else f"{'-':>9}{r[9]:>9.4f}{'-':>7}"
        print(
            f"{r[0]:<18}{r[1]:<26}{r[2]:>9.4f}{r[3]:>8.4f}-{r[4]:<8.4f}{r[5]:>9.4f}{r[6][0]:>8.4f}-{r[6][1]:<8.4f}"
            f"{r[7] * 100:>6.1f}%{busy}{r[12]:>7.2f}  {r[13]}/{r[14]}  {r[11]}"
        )


def cudagraphs(out_root):
    print(f"\n{'case':<16}{'config':<26}{'status':<8}{'ms/step':>9}  verdict    cudagraphs")
    for case, path in {**CUDAGRAPH_CASES, "mlp_train_large": FIDELITY_CASES["mlp_train_large"]}.items():
        out = os.path.join(out_root, case)
        if case == "mlp_train_large" and os.path.exists(os.path.join(out, "report.json")):
            report = json.load(open(os.path.join(out, "report.json")))
        else:
            report = explore(case, path, out)
        if report["status"] != "ok":
            print(f"{case:<16}FAILED {report['failure']['message'][:300]}")
            continue
        for b in report["runtime"]["benchmarks"]:
            print(
                f"{case:<16}{b['config']:<26}{b['status']:<8}{b.get('median_ms') or 0:>9.4f}  "
                f"{(b.get('correctness') or {}).get('verdict')!s:<10} {b['cudagraphs']} {b.get('error') or ''}"
            )


def diagnose(out_root):
    """Host-bound steps (the 1024x1024 seed): the engine's own round (engine.stages.runtime.time_round) against the
    independent loop on the same compiled function in this one process, interleaved; then again after the
    engine's bandwidth probe (1 GiB copies that stay in the caching allocator)."""
    from engine.stages import runtime

    ns = runpy.run_path(os.path.join(ROOT, "examples/seed.py"))
    args = tuple(t.to("cuda") for t in ns["example_inputs"])
    print(f"\n{'config':<20}{'phase':<22}{'engine round ms':>16}{'loop ms':>10}{'diff':>8}")
    for config, fn in (("eager", ns["model"]), ("inductor_default", torch.compile(ns["model"]))):
        workload = runtime.Workload(ns["model"], [args], False, None, "cuda")
        inst = workload.fresh()
        rung = runtime.Rung(config, inst, fn, {})
        step_s = runtime.warm_up(workload, rung)
        rung.steps_per_round = 1000
        step = make_step(ns["model"], args, False, fn, cudagraphs=False)
        for phase in ("as is", "after bandwidth probe", "after log tap"):
            if phase == "after bandwidth probe":
                runtime.memory_bandwidth("cuda")
            if phase == "after log tap":
                from engine.logtap import LogTap

                tap = LogTap()
                tap.install()
                tap.uninstall_trace()
            ours, loop = [], []
            for _ in range(5):
                ours.append(runtime.time_round(workload, rung))
                loop.append(loop_ms(step, 1000))
            engine_ms, loop_median = statistics.median(ours), statistics.median(loop)
            print(
                f"{config:<20}{phase:<22}{engine_ms:>16.4f}{loop_median:>10.4f}"
                f"{(engine_ms / loop_median - 1) * 100:>7.1f}%  (warm step {step_s * 1e3:.4f} ms)"
            )


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "gpu-fidelity-out"
    part = sys.argv[2] if len(sys.argv) > 2 else "all"
    if part in ("fidelity", "all"):
        fidelity(out)
    if part in ("cudagraphs", "all"):
        cudagraphs(out)
    if part in ("diagnose", "all"):
        diagnose(out)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
