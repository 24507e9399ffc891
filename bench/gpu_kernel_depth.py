"""Follow every kernel down on the GPU (issue 24): for each model, the engine's CLI (eager, inductor default,
reduce-overhead, max-autotune) and then, per Triton kernel of the recorded compile, what the report holds: the IR
stages present, the lines of each mapped to the kernel's source, registers, spills and the launch config chosen,
its place on the roofline; per rung every autotuning decision and the step split into GPU busy and host time.

    python bench/gpu_kernel_depth.py [MODEL.py ...] [--out DIR] [--configs A,B,...]

Default models, in this order: a transformer block (bench/models/transformer_block.py), a conv net
(examples/conv_bn.py) and the seed at 64 MB (bench/models/seed_large.py). Each report is kept in --out (default
$OUT, else a temporary folder) as <model>.json.gz: the recorded GPU fixtures of tests/fixtures/reports come from here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("bench/models/transformer_block.py", "examples/conv_bn.py", "bench/models/seed_large.py")
CONFIGS = "eager,inductor_default,inductor_reduce_overhead,inductor_max_autotune"


def explore(model: str, configs: str) -> tuple[dict, float]:
    # The job folder stays outside --out: the device tool brings back only a few files from $OUT.
    out = tempfile.mkdtemp(prefix=os.path.basename(model).removesuffix(".py") + "-")
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "engine", "explore", model, "--device", "cuda", "--configs", configs]
        + ["--no-warm-compile", "--out", out, "--quiet"],
        cwd=ROOT,
        check=True,
        timeout=900,
    )
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), time.perf_counter() - t0


def figure(value, unit: str = "", digits: int = 3) -> str:
    if value is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{prefix}{unit}"
    return f"{value:.{digits}g}{unit}"


def print_report(name: str, report: dict, seconds: float) -> None:
    rt, inductor = report["runtime"], report["inductor"]
    peaks, bandwidth = rt["compute_peaks"], rt["memory_bandwidth"]["bytes_per_s"]
    print(f"\n## {name}: job {seconds:.1f} s, torch {report['environment'].get('torch_version')}")
    print(
        f"peaks: copy {figure(bandwidth, 'B/s')}, fp32 {figure(peaks['fp32'], 'FLOP/s')}, "
        f"tf32 {figure(peaks['tf32'], 'FLOP/s')}, bf16 {figure(peaks['bf16'], 'FLOP/s')}"
    )
    profile = {r["kernel"]: r for r in rt["kernel_profile"] if r["kernel"]}
    print("kernel | stages (lines mapped) | regs/spills | config | variants | FLOP/B | FLOP/s | bound | of roof")
    for kernel in inductor["kernels"]:
        code, row = kernel["device_code"] or {}, profile.get(kernel["name"]) or {}
        stages = " ".join(f"{s['stage']}({len(s['lines'])})" for s in code.get("stages", [])) or "-"
        config = ",".join(f"{k}={v}" for k, v in (code.get("config") or {}).items())
        share = row.get("attainable_share")
        print(
            f"{kernel['name']} | {stages} | {code.get('registers')}/{code.get('spills')} | {config} "
            f"w{code.get('num_warps')} s{code.get('num_stages')} | {code.get('compiled_variants')} | "
            f"{figure(row.get('arithmetic_intensity'))} | {figure(row.get('flops_per_s'), 'FLOP/s')} | "
            f"{row.get('bound') or '-'} | {'-' if share is None else f'{share:.0%}'}"
        )
        for missing in code.get("missing", []):
            print(f"    missing: {missing}")
    print("autotune: rung | kind | op | inputs | choices | chosen (ms) | runner-up (ms)")
    for decision in rt["autotune"]:
        choices = decision["choices"]
        best = choices[0] if choices else {}
        second = choices[1] if len(choices) > 1 else {}
        print(
            f"  {decision['config']} | {decision['kind']} | {decision['op']} | {' '.join(decision['inputs'])} | "
            f"{len(choices)} | {best.get('name')} ({best.get('ms')}) | {second.get('name')} ({second.get('ms')})"
        )
    print("step: rung | median ms | GPU busy ms | host ms")
    for bench in rt["benchmarks"]:
        busy, median = bench["gpu_busy_ms"], bench["median_ms"]
        host = None if busy is None or median is None else max(0.0, median - busy)
        print(f"  {bench['config']} | {median} | {busy} | {host if host is None else round(host, 4)}")
    for entry in report["unavailable"]:
        print(f"  unavailable: {entry['name']}: {entry['reason'][:200]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp(prefix="kernel-depth-"))
    parser.add_argument("--configs", default=CONFIGS)
    args = parser.parse_args()
    nvdisasm = shutil.which("nvdisasm")
    print(f"nvdisasm on PATH: {nvdisasm or 'none'}; models: {', '.join(args.models)}")
    for model in args.models:
        name = os.path.basename(model).removesuffix(".py")
        try:
            report, seconds = explore(model, args.configs)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            print(f"\n## {name}: the job failed: {exc}", flush=True)
            continue
        with gzip.open(os.path.join(args.out, f"{name}.json.gz"), "wt") as f:
            json.dump(report, f)
        print_report(name, report, seconds)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
