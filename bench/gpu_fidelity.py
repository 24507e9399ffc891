"""GPU fidelity: pt2scope's reported numbers against independent measurements of the same steps on the same GPU.
Run on the device machine (a CPU dry run checks the script here: --device cpu):
    python bench/gpu_fidelity.py OUT [fidelity|in_process|cudagraphs|loop] [--device cpu] [--cases a,b] [--configs ...]
        [--loops N] [--processes N] [--in-process] [--jobs DIR]
fidelity, per model: the engine's job (`python -m engine explore`, its own child process), then N (--loops, default
2) fresh processes, one after the other (the job's figures across --processes measuring processes, default 2), each running a user's loop of the same steps on the job's warm caches
(`with torch.no_grad(): for _ in range(n): fn(x)`; training: grads to None, forward, `.float().sum().backward()`;
reduce-overhead: `torch.compiler.cudagraph_mark_step_begin()` before each step): CUDA events around n back-to-back
steps (n = the job's steps_per_round), one untimed step first, 11 rounds interleaved across configs, the process's
median. The table compares the job's figure across its own fresh measuring processes (benchmarks[].processes:
median of the process medians, lowest-highest) with the loop's across its processes, diff in %, and counts the
cases within 5%; beside them the capture process's own figure (median_ms), and per case a reading in words
(host-bound: the GPU is busy for under 60% of the step, by do_bench_cudagraph in the first loop process after its
rounds, else the job's gpu_busy_ms; noisy: the processes' medians spread more than 5%). Then the per-process medians.
--in-process adds the earlier bench's references in this process (engine round vs loop interleaved, do_bench,
do_bench_cudagraph, queued).
in_process: the engine's round against the loop alone, in this process (no job, no GPU-busy references).
cudagraphs: mode="reduce-overhead" with a list of example inputs and with training: status, CUDA graphs, verdict.
loop: one fresh loop process (what fidelity spawns; prints JSON).
Prints the table last; writes OUT/fidelity.json, OUT/table.txt (after each model) and each job's report as
OUT/<case>.json."""

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
from engine.stages.runtime import timing  # noqa: E402 - the engine's own timing code, measured in this process
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
DEADLINE_S = 420  # no new model after this: the device call's 10 minutes must hold the rest (a model: about 2 min)


def explore(case, path, jobs, device, configs, processes=2):
    t0 = time.time()
    out = os.path.join(jobs, case)
    cmd = [sys.executable, "-m", "engine", "explore", os.path.join(ROOT, path), "--device", device]
    cmd += ["--configs", ",".join(configs), "--out", out, "--quiet", "--processes", str(processes)]
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


def job_figures(report):
    """Per config, what the job reports: its figure across its fresh measuring processes (benchmarks[].processes)
    and its capture process's own (median_ms)."""
    rt = report["runtime"]
    out = {}
    for b in rt["benchmarks"]:
        if b.get("status") != "ok":
            continue
        p = b.get("processes") or {}
        out[b["config"]] = {
            "processes_ms": p.get("median_ms"),
            "processes_low_ms": p.get("low_ms"),
            "processes_high_ms": p.get("high_ms"),
            "process_medians_ms": p.get("process_medians_ms") or [],
            "reading": p.get("reading"),  # the report's own words: noisy, host-bound, GPU-bound
            "capture_ms": b.get("median_ms"),
            "capture_p10_ms": b.get("p10_ms"),
            "capture_p90_ms": b.get("p90_ms"),
            "steps_per_round": b.get("steps_per_round"),
            "gpu_busy_ms": b.get("gpu_busy_ms"),
            "latency_ms": b.get("latency_ms"),
            "speedup": (b.get("speedup") or {}).get("text"),
            "capture_speedup": (b.get("capture_speedup") or {}).get("text"),
            "verdict": (b.get("correctness") or {}).get("verdict"),
            "cudagraphs": (b.get("cudagraphs") or {}).get("status"),
        }
    procs = rt.get("processes") or {}
    runs = [
        {
            k: r.get(k)
            for k in ("label", "status", "reason", "rounds", "medians_ms", "contended", "load", "wall_seconds")
        }
        for r in procs.get("runs") or []
    ]
    return out, {"status": procs.get("status"), "reason": procs.get("reason"), "runs": runs}


def fidelity_case(name, out_dir, jobs, device, configs, loops, everything, rows, with_in_process, processes):
    """One model: its job (its figures across `processes` measuring processes), then `loops` fresh processes that
    each run a user's loop of the same steps (on the job's warm caches), one after the other; optionally the
    in-process references of the earlier bench."""
    path = FIDELITY_CASES[name]
    report, job_dir = explore(name, path, jobs, device, configs, processes)
    shutil.copy(os.path.join(job_dir, "report.json"), os.path.join(out_dir, f"{name}.json"))
    if report["status"] != "ok":
        print("FAILED", name, report["failure"])
        return
    rt = report["runtime"]
    print(f"{name}: {rt['load']['text']}; {(rt.get('kernel_profile_summary') or {}).get('text')}", flush=True)
    job, procs = job_figures(report)
    ok = [c for c in configs if c in job]
    steps = {c: job[c]["steps_per_round"] for c in ok}
    fresh = [fresh_loop(name, device, ok, job_dir, steps, references=(i == 0)) for i in range(loops)]
    fresh = [f for f in fresh if f]
    entry = {"load": rt["load"], "kernel_profile_summary": rt.get("kernel_profile_summary"), "job_processes": procs}
    for config in ok:
        medians = [f["medians_ms"][config] for f in fresh if config in f.get("medians_ms", {})]
        r = {"job": job[config], "loop_process_medians_ms": medians}
        if medians:
            r["loop_ms"] = [statistics.median(medians), min(medians), max(medians)]
            r["loop_within_process"] = [f["spread_ms"][config] for f in fresh if config in f.get("spread_ms", {})]
        refs = (fresh[0].get("references") or {}).get(config, {}) if fresh else {}
        r.update(refs)
        entry[config] = r
        rows.append((name, config, r))
    entry["fresh_loads"] = [f.get("load") for f in fresh]
    if with_in_process:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(job_dir, "inductor-cache")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(job_dir, "triton-cache")
        _, results = measure(path, ok, device, steps)
        for config in ok:
            entry[config]["in_process"] = results[config]
    everything[name] = entry
    print(json.dumps({c: entry[c] for c in ok}), flush=True)


def reading(r):
    """Why a case is or is not within 5%, in words: host-bound (the GPU idles for much of a step, so the figure is
    the host's launch speed, which moves from process to process) and noisy (the processes' medians spread more than
    the 5% asked)."""
    job, loop = r["job"], r.get("loop_ms")
    if not loop or not job.get("processes_ms"):
        return "not compared (no loop or no figure across processes)"
    words = []
    busy = r.get("do_bench_cudagraph") or job.get("gpu_busy_ms")
    if busy:
        share = busy / loop[0]
        words.append(f"GPU busy {share:.0%} of the step" + (": host-bound" if share < 0.6 else ""))
    spreads = []
    for label, lo, hi, med in (
        ("job", job["processes_low_ms"], job["processes_high_ms"], job["processes_ms"]),
        ("loop", loop[1], loop[2], loop[0]),
    ):
        if med and hi is not None and lo is not None:
            spreads.append((label, (hi - lo) / med))
    noisy = [f"{label} processes {s:.0%} apart" for label, s in spreads if s > 0.05]
    if noisy:
        words.append("noisy: " + ", ".join(noisy))
    j_lo, j_hi = job["processes_low_ms"], job["processes_high_ms"]
    if j_lo is not None and not (j_hi < loop[1] or loop[2] < j_lo):
        words.append("spreads overlap")
    return "; ".join(words)


def fidelity(
    out_dir,
    jobs,
    device,
    case_names,
    configs,
    loops=FRESH_PROCESSES,
    with_in_process=False,
    deadline_s=DEADLINE_S,
    processes=FRESH_PROCESSES,
):
    everything, rows = {}, []
    started = time.time()
    for name in case_names:
        if time.time() - started > deadline_s:
            print(f"SKIPPED {name}: past the bench's {deadline_s} s", flush=True)
            continue
        try:
            fidelity_case(name, out_dir, jobs, device, configs, loops, everything, rows, with_in_process, processes)
        except Exception as exc:  # noqa: BLE001 - one model that fails keeps the others' figures
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", flush=True)
        with open(os.path.join(out_dir, "fidelity.json"), "w") as f:
            json.dump(everything, f, indent=1)
        with open(os.path.join(out_dir, "table.txt"), "w") as f:  # so far: a run cut short keeps its table
            f.write(fidelity_table(everything, rows) + "\n")
    print(fidelity_table(everything, rows))


def loop_halves_apart(medians):
    """The user's loop against itself, in %: the median of its 1st, 3rd, ... processes' medians over that of its 2nd,
    4th, ...; None with fewer than 4. A reference that moves more than 5% between two halves of its own processes
    cannot decide a 5% comparison."""
    if len(medians) < 4:
        return None
    return (statistics.median(medians[0::2]) / statistics.median(medians[1::2]) - 1) * 100


def fidelity_table(everything, rows):
    def f(v, w=8, d=4):
        return f"{v:>{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"

    lines = [
        "\nThe job across its fresh measuring processes (benchmarks[].processes: median of the process medians, "
        "lowest-highest) against a user's CUDA-event loop of the same steps in fresh processes (median of the "
        "process medians, lowest-highest); capture = the job's own process (median_ms); ms per step",
        f"{'case':<18}{'config':<25}{'job procs ms (low-high)':>26}{'capture':>9}{'loop procs ms (low-high)':>27}"
        f"{'diff':>8}{'cap diff':>9}{'<=5%':>5}{'ref self':>9}  speedup (job, across processes) | reading",
        "(ref self: the loop's odd-numbered processes' median against its even-numbered ones': how far the "
        "reference reproduces itself)",
    ]
    within = compared = reproduced = halved = 0
    for name, config, r in rows:
        job, loop = r["job"], r.get("loop_ms")
        self_diff = loop_halves_apart(r.get("loop_process_medians_ms") or [])
        if self_diff is not None:
            halved += 1
            reproduced += abs(self_diff) <= 5
        jp = job.get("processes_ms")
        diff = cap = None
        if loop and jp:
            diff = (jp / loop[0] - 1) * 100
            compared += 1
            within += abs(diff) <= 5
        if loop and job.get("capture_ms"):
            cap = (job["capture_ms"] / loop[0] - 1) * 100
        jtxt = f"{jp:.4f} ({job['processes_low_ms']:.4f}-{job['processes_high_ms']:.4f})" if jp else "-"
        ltxt = f"{loop[0]:.4f} ({loop[1]:.4f}-{loop[2]:.4f})" if loop else "-"
        ok = "-" if diff is None else ("yes" if abs(diff) <= 5 else "no")
        lines.append(
            f"{name:<18}{config:<25}{jtxt:>26}{f(job.get('capture_ms'), 9)}{ltxt:>27}"
            f"{f(diff, 7, 1)}%{f(cap, 8, 1)}%{ok:>5}{f(self_diff, 8, 1)}%  {job.get('speedup')} | {reading(r)}"
            + (f" | the report: {job['reading']}" if job.get("reading") else "")
        )
    lines.append(f"within 5%: {within} of {compared} compared ({len(rows)} cases)")
    lines.append(f"the reference within 5% of itself (its two halves): {reproduced} of {halved}")
    lines.append("\nPer-process medians (ms per step): the job's measuring processes | the fresh loop processes")
    for name, config, r in rows:
        job = r["job"]
        jm = ", ".join(f"{v:.4f}" for v in job.get("process_medians_ms") or [])
        lm = ", ".join(f"{v:.4f}" for v in r.get("loop_process_medians_ms") or [])
        within_p = "; ".join(f"{s[0]:.4f}-{s[1]:.4f}" for s in r.get("loop_within_process") or [])
        lines.append(
            f"{name:<18}{config:<25}job [{jm}] | loop [{lm}] (p10-p90 within: {within_p}); capture p10-p90 "
            f"{f(job.get('capture_p10_ms'), 0)}-{f(job.get('capture_p90_ms'), 0)}; GPU busy job "
            f"{f(job.get('gpu_busy_ms'), 0)}, do_bench_cudagraph {f(r.get('do_bench_cudagraph'), 0)}; "
            f"CUDA graphs {job.get('cudagraphs')}; capture speedup {job.get('capture_speedup')}"
        )
    for name, e in everything.items():
        runs = e.get("job_processes", {}).get("runs", [])
        desc = "; ".join(
            f"{x['label']} {x['status']} rounds {x.get('rounds')} contended {x.get('contended')} load {x.get('load')}"
            for x in runs
        )
        lines.append(f"{name}: job processes {e['job_processes'].get('status')}: {desc}; loop loads {e['fresh_loads']}")
    return "\n".join(lines)


def fresh_loop(name, device, configs, job_dir, steps, references=False):
    """A user's loop of the same steps in a fresh process, on the job's warm caches."""
    caches = {"TORCHINDUCTOR_CACHE_DIR": "inductor-cache", "TRITON_CACHE_DIR": "triton-cache"}
    cmd = [sys.executable, os.path.abspath(__file__), "-", "loop", "--cases", name, "--device", device]
    cmd += ["--configs", ",".join(configs), "--steps", json.dumps(steps)] + (["--references"] if references else [])
    t0 = time.time()
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**os.environ, **{k: os.path.join(job_dir, v) for k, v in caches.items()}},
    )
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"[{name} loop process: {time.time() - t0:.1f}s] {json.dumps(out['medians_ms'])}", flush=True)
        return out
    except (IndexError, ValueError, KeyError):
        print("fresh loop failed:", proc.stdout[-500:], proc.stderr[-1500:], flush=True)
        return {}


LOOP_ROUNDS = 11


def loop_only(name, device, configs, steps, references):
    """A user's loop alone in this (fresh) process: every config compiled (on warm caches), one untimed step, then
    LOOP_ROUNDS rounds interleaved across configs, each round `steps[config]` back-to-back steps between two CUDA
    events (the job's own steps per round); prints the medians. With `references`, afterwards (outside the timed
    rounds): do_bench_cudagraph per config (GPU busy; not for reduce-overhead)."""
    ns = runpy.run_path(os.path.join(ROOT, FIDELITY_CASES[name]))
    torch._dynamo.config.recompile_limit = 64
    cases = {c: Case(ns, c, device) for c in configs}
    n = {c: steps.get(c) or max(1, round(0.02 / max(s.rung.step_s, 1e-7))) for c, s in cases.items()}
    times = {c: [] for c in cases}
    for _ in range(LOOP_ROUNDS):
        for c, s in cases.items():
            times[c].append(s.loop_ms(n[c]))
    out = {
        "medians_ms": {c: statistics.median(t) for c, t in times.items()},
        "spread_ms": {c: [timing_quantile(t, 0.1), timing_quantile(t, 0.9)] for c, t in times.items()},
        "rounds_ms": times,
        "steps_per_round": n,
        "load": open("/proc/loadavg").read().split()[0],
    }
    if references and device == "cuda":
        from triton.testing import do_bench_cudagraph

        refs = {}
        for c, s in cases.items():
            if s.cudagraphs:
                continue
            try:
                refs[c] = {"do_bench_cudagraph": do_bench_cudagraph(s.step, rep=100, return_mode="median")}
            except Exception as exc:  # noqa: BLE001 - a step that cannot be captured says why
                refs[c] = {"cudagraph_error": f"{type(exc).__name__}: {exc}"[:200]}
        out["references"] = refs
    print(json.dumps(out))


def timing_quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


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
    parser.add_argument("--loops", type=int, default=FRESH_PROCESSES, help="fresh loop processes per model")
    parser.add_argument(
        "--processes", type=int, default=FRESH_PROCESSES, help="the job's measuring processes (explore --processes)"
    )
    parser.add_argument("--deadline", type=float, default=DEADLINE_S, help="fidelity: no new model after this (s)")
    parser.add_argument("--steps", default="{}", help="loop: steps per round per config (JSON)")
    parser.add_argument("--references", action="store_true", help="loop: do_bench_cudagraph after the rounds")
    parser.add_argument("--in-process", action="store_true", help="fidelity: also the earlier in-process references")
    a = parser.parse_args()
    configs = a.configs.split(",")
    if a.part == "loop":
        loop_only(a.cases, a.device, configs, json.loads(a.steps), a.references)
        sys.exit(0)
    os.makedirs(a.out, exist_ok=True)
    jobs = a.jobs or os.path.join(a.out, "jobs")
    if a.part == "fidelity":
        fidelity(a.out, jobs, a.device, a.cases.split(","), configs, a.loops, a.in_process, a.deadline, a.processes)
    elif a.part == "in_process":
        in_process(a.device, a.cases.split(","), configs)
    else:
        cudagraphs(jobs)
    device = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {device}, load {open('/proc/loadavg').read().split()[0]}")
