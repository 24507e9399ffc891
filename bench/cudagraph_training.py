"""Reduce-overhead (CUDA graph trees) in training, through the engine's ladder, on a GPU host (issue 18 item 4).

    python bench/cudagraph_training.py OUT_DIR     # prints one table; exit 0 when every rung is ok

Five training cases a user brings (an MLP, a custom torch.autograd.Function, dropout, a graph break, a list of
example inputs), each run as `python -m engine explore CASE --device cuda --train --configs
eager,inductor_default,inductor_reduce_overhead` (isolation none: a bare GPU host has no bubblewrap). Each step of
the ladder calls torch.compiler.cudagraph_mark_step_begin() per input set and keeps nothing across replays, as a
user's loop does; before that, 3 of 5 such models failed with "accessing tensor output of CUDAGraphs that has been
overwritten by a subsequent run". The table: case, rung, status, CUDA-graph status (used / skipped and why /
re-recorded and how often), correctness verdict (with how random numbers were compared).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {
    **os.environ,
    "PT2SCOPE_ISOLATION": "none",
    "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
}
CONFIGS = "eager,inductor_default,inductor_reduce_overhead"

CASES = {
    "mlp": """
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256), nn.LayerNorm(256)).cuda()
        example_inputs = (torch.randn(64, 256, device="cuda"),)
        train = True
    """,
    "autograd_function": """
        import torch

        class ScaledTanh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = torch.tanh(x) * 1.5
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * (1.5 - y * y / 1.5)

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(128, 128)

            def forward(self, x):
                return ScaledTanh.apply(self.fc(x))

        model = Model().cuda()
        example_inputs = (torch.randn(32, 128, device="cuda", requires_grad=True),)
        train = True
    """,
    "dropout": """
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Dropout(0.3), nn.Linear(512, 64)).cuda()
        example_inputs = (torch.randn(32, 128, device="cuda"),)
        train = True
    """,
    "graph_break": """
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(128, 128), nn.Linear(128, 64)

            def forward(self, x):
                h = torch.relu(self.a(x))
                torch._dynamo.graph_break()
                return self.b(h).sin()

        model = Model().cuda()
        example_inputs = (torch.randn(32, 128, device="cuda"),)
        train = True
    """,
    "input_list": """
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(64, 256), nn.SiLU(), nn.Linear(256, 64)).cuda()
        example_inputs = [(torch.randn(16, 64, device="cuda"),), (torch.randn(32, 64, device="cuda"),)]
        train = True
    """,
}


def cudagraph_cell(cg: dict) -> str:
    status = cg.get("status") or "?"
    if status == "used":
        return f"used ({cg.get('recordings', 0)} recorded, {cg.get('rerecords', 0)} re-recorded)" + (
            ": " + "; ".join(cg.get("rerecord_reasons") or [])[:120] if cg.get("rerecords") else ""
        )
    if status == "skipped":
        return f"skipped: {(cg.get('reason') or '')[:120]}"
    return status


def verdict_cell(b: dict) -> str:
    c = b.get("correctness") or {}
    text = str(c.get("verdict"))
    if c.get("max_abs_error") is not None:
        text += f" (out {c['max_abs_error']:.2g}"
        g = c.get("gradients") or {}
        text += f", grad {g['max_abs_error']:.2g})" if g.get("max_abs_error") is not None else ")"
    if c.get("random_stream"):
        text += " [same RNG stream: fallback_random]" if "fallback_random" in c["random_stream"] else " [seeded]"
    if c.get("verdict") not in ("match", None) and c.get("reason"):
        text += f": {c['reason'][:160]}"
    return text


def main(out: str) -> int:
    import torch

    os.makedirs(out, exist_ok=True)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, configs {CONFIGS}, --train")
    rows, ok, jobs = [], True, {}
    # The five jobs at once (16 cores, one GPU): this table is about status, CUDA graphs and verdicts, not timing.
    for name, code in CASES.items():
        path = os.path.join(out, f"{name}.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        cmd = [sys.executable, "-m", "engine", "explore", path, "--device", "cuda", "--train", "--configs", CONFIGS]
        cmd += ["--out", os.path.join(out, name), "--quiet"]
        log = open(os.path.join(out, f"{name}.log"), "w")
        jobs[name] = (subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT), time.monotonic())
    for name, (proc, started) in jobs.items():
        proc.wait()
        seconds = time.monotonic() - started
        report_path = os.path.join(out, name, "report.json")
        report = json.load(open(report_path)) if os.path.exists(report_path) else None
        if not report or report.get("status") != "ok":
            why = (report or {}).get("failure") or open(os.path.join(out, f"{name}.log")).read()[-400:]
            rows.append((name, "(job)", "failed", "", str(why)[:300], seconds))
            ok = False
            continue
        for b in report["runtime"]["benchmarks"]:
            status = b["status"] + (f": {b['error'][:160]}" if b.get("error") else "")
            ok &= b["status"] == "ok"
            rows.append(
                (name, b["config"], status, cudagraph_cell(b.get("cudagraphs") or {}), verdict_cell(b), seconds)
            )
    print("| case | rung | status | CUDA graphs | verdict (max abs error) | job s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(str(x) if not isinstance(x, float) else f"{x:.0f}" for x in row) + " |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cudagraph_training"))
