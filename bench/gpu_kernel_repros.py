"""Every kernel's repro.py on the GPU (issue 23 item 1, kernels): for each report, each generated kernel's script
(contract.repro.kernel_repro, as the page downloads it) run in a fresh process, its lone launch checked against what
it wrote inside the graph and timed (wall time per launch, and the GPU's own time from the profiler); beside it the
kernel's time per call inside the recorded step (the profiler's).

    python bench/gpu_kernel_repros.py [REPORT.json ...] [--explore MODEL.py ...] [--device cuda]

Default reports: the recorded GPU fixtures. --explore runs the engine's CLI on each model first (inductor_default)
and adds its report. Prints one row per kernel: report, kernel, what the lone launch wrote, its median wall and GPU
time per launch, the step's GPU time per call (the profiler's, where the report has it) and the ratio of the two
GPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from contract.repro import kernel_repro  # noqa: E402 - after the path

GPU_FIXTURES = ("seed_gpu", "seed_large_gpu", "import_graph_break_torch2_11", "import_mlp_train_bf16_torch2_11")


def explore(model: str, device: str, out_dir: str) -> str:
    out = os.path.join(out_dir, os.path.basename(model).removesuffix(".py"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "explore",
            model,
            "--device",
            device,
            "--configs",
            "eager,inductor_default",
            "--out",
            out,
            "--quiet",
        ],
        cwd=ROOT,
        check=True,
        timeout=900,
    )
    return os.path.join(out, "report.json")


def rows(report_path: str, work: str):
    report = json.load(open(report_path))
    inductor = report.get("inductor") or {}
    profile = {r["kernel"]: r for r in (report.get("runtime") or {}).get("kernel_profile") or [] if r.get("kernel")}
    for index, kernel in enumerate(inductor.get("kernels") or []):
        script, why_not = kernel_repro(
            inductor,
            index,
            device=(report.get("request") or {}).get("device") or "?",
            torch_version=(report.get("environment") or {}).get("torch_version"),
            source=report_path,
        )
        measured = profile.get(kernel["name"])
        in_step = 1e3 * measured["total_ms"] / measured["calls"] if measured and measured.get("calls") else None
        if script is None:
            yield kernel["name"], f"refused: {why_not}", None, None, in_step
            continue
        path = os.path.join(work, f"kernel_{index}.py")
        with open(path, "w") as f:
            f.write(script)
        done = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=600)
        if done.returncode:
            yield kernel["name"], "failed: " + done.stderr.strip().splitlines()[-1][:120], None, None, in_step
            continue
        wrote = (
            "same"
            if "writes what it wrote inside the graph" in done.stdout
            else re.search(r"differ .* by up to (\S+)", done.stdout)[0]
        )
        timing = re.search(r"wall time per launch: median (\S+) us \(range (\S+)-(\S+) us", done.stdout)
        gpu = re.search(r"GPU time per launch \(profiler\): median (\S+) us \(range (\S+)-(\S+) us", done.stdout)
        yield kernel["name"], wrote, float(timing[1]), float(gpu[1]) if gpu else None, in_step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reports", nargs="*")
    parser.add_argument("--explore", nargs="*", default=[])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="kernel-repros-")
    reports = args.reports or [os.path.join(ROOT, "tests", "fixtures", "reports", f"{n}.json") for n in GPU_FIXTURES]
    reports += [explore(os.path.abspath(m), args.device, work) for m in args.explore]
    print(f"{'report':32} {'kernel':58} {'lone launch':12} {'wall us':>9} {'GPU us':>9} {'in step us':>10} GPU/step")
    for report in reports:
        for name, wrote, wall, gpu, in_step in rows(report, work):
            ratio = f"{gpu / in_step:.2f}" if gpu and in_step else "-"
            print(
                f"{os.path.basename(report)[:32]:32} {name[:58]:58} {wrote[:60]:12} {wall or '-':>9} {gpu or '-':>9} "
                f"{f'{in_step:.4g}' if in_step else '-':>10} {ratio}",
                flush=True,
            )


if __name__ == "__main__":
    main()
