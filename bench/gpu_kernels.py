"""A kernel all the way down on a GPU host (issue 24): the engine on the seed, a transformer block and a conv net,
then per generated kernel: the Triton IR stages present, the lines mapped to the source, the autotune candidates,
and its place on the roofline; per rung the step split into GPU busy and host time.

    python bench/gpu_kernels.py OUT_DIR     # prints the tables; writes OUT_DIR/<case>.json (trimmed reports)

Each job runs the engine's own child pipeline in a fresh process (isolation none: a bare GPU host has no
bubblewrap) without its warm-compile stage (two more fresh compiles that this benchmark does not read), with its
own Triton and Inductor cache folders, so the compile is cold and every IR is in the job's Triton cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine.job import JobRequest  # noqa: E402

CASES = [
    ("seed", "bench/models/seed_large.py"),
    ("conv_bn", "examples/conv_bn.py"),
    ("transformer_block", "bench/models/transformer_block.py"),
]
CONFIGS = ["eager", "inductor_default", "inductor_reduce_overhead", "inductor_max_autotune"]
# The child's stages without the warm compile (engine/child.py run(), minus WarmCompileStage).
RUNNER = """
import sys
from engine import child
job = child.Job(sys.argv[1])
job.begin("load")
with job.timeline.span("import_torch"):
    stages = [s for s in child.pipeline() if s.name != "warm_compile"]
for stage in stages:
    stage.run(job)
child.finish(job, job.report)
job.save()
"""
CASE_TIMEOUT_S = 240
KEEP_IR_KERNELS = 3  # IR texts kept per fixture report (the slowest kernels): the fixtures stay small


def run_case(name: str, path: str, out_root: str) -> tuple[dict | None, float, str]:
    job_dir = os.path.join(tempfile.gettempdir(), "gpu-kernels-jobs", name)  # caches stay out of OUT_DIR
    os.makedirs(job_dir, exist_ok=True)
    with open(os.path.join(ROOT, path)) as f:
        code = f.read()
    request = JobRequest(code=code, filename=os.path.basename(path), device="cuda", configs=CONFIGS)
    with open(os.path.join(job_dir, "request.json"), "w") as f:
        json.dump(asdict(request), f)
    with open(os.path.join(job_dir, request.filename), "w") as f:  # the child loads the user's file from its folder
        f.write(code)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
        "PT2SCOPE_ISOLATION": "none",
        "TRITON_CACHE_DIR": os.path.join(job_dir, "triton-cache"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(job_dir, "inductor-cache"),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, job_dir],
        cwd=job_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=CASE_TIMEOUT_S,
    )
    seconds = time.monotonic() - started
    report_path = os.path.join(job_dir, "report.json")
    if not os.path.exists(report_path):
        return None, seconds, proc.stderr[-1500:]
    with open(report_path) as f:
        return json.load(f), seconds, proc.stderr[-600:]


def trimmed(report: dict) -> dict:
    """The report for a fixture: IR texts of the slowest kernels only (the others keep their stages' line counts,
    texts emptied), output code and IR dumps cut."""
    slow = [p["kernel"] for p in report["runtime"]["roofline"]["points"]][:KEEP_IR_KERNELS]
    for entry in report["inductor"]["triton_ir"]:
        if entry["kernel"] not in slow:
            for stage in entry["stages"]:
                stage.update(text="", line_sources=[], truncated=True)
    for item in report["inductor"]["output_code"]:
        item["code"] = item["code"][:20000]
    for key in ("ir_pre_fusion", "ir_post_fusion"):
        for item in report["inductor"][key]:
            item["text"] = item["text"][:20000]
    return report


def kernel_rows(report: dict) -> list[tuple]:
    ind, rt = report["inductor"], report["runtime"]
    ir = {e["kernel"]: e for e in ind["triton_ir"]}
    tuned = {}
    for op in ind["autotune"]:
        tuned.setdefault(op["op"], []).append(op)
    points = {p["kernel"]: p for p in rt["roofline"]["points"]}
    rows = []
    for kernel in ind["kernels"]:
        entry = ir.get(kernel["name"], {})
        stages = " ".join(s["stage"] for s in entry.get("stages", []))
        mapped = " ".join(f"{s['stage']}:{s['mapped_lines']}" for s in entry.get("stages", []))
        meta = entry.get("metadata", {})
        point = points.get(kernel["name"])
        place = (
            f"{point['bound']} {100 * point['fraction_of_limit']:.0f}%"
            if point and point["bound"] and point["fraction_of_limit"] is not None
            else "-"
        )
        candidates = sum(len(op["candidates"]) for op in tuned.get(kernel["name"], []))
        rows.append(
            (
                kernel["name"][:44],
                stages or "-",
                mapped or "-",
                f"w{meta.get('num_warps')} s{meta.get('num_stages')} r{meta.get('registers')}",
                str(candidates or "-"),
                place,
                f"{point['time_ms']:.4f}" if point else "-",
            )
        )
    return rows


def print_case(name: str, report: dict, seconds: float) -> None:
    rt, ind = report["runtime"], report["inductor"]
    peaks = rt["roofline"]["peaks"]
    flops = ", ".join(f"{k} {v / 1e12:.1f} TFLOP/s" for k, v in (peaks.get("flops_per_s") or {}).items())
    print(
        f"\n## {name}: status {report['status']}, {seconds:.0f} s; peaks: copy "
        f"{(peaks.get('bytes_per_s') or 0) / 1e12:.2f} TB/s, {flops}"
    )
    header = ("kernel", "IR stages", "mapped lines", "meta", "autotune", "roofline", "ms/step")
    print("| " + " | ".join(header) + " |\n|" + " --- |" * len(header))
    for row in kernel_rows(report):
        print("| " + " | ".join(row) + " |")
    print(f"roofline: {rt['roofline']['text']}")
    for op in ind["autotune"]:
        best = op["candidates"][0] if op["candidates"] else {}
        print(
            f"autotune [{op['config']}] {op['source']} {op['op']} {' x '.join(op['inputs'])}: "
            f"{len(op['candidates'])} candidates, chose {op['chosen']} ({best.get('kind')}, {best.get('time_ms')} ms)"
        )
    for b in rt["benchmarks"]:
        busy = b.get("gpu_busy_ms")
        if b.get("median_ms") and busy is not None:
            print(
                f"rung {b['config']}: step {b['median_ms']:.4f} ms, GPU busy {busy:.4f} ms, host "
                f"{max(0.0, b['median_ms'] - busy):.4f} ms"
            )
    if report.get("unavailable"):
        print("unavailable:", [u["name"] for u in report["unavailable"]])


def main() -> int:
    out_root = sys.argv[1] if len(sys.argv) > 1 else "gpu-kernels"
    os.makedirs(out_root, exist_ok=True)
    failed = 0
    for name, path in CASES:
        try:
            report, seconds, err = run_case(name, path, out_root)
        except subprocess.TimeoutExpired:
            print(f"\n## {name}: did not finish within {CASE_TIMEOUT_S} s")
            failed += 1
            continue
        if report is None:
            print(f"\n## {name}: no report ({seconds:.0f} s)\n{err}")
            failed += 1
            continue
        print_case(name, report, seconds)
        with open(os.path.join(out_root, f"{name}.json"), "w") as f:
            json.dump(trimmed(report), f)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
