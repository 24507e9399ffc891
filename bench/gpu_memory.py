"""Memory per rung on a GPU (issue 23 item 3): the engine's debug.memory against a plain script's own
`torch.cuda.max_memory_allocated` around one step, each config in a fresh process of its own.

    python bench/gpu_memory.py [FILE] [--configs ...]     # default: the activation chain, four configs

Prints one row per config: the engine's peak and bytes saved for backward, the plain script's peak (what a user
measuring their own loop sees: a fresh process, the model compiled and stepped three times, then one measured
step), and their ratio. Both count from what was allocated before the step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILE = os.path.join(ROOT, "tests", "fixtures", "models", "activation_chain.py")
DEFAULT_CONFIGS = "eager,aot_eager,inductor_default,inductor_reduce_overhead"

# One step of the user's file in a fresh process, as a user would measure it. The configs' (backend, mode) come
# from contract/vocab.py through the engine's own loader, so the script compiles what the rung compiled.
PLAIN_STEP = r"""
import json, sys, torch
sys.path.insert(0, {root!r})
from contract.vocab import CONFIGS
namespace = {{"__name__": "__main__"}}
exec(compile(open({path!r}).read(), {path!r}, "exec"), namespace)
model, inputs, train = namespace["model"], namespace["example_inputs"], namespace.get("train", False)
model = model.cuda() if isinstance(model, torch.nn.Module) else model
inputs = tuple(t.cuda() if isinstance(t, torch.Tensor) else t for t in inputs)
config = CONFIGS[{config!r}]
fn = model if config.backend is None else torch.compile(model, backend=config.backend, mode=config.mode)
cudagraphs = config.mode == "reduce-overhead"
def step():
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            p.grad = None
    if cudagraphs:
        torch.compiler.cudagraph_mark_step_begin()
    with torch.enable_grad() if train else torch.no_grad():
        out = fn(*inputs)
        if train:
            out.float().sum().backward()
for _ in range(3):
    step()
torch.cuda.synchronize()
if isinstance(model, torch.nn.Module):
    for p in model.parameters():
        p.grad = None
torch.cuda.reset_peak_memory_stats()
before = torch.cuda.memory_allocated()
step()
torch.cuda.synchronize()
print(json.dumps({{"peak_bytes": torch.cuda.max_memory_allocated() - before}}))
"""


def mb(value) -> str:
    return f"{value / 1e6:.2f}" if isinstance(value, (int, float)) else "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--configs", default=DEFAULT_CONFIGS)
    args = parser.parse_args()
    env = {**os.environ, "PT2SCOPE_ISOLATION": "none", "PYTHONPATH": ROOT}
    with tempfile.TemporaryDirectory(prefix="gpu-memory-") as out:
        started = time.monotonic()
        command = [sys.executable, "-m", "engine", "explore", args.file, "--device", "cuda", "--configs", args.configs]
        done = subprocess.run(
            command + ["--no-warm-compile", "--quiet", "--out", out], cwd=ROOT, env=env, text=True, capture_output=True
        )
        engine_s = time.monotonic() - started
        try:
            with open(os.path.join(out, "report.json")) as f:
                report = json.load(f)
        except OSError:
            print(f"no report ({engine_s:.1f} s): {done.stderr[-2000:]}")
            sys.exit(1)
    print(
        f"{os.path.basename(args.file)}: engine job {report['status']} in {engine_s:.1f} s; "
        f"torch {report['environment'].get('torch_version')}; {report['runtime']['mode']['kind']}"
    )
    print(
        "| config | engine peak MB | plain script peak MB | engine / plain | engine saved MB (tensors) | "
        "compression | method or error |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in report["debug"]["memory"]:
        plain = subprocess.run(
            [sys.executable, "-c", PLAIN_STEP.format(root=ROOT, path=args.file, config=m["config"])],
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
        )
        try:
            plain_peak = json.loads(plain.stdout.strip().splitlines()[-1])["peak_bytes"]
        except (IndexError, ValueError, KeyError):
            plain_peak = None
            print(f"  plain script failed for {m['config']}: {plain.stderr[-600:]}")
        saved = m["saved_for_backward"]
        ratio = f"{m['peak_bytes'] / plain_peak:.3f}" if m["peak_bytes"] and plain_peak else "-"
        print(
            f"| {m['config']} | {mb(m['peak_bytes'])} | {mb(plain_peak)} | {ratio} | "
            f"{mb(saved['bytes']) + ' (' + str(saved['tensors']) + ')' if saved else '-'} | "
            f"{m['compression_ratio'] or '-'} | {m['error'] or m['method']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
