"""The whole engine on a GPU host, live: what the CPU suite can only check on recorded torch 2.11 traces.

    python bench/gpu_engine_check.py OUT_DIR      # prints one table; exit 0 when every check passes

For each case it runs `python -m engine explore ... --device cuda` (isolation none: a bare GPU host has no
bubblewrap; bench/gpu_sandbox_check.py covers the sandbox) and checks, in the report: recompiles with clean failed
guards, the call that triggered them and the dimension that became dynamic; kernels joined to their post-grad
graph across a graph break; CUDA graphs per rung with a list of inputs and with training; cold vs warm compile with
kernel-cache hits; and that a TORCH_TRACE log written by this torch imports into a report with the same counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PT2SCOPE_ISOLATION": "none", "PYTHONPATH": ROOT}


def explore(path: str, out: str, configs: str, *extra: str) -> tuple[dict | None, float, str]:
    started = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "explore",
        os.path.join(ROOT, path),
        "--device",
        "cuda",
        "--configs",
        configs,
        "--out",
        out,
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True)
    path = os.path.join(out, "report.json")
    report = json.load(open(path)) if os.path.exists(path) else None
    return report, time.monotonic() - started, proc.stderr[-600:]


def traced_import(path: str, out: str) -> tuple[dict | None, dict | None]:
    """A plain user script under TORCH_TRACE (no pt2scope in it), then `python -m engine import` of its log."""
    trace_dir = os.path.join(out, "trace")
    os.makedirs(out, exist_ok=True)
    script = (
        f"import runpy, torch; ns = runpy.run_path({os.path.join(ROOT, path)!r}); "
        "f = torch.compile(ns['model']); inputs = ns['example_inputs']; "
        "calls = inputs if isinstance(inputs, list) else [inputs]; "
        "[f(*(c if isinstance(c, tuple) else (c,))) for c in calls]; torch.cuda.synchronize()"
    )
    subprocess.run(
        [sys.executable, "-c", script], cwd=out, env={**ENV, "TORCH_TRACE": trace_dir}, check=False, capture_output=True
    )
    logs = sorted(os.listdir(trace_dir)) if os.path.isdir(trace_dir) else []
    if not logs:
        return None, None
    imported = os.path.join(out, "imported")
    subprocess.run(
        [sys.executable, "-m", "engine", "import", os.path.join(trace_dir, logs[0]), "--out", imported],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
    )
    reports = sorted(f for f in os.listdir(imported) if f.endswith(".json")) if os.path.isdir(imported) else []
    return (json.load(open(os.path.join(imported, reports[0]))) if reports else None), None


def rung_facts(report: dict) -> str:
    out = []
    for b in report["runtime"]["benchmarks"]:
        verdict = (b.get("correctness") or {}).get("verdict")
        cg = (b.get("cudagraphs") or {}).get("status")
        out.append(f"{b['config']}:{b['status']}/{verdict}" + (f"/cg={cg}" if cg and cg != "not_applicable" else ""))
    return " ".join(out)


def main() -> int:
    out_root = sys.argv[1] if len(sys.argv) > 1 else "gpu-engine-check"
    os.makedirs(out_root, exist_ok=True)
    rows, failed = [], []

    def check(case: str, ok: bool, facts: str, seconds: float | None = None) -> None:
        rows.append((case, "PASS" if ok else "FAIL", f"{seconds:.1f}" if seconds else "", facts))
        if not ok:
            failed.append(case)

    # Recompiles on live torch (a list of inputs: two shapes, then a dtype), and reduce-overhead over that list.
    rep, secs, err = explore(
        "examples/recompile.py",
        os.path.join(out_root, "recompile"),
        "eager,backend_eager,inductor_default,inductor_reduce_overhead",
    )
    if rep is None:
        check("recompile", False, err, secs)
    else:
        recs = rep["dynamo"]["recompiles"]
        clean = all(
            g["guard"] and not g["guard"].lstrip().startswith(("[", '"')) for r in recs for g in r["failed_guards"]
        )
        called = [r["call_index"] for r in recs]
        dynamic = [d["text"] for r in recs for d in r["dynamic_dims"]]
        ro = next(b for b in rep["runtime"]["benchmarks"] if b["config"] == "inductor_reduce_overhead")
        check(
            "recompile: guards clean, call named, dynamic dim",
            rep["status"] == "ok" and bool(recs) and clean and all(i is not None for i in called) and bool(dynamic),
            f"{len(recs)} recompiles at calls {called}; {dynamic[:1]}",
            secs,
        )
        check(
            "recompile: reduce-overhead over a list of inputs",
            ro["status"] == "ok" and (ro.get("cudagraphs") or {}).get("status") == "used",
            rung_facts(rep),
        )

    # A graph break under Inductor: every kernel meets its post-grad graph (one compile-id type).
    rep, secs, err = explore("examples/graph_break.py", os.path.join(out_root, "graph_break"), "eager,inductor_default")
    if rep is None:
        check("graph_break", False, err, secs)
    else:
        ind = rep["inductor"]
        marked = {
            n["marks"]["kernel"]
            for g in ind["post_grad_graphs"]
            for n in g["nodes"]
            if (n.get("marks") or {}).get("kernel")
        }
        kernels = {k["name"] for k in ind["kernels"]}
        counts = rep["summary"]["counts"]
        check(
            "graph_break: kernels joined to post-grad nodes",
            rep["status"] == "ok" and bool(kernels) and kernels <= marked,
            f"{len(kernels)} kernels, all marked on nodes: {kernels <= marked}; counts {counts}",
            secs,
        )

    # Training with CUDA graphs, and cold vs warm compile (kernel binaries found in the warm process's cache).
    rep, secs, err = explore(
        "examples/mlp_train.py",
        os.path.join(out_root, "mlp_train"),
        "eager,inductor_default,inductor_reduce_overhead",
        "--train",
    )
    if rep is None:
        check("mlp_train", False, err, secs)
    else:
        ro = next(b for b in rep["runtime"]["benchmarks"] if b["config"] == "inductor_reduce_overhead")
        cache = rep["runtime"]["compile_cache"]
        warm = cache.get("warm") or {}
        check(
            "mlp_train: reduce-overhead in training",
            ro["status"] == "ok" and (ro.get("cudagraphs") or {}).get("status") == "used",
            rung_facts(rep),
            secs,
        )
        cs = rep["runtime"]["compile_seconds"]
        parts = sum(v for k, v in cs.items() if k != "total" and isinstance(v, (int, float)))
        check(
            "mlp_train: exclusive compile stages add up; warm compile",
            abs(parts - cs["total"]) < 0.01 and warm.get("status") == "ok",
            f"cold {cs['total']:.2f}s (stages sum {parts:.2f}s), warm {json.dumps(warm.get('seconds'))[:80]}, "
            f"caches {json.dumps(warm.get('caches'))[:160]}",
        )

    # A TORCH_TRACE log of this torch, imported: the same counts as the live capture of the same program.
    imported, _ = traced_import("examples/graph_break.py", os.path.join(out_root, "trace_graph_break"))
    live = (
        json.load(open(os.path.join(out_root, "graph_break", "report.json")))
        if os.path.exists(os.path.join(out_root, "graph_break", "report.json"))
        else None
    )
    if imported is None or live is None:
        check("import of a live TORCH_TRACE", False, "no log or no report")
    else:
        a, b = imported["summary"]["counts"], live["summary"]["counts"]
        same = {k: (a[k], b[k]) for k in ("dynamo_graphs", "graph_breaks", "generated_kernels")}
        check(
            "import of a live TORCH_TRACE: counts match the live capture",
            all(x == y for x, y in same.values()),
            f"(imported, live): {same}",
        )

    import torch

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    width = max(len(r[0]) for r in rows)
    print(f"{'check':<{width}}  result  seconds  facts")
    for case, result, seconds, facts in rows:
        print(f"{case:<{width}}  {result:<6}  {seconds:>7}  {facts}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
