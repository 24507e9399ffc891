"""GPU fidelity: pt2scope's reported numbers against independent measurements of the same steps on the same GPU.
Run on the device machine (a CPU dry run checks the script here: --device cpu, no GPU-busy references):
    python bench/gpu_fidelity.py OUT [fidelity|in_process|cudagraphs|loop] [--device cpu] [--cases a,b] [--configs ...]
fidelity, per model: the engine's job (`python -m engine explore`, its own child process) and then, in this process,
the same configs compiled afresh (on the job's warm caches) and measured by
  - throughput: an independent loop (a user's: `with torch.no_grad(): for _ in range(n): fn(x)`, CUDA events around
    the N back-to-back steps, N = the engine's steps_per_round) interleaved round by round with the engine's own
    round (engine.stages.runtime.timing.time_round on the same function): the engine's method against a loop in the same
    process at the same time, and the job's figure (another process, a minute earlier) against both;
  - GPU busy: triton.testing.do_bench (median; flushes the L2 before each repetition, and its events include the
    host's gaps once a step's launches outlast the flush), triton.testing.do_bench_cudagraph (median; the step
    replayed from a CUDA graph: warm L2, no host gaps; not for reduce-overhead, which is a CUDA graph already), and
    "queued" (CUDA events around N steps launched while a sleep kernel holds the GPU: every launch is queued before
    the first runs, so the events time the device alone, warm L2, for every config), against the job's figure and
    the engine's gpu_busy_ms on this process's function (run last: CUPTI slows launches once it has run);
  - drift: the 1024x1024 seed's loop again at the end, before and after that profiler pass; `loop` runs the same
    loop in fresh processes (process-to-process spread of a plain loop).
in_process: the engine's round against the loop alone, in this process (no job, no GPU-busy references).
cudagraphs: mode="reduce-overhead" with a list of example inputs and with training: status, CUDA graphs, verdict.
Prints one table per part last; writes OUT/fidelity.json and each job's report as OUT/<case>.json."""

import argparse
import json
import os
import runpy
import shutil
import statistics
import subprocess
import sys
import time

import torch
import torch.utils._pytree as pytree

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from engine.stages.runtime import profiling, timing  # noqa: E402 - the engine's own timing code, measured in this process
from engine.stages.runtime.rung import Rung  # noqa: E402
from engine.stages.runtime.workload import Workload  # noqa: E402

FIDELITY_CASES = {
    "seed": "examples/seed.py",
    "seed_large": "bench/models/seed_large.py",
    "transformer_block": "bench/models/transformer_block.py",
    "mlp_train_large": "bench/models/mlp_train_large.py",
}
CUDAGRAPH_CASES = {"recompile_list": "examples/recompile.py", "mlp_train": "examples/mlp_train.py"}
CONFIGS = ["eager", "inductor_default", "inductor_reduce_overhead"]
MODES = {"inductor_default": "default", "inductor_reduce_overhead": "reduce-overhead", "aot_eager": None}
ROUNDS = 11  # interleaved rounds of (engine round, loop) per config
FRESH_PROCESSES = 2
DEADLINE_S = 360  # no new model after this: the device call's 10 minutes must hold the rest


def explore(case, path, jobs, device, configs):
    t0 = time.time()
    out = os.path.join(jobs, case)
    cmd = [sys.executable, "-m", "engine", "explore", os.path.join(ROOT, path), "--device", device]
    cmd += ["--configs", ",".join(configs), "--out", out, "--quiet"]
    env = {**os.environ, "PT2SCOPE_ISOLATION": os.environ.get("PT2SCOPE_ISOLATION", "none")}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    print(proc.stdout[-2500:], proc.stderr[-1500:], f"[{case}: {time.time() - t0:.1f}s]", flush=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), out


class Case:
    """One config of one model in this process: the engine's Workload and Rung around a fresh compile, and a plain
    loop over the same function and inputs."""

    def __init__(self, ns, config, device):
        self.device, self.config = device, config
        inputs = ns["example_inputs"]
        inputs_list = inputs if isinstance(inputs, list) else [inputs]
        inputs_list = [pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), a) for a in inputs_list]
        model = ns["model"].to(device) if isinstance(ns["model"], torch.nn.Module) else ns["model"]
        self.train = bool(ns.get("train"))
        self.workload = Workload(model, inputs_list, self.train, None, device)
        inst = self.workload.fresh()
        self.cudagraphs = config == "inductor_reduce_overhead" and device == "cuda"
        backend = "aot_eager" if config == "aot_eager" else "inductor"
        fn = inst.model if config == "eager" else torch.compile(inst.model, backend=backend, mode=MODES[config])
        self.rung = Rung(config, inst, fn, {}, self.cudagraphs)
        self.fn, self.inputs, self.params = fn, inst.inputs, [p for _, p in inst.params]
        self.rung.step_s = timing.warm_up(self.workload, self.rung)

    def steps(self, n):
        """n steps as a user writes them."""
        fn, inputs, params = self.fn, self.inputs, self.params
        if self.train:
            for _ in range(n):
                for p in params:
                    p.grad = None
                for args in inputs:
                    if self.cudagraphs:
                        torch.compiler.cudagraph_mark_step_begin()
                    fn(*args).float().sum().backward()
        elif self.cudagraphs:
            for _ in range(n):
                for args in inputs:
                    torch.compiler.cudagraph_mark_step_begin()
                    fn(*args)
        else:
            for _ in range(n):
                for args in inputs:
                    fn(*args)

    def step(self):
        with torch.enable_grad() if self.train else torch.no_grad():
            self.steps(1)

    def loop_ms(self, n):
        """n steps between two events, after one untimed step (as the engine's round: a user's loop that runs one
        model has its caches warm)."""
        with torch.enable_grad() if self.train else torch.no_grad():
            self.steps(1)
            if self.device != "cuda":
                t0 = time.perf_counter()
                self.steps(n)
                return (time.perf_counter() - t0) * 1000 / n
            torch.cuda.synchronize()
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            self.steps(n)
            end.record()
            torch.cuda.synchronize()
            return begin.elapsed_time(end) / n

    def queued_ms(self, host_ms):
        """Device time per step with the host out of the way: the steps are launched while torch.cuda._sleep holds
        the stream; `ahead` = the sleep was still running when the last one was queued (else the figure may hold
        host gaps and is retried with a longer sleep)."""
        n = 10 if self.train else 20
        hz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 2_000_000) * 1000
        sleep_s = max(3 * n * host_ms / 1000, 0.002)
        times, ahead = [], False
        with torch.enable_grad() if self.train else torch.no_grad():
            for _ in range(9):
                torch.cuda.synchronize()
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(int(sleep_s * hz))
                begin.record()
                self.steps(n)
                end.record()
                ahead = not begin.query()
                torch.cuda.synchronize()
                if not ahead:
                    sleep_s *= 2
                    continue
                times.append(begin.elapsed_time(end) / n)
        return (statistics.median(times) if times else None), bool(times)


def gpu_references(case, host_ms):
    from triton.testing import do_bench, do_bench_cudagraph

    out = {"do_bench": do_bench(case.step, warmup=100, rep=300, return_mode="median")}
    out["queued"], out["queued_ahead"] = case.queued_ms(host_ms)
    try:  # last: a capture that fails can leave the stream unusable for what follows in this case
        out["do_bench_cudagraph"] = (
            None if case.cudagraphs else do_bench_cudagraph(case.step, rep=100, return_mode="median")
        )
    except Exception as exc:  # noqa: BLE001 - a step that cannot be captured says why
        out["do_bench_cudagraph"], out["cudagraph_error"] = None, f"{type(exc).__name__}: {exc}"[:200]
    return out


def spread(xs):
    return [round(statistics.median(xs), 5), round(min(xs), 5), round(max(xs), 5)]


def measure(path, configs, device, steps_per_round, rounds=ROUNDS, references=True):
    """Per config in this process: the engine's rounds and the loop's, interleaved (A B C A B C ...), which of the
    two goes first alternating from round to round."""
    ns = runpy.run_path(os.path.join(ROOT, path))
    cases = {c: Case(ns, c, device) for c in configs}
    ours, loop = {c: [] for c in cases}, {c: [] for c in cases}
    for config, case in cases.items():
        case.rung.steps_per_round = steps_per_round.get(config) or max(1, round(0.02 / max(case.rung.step_s, 1e-7)))
    for i in range(rounds):
        for config, case in cases.items():
            if i % 2:
                loop[config].append(case.loop_ms(case.rung.steps_per_round))
            ours[config].append(timing.time_round(case.workload, case.rung))
            if not i % 2:
                loop[config].append(case.loop_ms(case.rung.steps_per_round))
    results = {}
    for config, case in cases.items():
        ratios = [a / b for a, b in zip(ours[config], loop[config])]
        results[config] = {
            "steps_per_round": case.rung.steps_per_round,
            "engine_in_process_ms": spread(ours[config]),
            "loop_ms": spread(loop[config]),
            "engine_over_loop": spread(ratios),
        }
        if device == "cuda" and references:
            results[config].update(gpu_references(case, statistics.median(loop[config])))
    return cases, results


def profiler_busy(cases):
    """The engine's gpu_busy_ms (profiler, sum of kernel time) on this process's functions."""
    return {config: profiling.gpu_busy_ms(case.workload, case.rung) for config, case in cases.items()}


def fidelity_case(name, out_dir, jobs, device, configs, everything, alive, job_dirs, rows):
    """One model: its job, then this process's measurements of the same configs (added to the dicts and rows)."""
    path = FIDELITY_CASES[name]
    report, job_dir = explore(name, path, jobs, device, configs)
    shutil.copy(os.path.join(job_dir, "report.json"), os.path.join(out_dir, f"{name}.json"))
    if report["status"] != "ok":
        print("FAILED", name, report["failure"])
        return
    rt = report["runtime"]
    print(f"{name}: {rt['load']['text']}; {(rt.get('kernel_profile_summary') or {}).get('text')}", flush=True)
    jobs_b = {b["config"]: b for b in rt["benchmarks"]}
    # This process compiles on the caches the job's warm compiles filled (its own compile is not measured).
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(job_dir, "inductor-cache")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(job_dir, "triton-cache")
    ok = [c for c in configs if jobs_b.get(c, {}).get("status") == "ok"]
    cases, results = measure(path, ok, device, {c: jobs_b[c]["steps_per_round"] for c in ok})
    alive[name], job_dirs[name] = cases, job_dir
    for config in ok:
        b, r = jobs_b[config], results[config]
        r["job"] = {k: b.get(k) for k in ("median_ms", "p10_ms", "p90_ms", "gpu_busy_ms", "latency_ms")}
        r["job"]["speedup"] = (b.get("speedup") or {}).get("text")
        r["job"]["verdict"] = b["correctness"]["verdict"]
        r["job"]["cudagraphs"] = b["cudagraphs"].get("status")
        rows.append((name, config, r))
    everything[name] = {"load": rt["load"], "kernel_profile_summary": rt.get("kernel_profile_summary"), **results}
    print(json.dumps(results), flush=True)


def fidelity(out_dir, jobs, device, case_names, configs):
    torch._dynamo.config.recompile_limit = 64  # every config of every model compiles the same code objects
    everything, alive, job_dirs, rows = {}, {}, {}, []
    started = time.time()
    for name in case_names:
        if time.time() - started > DEADLINE_S:
            print(f"SKIPPED {name}: past the bench's {DEADLINE_S} s", flush=True)
            continue
        try:
            fidelity_case(name, out_dir, jobs, device, configs, everything, alive, job_dirs, rows)
        except Exception as exc:  # noqa: BLE001 - one model that fails keeps the others' figures
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", flush=True)
        with open(os.path.join(out_dir, "fidelity.json"), "w") as f:
            json.dump(everything, f, indent=1)

    drift = {}
    if "seed" in alive:
        seed = alive["seed"]
        drift["at_end_before_profiler"] = {
            c: spread([s.loop_ms(s.rung.steps_per_round) for _ in range(5)]) for c, s in seed.items()
        }
    if device == "cuda":
        for name, cases in alive.items():
            for config, busy in profiler_busy(cases).items():
                everything[name][config]["engine_in_process_gpu_busy_ms"] = busy
        if "seed" in alive:
            drift["at_end_after_profiler"] = {
                c: spread([s.loop_ms(s.rung.steps_per_round) for _ in range(5)]) for c, s in alive["seed"].items()
            }
    everything["drift"] = drift
    if "seed" in alive:
        everything["fresh_processes"] = [
            fresh_loop("seed", device, configs, job_dirs["seed"]) for _ in range(FRESH_PROCESSES)
        ]
    with open(os.path.join(out_dir, "fidelity.json"), "w") as f:
        json.dump(everything, f, indent=1)

    print(
        f"\n{'case':<18}{'config':<25}{'job ms':>8}{'loop ms (min-max)':>26}{'diff':>7}{'in-proc':>9}{'/loop':>7}"
        f"{'job busy':>10}{'proc busy':>10}{'do_bench':>9}{'cudagraph':>10}{'queued':>8}  speedup (job)"
    )
    for name, config, r in rows:
        job, loop = r["job"], r["loop_ms"]
        busy = everything[name][config].get("engine_in_process_gpu_busy_ms")

        def f(v, w=9):
            return f"{v:>{w}.4f}" if isinstance(v, float) else f"{'-':>{w}}"

        print(
            f"{name:<18}{config:<25}{job['median_ms']:>8.4f}{loop[0]:>10.4f} ({loop[1]:.4f}-{loop[2]:.4f})"
            f"{(job['median_ms'] / loop[0] - 1) * 100:>6.1f}%{r['engine_in_process_ms'][0]:>9.4f}"
            f"{r['engine_over_loop'][0]:>7.3f}{f(job['gpu_busy_ms'], 10)}{f(busy, 10)}{f(r.get('do_bench'))}"
            f"{f(r.get('do_bench_cudagraph'), 10)}{f(r.get('queued'), 8)}  {job['speedup']}"
        )
    for key, value in drift.items():
        print(f"seed loop {key}: " + ", ".join(f"{c} {v[0]:.4f} ({v[1]:.4f}-{v[2]:.4f})" for c, v in value.items()))
    for i, fresh in enumerate(everything.get("fresh_processes", [])):
        print(f"seed loop, fresh process {i + 1}: " + ", ".join(f"{c} {v:.4f}" for c, v in fresh.items()))


def fresh_loop(name, device, configs, job_dir):
    caches = {"TORCHINDUCTOR_CACHE_DIR": "inductor-cache", "TRITON_CACHE_DIR": "triton-cache"}
    proc = subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            "-",
            "loop",
            "--cases",
            name,
            "--device",
            device,
            "--configs",
            ",".join(configs),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **{k: os.path.join(job_dir, v) for k, v in caches.items()}},
    )
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print("fresh loop failed:", proc.stderr[-1500:])
        return {}


def loop_only(name, device, configs):
    """The plain loop alone in this (fresh) process: median of 7 rounds of about 20 ms per config, interleaved."""
    ns = runpy.run_path(os.path.join(ROOT, FIDELITY_CASES[name]))
    torch._dynamo.config.recompile_limit = 64
    cases = {c: Case(ns, c, device) for c in configs if c != "inductor_reduce_overhead"}
    n = {c: max(1, round(0.02 / max(s.rung.step_s, 1e-7))) for c, s in cases.items()}
    times = {c: [] for c in cases}
    for _ in range(7):
        for c, s in cases.items():
            times[c].append(s.loop_ms(n[c]))
    print(json.dumps({c: statistics.median(t) for c, t in times.items()}))


def in_process(device, case_names, configs):
    """The engine's round against the loop in this process only (no job): the method, without process drift."""
    torch._dynamo.config.recompile_limit = 64
    print(
        f"\n{'case':<18}{'config':<26}{'steps':>6}{'engine ms':>11}{'loop ms (min-max)':>26}{'engine/loop (min-max)':>24}"
    )
    for name in case_names:
        _, results = measure(FIDELITY_CASES[name], configs, device, {}, rounds=15, references=False)
        for config, r in results.items():
            e, lp, q = r["engine_in_process_ms"], r["loop_ms"], r["engine_over_loop"]
            print(
                f"{name:<18}{config:<26}{r['steps_per_round']:>6}{e[0]:>11.4f}{lp[0]:>10.4f} ({lp[1]:.4f}-{lp[2]:.4f})"
                f"{q[0]:>10.3f} ({q[1]:.3f}-{q[2]:.3f})",
                flush=True,
            )


def cudagraphs(jobs):
    print(f"\n{'case':<16}{'config':<26}{'status':<8}{'ms/step':>9}  verdict    cudagraphs")
    for case, path in {**CUDAGRAPH_CASES, "mlp_train_large": FIDELITY_CASES["mlp_train_large"]}.items():
        report, _ = explore(case, path, jobs, "cuda", CONFIGS)
        if report["status"] != "ok":
            print(f"{case:<16}FAILED {report['failure']['message'][:300]}")
            continue
        for b in report["runtime"]["benchmarks"]:
            print(
                f"{case:<16}{b['config']:<26}{b['status']:<8}{b.get('median_ms') or 0:>9.4f}  "
                f"{(b.get('correctness') or {}).get('verdict')!s:<10} {b['cudagraphs']} {b.get('error') or ''}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("part", nargs="?", default="fidelity", choices=["fidelity", "in_process", "cudagraphs", "loop"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cases", default=",".join(FIDELITY_CASES))
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--jobs", default=None, help="where the jobs' folders go (default: OUT/jobs)")
    a = parser.parse_args()
    configs = a.configs.split(",")
    if a.part == "loop":
        loop_only(a.cases, a.device, configs)
        sys.exit(0)
    os.makedirs(a.out, exist_ok=True)
    jobs = a.jobs or os.path.join(a.out, "jobs")
    if a.part == "fidelity":
        fidelity(a.out, jobs, a.device, a.cases.split(","), configs)
    elif a.part == "in_process":
        in_process(a.device, a.cases.split(","), configs)
    else:
        cudagraphs(jobs)
    device = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {device}, load {open('/proc/loadavg').read().split()[0]}")
