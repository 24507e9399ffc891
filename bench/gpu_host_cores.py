"""Why does a host-bound GPU step run at one speed in one process and 1.3-2x slower in the next? (issue 18 item 3)

docs/benchmarks.md ("GPU: the job across fresh processes against a user's loop") found the host's launch speed to be a
property of the process: within a process the rounds agree to a few percent, across fresh processes the medians
take two values. Two candidate causes, told apart here in one run:
- the core: a process's one busy host thread stays on the core the scheduler gave it, and the cores (vCPUs of a
  virtual machine, SMT siblings of busy host threads) are not equally fast;
- the process itself: address-space layout, the allocator's history, hash seeds (why pyperf spawns processes).

Parts, each printing a table (all on the device machine; a CPU dry run checks the script: --device cpu):
  sweep:  one process pins its thread to each allowed core in turn (sched_setaffinity), REPEATS times around all
          cores, and times ROUNDS rounds of each case there: per-core medians. Stable per-core differences that
          span the fresh processes' spread mean the core is the cause.
  fresh:  FRESH unpinned fresh processes, each times the cases and samples the core its thread ran on
          (sched_getcpu) every round: does a slow process sit on a slow core?
  pinned: one fresh process per core of a few (the fastest and slowest cores of the sweep), pinned from its start:
          do processes on one core agree with each other (then the process is not the cause)?
  rotate: fresh processes that move their thread to the next core every round (what the engine did 4-6 Dec): the
          spread of their medians against the unpinned processes'.
  --pool: instead of the above, fresh processes alternately with Inductor's compile-worker pool (the default) and
          without it (TORCHINDUCTOR_COMPILE_THREADS=1), each timing the compiled 1024² seed in 1.5 s windows right
          after its compile (warm caches), with what /proc/stat says the rest of the machine did in each window
          (user+system, interrupts, steal, in cores) and how many processes descend from it: does the pool's
          start-up run beside the first seconds of timing, as in the engine's measuring processes?
Usage: python bench/gpu_host_cores.py [--device cuda] [--fresh 8] [--rotate 6]"""

import argparse
import json
import os
import runpy
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from engine.measure.cores import current_core  # noqa: E402 - Python has no sched_getcpu

ROUNDS = 5  # rounds per case per core in the sweep; 11 in a fresh process
STEPS_S = 0.02  # one round's length


def seed(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def cases(device):
    """name -> a no-arg step: the 1024² seed eager and compiled (host-bound), the 4096² seed compiled (balanced: GPU
    0.050 ms against a launch of 0.03-0.05 ms, the case whose job read 7-11% slower than its loop on 5 Dec), the
    block eager (host-bound)."""
    x = torch.randn(1024, 1024, device=device)
    x_large = torch.randn(4096, 4096, device=device)
    compiled = torch.compile(seed, dynamic=False)  # static for both sizes, as each job compiles it (one size each)
    block_class = runpy.run_path(os.path.join(ROOT, "bench", "models", "transformer_block.py"))["Block"]
    block = block_class().to(device, torch.bfloat16).eval()  # the fidelity bench's block, a smaller batch
    xb = torch.randn(4, 256, 768, device=device, dtype=torch.bfloat16)
    out = {
        "seed_eager": lambda: seed(x),
        "seed_inductor": lambda: compiled(x),
        "seed_large_inductor": lambda: compiled(x_large),
        "block_eager": lambda: block(xb),
    }
    with torch.no_grad():
        for fn in out.values():
            for _ in range(3):
                fn()
    sync(device)
    return out


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def steps_per_round(fn, device):
    sync(device)
    t0 = time.perf_counter()
    for _ in range(20):
        fn()
    sync(device)
    return max(1, round(STEPS_S / ((time.perf_counter() - t0) / 20)))


def round_ms(fn, n, device):
    """n back-to-back steps between two CUDA events (a user's loop), one untimed step first."""
    fn()
    sync(device)
    if device == "cuda":
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(n):
            fn()
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end) / n
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) * 1000 / n


def allowed():
    return sorted(os.sched_getaffinity(0))


def sweep(device, repeats):
    """Per core: the median of every round timed with the thread pinned there, over `repeats` passes round all cores."""
    fns = cases(device)
    n = {k: steps_per_round(f, device) for k, f in fns.items()}
    cores = allowed()
    per = {c: {k: [] for k in fns} for c in cores}
    with torch.no_grad():
        for _ in range(repeats):
            for c in cores:
                os.sched_setaffinity(0, {c})
                for _ in range(ROUNDS):
                    for k, f in fns.items():
                        per[c][k].append(round_ms(f, n[k], device))
    os.sched_setaffinity(0, set(cores))
    return {c: {k: statistics.median(v) for k, v in d.items()} for c, d in per.items()}, n


def one_process(device, pin, rotate, steps):
    """What a fresh process prints (JSON): its per-case medians and the cores its thread ran on."""
    cores = allowed()
    if pin is not None:
        os.sched_setaffinity(0, {pin})
    fns = cases(device)
    n = {k: steps.get(k) or steps_per_round(f, device) for k, f in fns.items()}
    times, seen = {k: [] for k in fns}, []
    with torch.no_grad():
        for i in range(11):
            if rotate:
                os.sched_setaffinity(0, {cores[i % len(cores)]})
            for k, f in fns.items():
                times[k].append(round_ms(f, n[k], device))
                seen.append(current_core())
    print(json.dumps({"medians": {k: statistics.median(v) for k, v in times.items()}, "cores": sorted(set(seen))}))


def proc_stat():
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return {"user+system": user + nice + system, "irq": irq + softirq, "steal": steal}


def descendants():
    """Processes whose parent chain reaches this one (compile workers and their sidecar)."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            parents[int(pid)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError):
            continue
    mine, count = {os.getpid()}, 0
    for _ in range(4):  # a few generations
        new = {p for p, pp in parents.items() if pp in mine} - mine
        count, mine = count + len(new), mine | new
    return count


def pool_child(device):
    """Compile the seed (warm caches after the first process), then time it in 1.5 s windows: per window the
    median round, the other cores by /proc/stat field, and the descendants alive."""
    t0 = time.perf_counter()
    x = torch.randn(1024, 1024, device=device)
    compiled = torch.compile(seed)
    with torch.no_grad():
        compiled(x)
        sync(device)
        compile_s = time.perf_counter() - t0
        n = steps_per_round(lambda: compiled(x), device)
        hz, windows = os.sysconf("SC_CLK_TCK"), []
        for _ in range(4):
            start, own, w0, rounds = proc_stat(), time.process_time(), time.perf_counter(), []
            while time.perf_counter() - w0 < 1.5:
                rounds.append(round_ms(lambda: compiled(x), n, device))
            wall, end = time.perf_counter() - w0, proc_stat()
            cores = {k: (end[k] - start[k]) / hz / wall for k in end}
            cores["user+system"] -= (time.process_time() - own) / wall
            windows.append(
                {
                    "ms": statistics.median(rounds),
                    **{k: round(v, 2) for k, v in cores.items()},
                    "descendants": descendants(),
                }
            )
    print(json.dumps({"compile_s": round(compile_s, 2), "windows": windows}))


def pool_probe(device, pairs):
    print(
        "\npool probe: the compiled 1024² seed in 1.5 s windows after its compile; per window: ms per step, "
        "other cores (user+system less this process, interrupts, steal), descendants",
        flush=True,
    )
    for i in range(pairs):
        for threads in ("default", "1"):
            env = dict(os.environ)
            if threads == "1":
                env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
            t0 = time.time()
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--device", device, "--pool-child"],
                capture_output=True,
                text=True,
                env=env,
            )
            try:
                r = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                print("pool child failed:", proc.stderr[-800:], flush=True)
                continue
            ws = " | ".join(
                f"{w['ms']:.4f} ms, {w['user+system']:.2f}/{w['irq']:.2f}/{w['steal']:.2f}, {w['descendants']}"
                for w in r["windows"]
            )
            print(
                f"pair {i} compile threads {threads:>7}: process {time.time() - t0:5.1f}s, compile "
                f"{r['compile_s']:5.2f}s; windows: {ws}",
                flush=True,
            )


def spawn(device, steps, pin=None, rotate=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--device", device, "--child", "--steps", json.dumps(steps)]
    cmd += (["--pin", str(pin)] if pin is not None else []) + (["--rotating"] if rotate else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print("child failed:", proc.stderr[-1500:], flush=True)
        return None


def fmt(d, keys):
    return " ".join(f"{d[k]:.4f}" for k in keys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--fresh", type=int, default=8)
    p.add_argument("--rotate", type=int, default=6)
    p.add_argument("--pinned", type=int, default=3, help="fresh pinned processes on each of the 2 extreme cores")
    p.add_argument("--child", action="store_true")
    p.add_argument("--pin", type=int)
    p.add_argument("--rotating", action="store_true", help="child: the next core every round")
    p.add_argument("--steps", default="{}")
    p.add_argument("--pool", type=int, default=0, help="pairs of pool-probe processes (then nothing else)")
    p.add_argument("--pool-child", action="store_true")
    a = p.parse_args()
    if a.pool_child:
        pool_child(a.device)
        return
    if a.pool:
        pool_probe(a.device, a.pool)
        return
    if a.child:
        one_process(a.device, a.pin, a.rotating, json.loads(a.steps))
        return
    t0 = time.time()
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name() if a.device == 'cuda' else 'cpu'}, "
        f"cores {allowed()}, load {open('/proc/loadavg').read().strip()}",
        flush=True,
    )
    per_core, steps = sweep(a.device, a.repeats)
    keys = list(steps)
    print(f"\nsweep ({time.time() - t0:.0f}s): ms per step with the thread pinned to each core, steps {steps}")
    print(f"{'core':>5}  " + " ".join(f"{k:>14}" for k in keys))
    for c, d in per_core.items():
        print(f"{c:>5}  " + " ".join(f"{d[k]:>14.4f}" for k in keys), flush=True)
    ranked = sorted(per_core, key=lambda c: per_core[c]["seed_eager"])
    groups = {"unpinned": [], "rotating": []}
    for i in range(max(a.fresh, a.rotate)):  # interleaved: a drift of the machine's speed falls on both alike
        if i < a.fresh:
            groups["unpinned"].append(spawn(a.device, steps))
        if i < a.rotate:
            groups["rotating"].append(spawn(a.device, steps, rotate=True))
    for c in (ranked[0], ranked[-1]):
        groups[f"pinned to {c}"] = [spawn(a.device, steps, pin=c) for _ in range(a.pinned)]
    print(
        f"\nfresh processes ({time.time() - t0:.0f}s): per-process medians (ms per step: {', '.join(keys)}), cores seen"
    )
    for label, runs in groups.items():
        runs = [r for r in runs if r]
        for r in runs:
            print(f"{label:>14}  {fmt(r['medians'], keys)}  cores {r['cores']}")
        for k in keys:
            xs = [r["medians"][k] for r in runs]
            if xs:
                med = statistics.median(xs)
                print(
                    f"{label:>14}  {k}: median {med:.4f}, {min(xs):.4f}-{max(xs):.4f} "
                    f"({(max(xs) - min(xs)) / med:.0%} apart)"
                )
    print(f"done in {time.time() - t0:.0f}s, load {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
