"""Runtime: compile time per stage, the compile timeline, the benchmark ladder, per-kernel times, CUDA graphs.

Timing rules (issue 2): warm up first; time nothing but the call (grads are cleared and outputs compared outside
the timed region); on GPU time each repetition with CUDA events and synchronize once at the end; under
reduce-overhead call cudagraph_mark_step_begin() before each step; report median, p10-p90 and the repetitions.
"""
from __future__ import annotations

import json
import os
import statistics
import time

import torch
import torch.utils._pytree as pytree

from contract.compile_id import canonical
from engine import logtap
from engine.report import CONFIGS
from engine.stages.base import Collector
from engine.stages.inductor import kernel_count

CPU_TARGET_SECONDS = 1.0  # time spent in timed repetitions per config on CPU
GPU_TARGET_SECONDS = 0.5
MIN_REPS, MAX_REPS = 10, 2000
PROFILE_STEPS = 10
_CUDAGRAPH_LOGS = ("cudagraphs", "perf_hints")  # the artifacts where Inductor says why it skipped CUDA graphs


class RuntimeCollector(Collector):
    section = "runtime"

    def collect(self, report: dict) -> None:
        tap = self.ctx.tap
        section = report[self.section]
        metrics = logtap.read(tap, "runtime.compile_metrics")
        section["compile_seconds"] = compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"])
        section["compile_metrics"] = [_metrics_summary(m) for m in metrics["forward"]]
        section["compile_timeline"] = logtap.read(tap, "runtime.timeline")
        outputs = logtap.read(tap, "inductor.output_code")
        if outputs:  # Inductor compiled: its caches (graph, AOTAutograd, kernels) are what a warm compile reuses
            with self.ctx.guard("runtime.compile_cache"):
                kernels = sum(kernel_count(o["code"]) for o in outputs)
                section["compile_cache"] = {"cold": {"seconds": section["compile_seconds"],
                                                     "caches": cold_caches(kernels)}}
        if not metrics["forward"]:
            self.ctx.mark_unavailable("runtime.compilation_metrics", "no compilation_metrics event in the trace")


def compile_seconds(forward: list[dict], backward: list[dict], runtime: list[dict] = ()) -> dict:
    """Exclusive seconds per stage, summed over compile ids: the stages add up to ``total``.

    torch's metrics nest (entire frame > backend > inductor > code generation; docs/report-schema.md), so each stage
    is its own time minus the next one's. The backward compiles lazily at the first .backward(), under its own
    metrics entry (backward > inductor > codegen): one stage. ``other`` is compile work outside both: Triton
    autotuning at the first run (compilation_metrics_runtime)."""
    def total(entries, key):
        return sum(float(m.get(key) or 0.0) for m in entries)

    frame, backend = total(forward, "entire_frame_compile_time_s"), total(forward, "backend_compile_time_s")
    inductor, codegen = total(forward, "inductor_compile_time_s"), total(forward, "code_gen_time_s")
    backward_s = sum(float(m.get("backward_cumulative_compile_time_us") or 0) / 1e6 or
                     float(m.get("inductor_compile_time_s") or 0.0) for m in backward)
    other = total(runtime, "runtime_triton_autotune_time_us") / 1e6
    # Each stage's own time; a stage torch timed longer than the one containing it (clock or nesting drift) is
    # clamped at 0 and the overlap counted once, so the stages still add up.
    stages = {"codegen": codegen, "inductor": max(0.0, inductor - codegen),
              "aot_autograd": max(0.0, backend - max(inductor, codegen)),
              "dynamo": max(0.0, frame - max(backend, inductor, codegen)), "backward": backward_s, "other": other}
    rounded = {key: round(float(value), 4) for key, value in stages.items()}
    ordered = {key: rounded[key] for key in ("dynamo", "aot_autograd", "inductor", "codegen", "backward", "other")}
    ordered["total"] = round(sum(ordered.values()), 4)
    return ordered


def _metrics_summary(m: dict) -> dict:
    keep = ("compile_id", "frame_key", "co_name", "co_filename", "co_firstlineno", "cache_size", "graph_op_count",
            "graph_node_count", "entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s",
            "code_gen_time_s", "fail_type", "fail_reason", "cudagraph_skip_reason", "guard_count",
            "restart_reasons", "dynamo_time_before_restart_s", "has_guarded_code")
    return {k: m.get(k) for k in keep if k in m}


def timeline(events: list[dict], log=None) -> list[dict]:
    """Chromium B/E events -> spans [{name, compile_id, start_ms, dur_ms, depth}], start relative to the first. An
    event whose payload is not JSON is counted as malformed in ``log`` (the tap already did, for its own)."""
    spans, open_spans = [], {}
    parsed = []
    for e in events:
        data = e.get("data")
        if data is None and e.get("payload"):
            try:
                data = json.loads(e["payload"])
            except ValueError as exc:
                if log is not None:
                    log.malformed("chromium_event", f"payload is not JSON: {exc}", e["payload"])
                continue
        if isinstance(data, dict):
            parsed.append(data)
    if not parsed:
        return []
    origin = min(p.get("ts", 0) for p in parsed)
    depth: dict[int, int] = {}
    for p in sorted(parsed, key=lambda p: p.get("ts", 0)):
        tid = p.get("tid", 0)
        key = (tid, p.get("name"))
        if p.get("ph") == "B":
            open_spans.setdefault(key, []).append((p, depth.get(tid, 0)))
            depth[tid] = depth.get(tid, 0) + 1
        elif p.get("ph") == "E" and open_spans.get(key):
            begin, level = open_spans[key].pop()
            depth[tid] = max(0, depth.get(tid, 1) - 1)
            spans.append({"name": p["name"], "compile_id": canonical((begin.get("args") or {}).get("compile_id")),
                          "start_ms": round((begin["ts"] - origin) / 1000, 3),
                          "dur_ms": round((p["ts"] - begin["ts"]) / 1000, 3), "depth": level})
        elif p.get("ph") == "X":
            spans.append({"name": p.get("name"), "compile_id": canonical((p.get("args") or {}).get("compile_id")),
                          "start_ms": round((p["ts"] - origin) / 1000, 3),
                          "dur_ms": round(p.get("dur", 0) / 1000, 3), "depth": depth.get(tid, 0)})
    return sorted(spans, key=lambda s: (s["start_ms"], s["depth"]))


logtap.declare("runtime.compile_metrics",
               trace=("compilation_metrics", "bwd_compilation_metrics", "compilation_metrics_runtime"),
               read=lambda log: {kind: [e["metadata"] for e in log.events(event) if e["metadata"]]
                                 for kind, event in (("forward", "compilation_metrics"),
                                                     ("backward", "bwd_compilation_metrics"),
                                                     ("runtime", "compilation_metrics_runtime"))})
logtap.declare("runtime.timeline", trace=("chromium_event",),
               read=lambda log: timeline([e for e in log.events("chromium_event") if e["payload"]], log))
# The benchmark ladder reads these after the recorded compile (benchmark_config): they stay on for its compiles.
logtap.declare("runtime.cudagraphs", logs=_CUDAGRAPH_LOGS, after_capture=True,
               read=lambda log: {name: log.artifact_texts(name) for name in _CUDAGRAPH_LOGS})


# --- the benchmark ladder -------------------------------------------------------------------------------------

class Workload:
    """The user's model as one step: call it on each input set in turn (and backward when training)."""

    def __init__(self, model, inputs_list, train: bool, loss_fn, device: str):
        self.model, self.inputs_list, self.train, self.loss_fn, self.device = model, inputs_list, train, loss_fn, device
        self.params = [p for p in model.parameters() if p.requires_grad] if isinstance(model, torch.nn.Module) else []

    def step(self, fn):
        outs = []
        for args in self.inputs_list:
            out = fn(*args)
            if self.train:
                loss = self.loss_fn(out) if self.loss_fn else _default_loss(out)
                loss.backward()
            outs.append(out)
        return outs

    def clear_grads(self):
        for p in self.params:
            p.grad = None

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def result(self, fn):
        """One step: its time in ms (the step and a sync only), and detached copies of its outputs and gradients
        (for comparing against eager)."""
        self.clear_grads()
        t0 = time.perf_counter()
        outs = self.step(fn)
        self.sync()
        ms = (time.perf_counter() - t0) * 1000
        leaves = [t.detach().clone() for t in pytree.tree_leaves(outs) if isinstance(t, torch.Tensor)]
        grads = [p.grad.detach().clone() for p in self.params if p.grad is not None]
        self.clear_grads()
        return ms, leaves, grads


def _default_loss(out):
    tensors = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.float().sum() for t in tensors)


def max_errors(actual: list, expected: list) -> tuple[float | None, float | None]:
    """Max absolute error, and relative error as max|a-e| / max|e| (norm-wise: no blow-up near zero)."""
    if len(actual) != len(expected):
        return None, None
    abs_err, ref_max = 0.0, 0.0
    for a, e in zip(actual, expected):
        if a.shape != e.shape:
            return None, None
        a, e = _widened(a), _widened(e)
        diff = (a - e).abs()
        abs_err = max(abs_err, float(diff.max()) if diff.numel() else 0.0)
        ref_max = max(ref_max, float(e.abs().max()) if e.numel() else 0.0)
    return abs_err, (abs_err / ref_max if ref_max else abs_err)


def _widened(t: torch.Tensor) -> torch.Tensor:
    """float64 (complex128 for complex): errors are computed above the precision of what is compared."""
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def time_steps(workload: Workload, fn, *, cudagraph_steps: bool) -> dict:
    """Warm up, then time repetitions of one step; returns median/p10/p90 in ms and the repetitions."""
    mark_step = torch.compiler.cudagraph_mark_step_begin if cudagraph_steps else None

    def one():
        if mark_step:
            mark_step()
        workload.step(fn)

    # Warm-up: at least 3 calls and 0.2 s, so lazy initialisation and autotuning stay out of the numbers.
    start = time.perf_counter()
    warm = 0
    while warm < 3 or (time.perf_counter() - start < 0.2 and warm < 50):
        workload.clear_grads()
        one()
        warm += 1
    workload.sync()
    estimate = (time.perf_counter() - start) / warm
    target = GPU_TARGET_SECONDS if workload.device == "cuda" else CPU_TARGET_SECONDS
    reps = int(min(MAX_REPS, max(MIN_REPS, target / max(estimate, 1e-6))))
    times = []
    if workload.device == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for begin, end in events:
            workload.clear_grads()
            if mark_step:
                mark_step()
            begin.record()
            workload.step(fn)
            end.record()
        torch.cuda.synchronize()
        times = [b.elapsed_time(e) for b, e in events]
        method = "cuda_events"
    else:
        for _ in range(reps):
            workload.clear_grads()
            if mark_step:
                mark_step()
            t0 = time.perf_counter()
            workload.step(fn)
            times.append((time.perf_counter() - t0) * 1000)
        method = "perf_counter"
    return {"median_ms": statistics.median(times), "p10_ms": _quantile(times, 0.1),
            "p90_ms": _quantile(times, 0.9), "min_ms": min(times), "reps": reps, "warmup_reps": warm,
            "method": method}


def _quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]



def gpu_busy_ms(workload: Workload, fn, cudagraph_steps: bool) -> float | None:
    """GPU time per step (sum of device kernel time) from the profiler: compare with wall time to see host-bound."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            workload.clear_grads()
            if cudagraph_steps:
                torch.compiler.cudagraph_mark_step_begin()
            workload.step(fn)
        torch.cuda.synchronize()
    # Only device-side events (the kernels themselves): CPU ops also carry the device time of what they launched.
    total_us = sum(_device_self_us(e) for e in prof.key_averages() if _on_device(e))
    return total_us / 1000 / 5


def _on_device(event) -> bool:
    return str(getattr(event, "device_type", "")).endswith(("CUDA", "PrivateUse1"))


def _device_self_us(event) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, attr, None)
        if value is not None:
            return float(value)
    return 0.0


def kernel_profile(workload: Workload, fn, kernel_names: set[str], device: str) -> list[dict]:
    """Per-kernel time over PROFILE_STEPS steps: generated kernels by name, plus ATen ops Inductor called."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(PROFILE_STEPS):
            workload.clear_grads()
            workload.step(fn)
        workload.sync()
    rows = []
    for e in prof.key_averages():
        if device == "cuda" and not _on_device(e):
            continue  # on GPU the rows are the kernels themselves, timed on the device
        self_us = _device_self_us(e) if device == "cuda" else float(e.self_cpu_time_total)
        # CPU kernels are recorded as "graph_<n>_<kernel name>" (cpp.enable_kernel_profile).
        kernel = next((k for k in kernel_names if e.key == k or e.key.endswith("_" + k)), None)
        if self_us <= 0 or not (kernel or e.key.startswith("aten::") or device == "cuda"):
            continue
        rows.append({"name": e.key, "kernel": kernel, "generated": kernel is not None,
                     "calls": int(e.count) // PROFILE_STEPS, "total_ms": self_us / 1000 / PROFILE_STEPS})
    total = sum(r["total_ms"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["total_ms"] / total
    return sorted(rows, key=lambda r: -r["total_ms"])[:50]


def cudagraph_status(device: str, config_name: str, texts: list[str], skips: int) -> dict:
    config = CONFIGS[config_name]
    if config.mode != "reduce-overhead":
        return {"status": "not_requested"}
    if device != "cuda":
        return {"status": "not_applicable",
                "reason": "CUDA graphs exist only on CUDA devices: on the CPU mode=\"reduce-overhead\" runs the same "
                          "code as mode=\"default\"."}
    reasons = [t.strip()[:1000] for t in texts if "skipping cudagraphs" in t.lower()]
    if reasons or skips:
        return {"status": "skipped", "reason": "; ".join(dict.fromkeys(reasons)) or f"{skips} cudagraph skip(s)"}
    return {"status": "used", "reason": "the compiled graphs were recorded and replayed as CUDA graphs"}


def benchmark_config(name: str, workload: Workload, recorded: tuple, reference: tuple, ctx) -> dict:
    """Compile (unless ``recorded`` holds the recorded compile with its first call's time, outputs and gradients)
    and time one config."""
    config = CONFIGS[name]
    entry = {"config": name, "label": config.label, "backend": config.backend, "mode": config.mode,
             "status": "ok", "error": None}
    ref_out, ref_grads, eager_first_ms = reference
    skips_before = _cudagraph_skips()
    logs_before = {name: len(ctx.tap.artifact_texts(name)) for name in _CUDAGRAPH_LOGS}
    try:
        fn, first_ms, out, grads = recorded
        if config.backend is None:
            fn, first_ms, out, grads = workload.model, eager_first_ms, ref_out, ref_grads
        elif fn is None:
            torch._dynamo.reset()
            fn = torch.compile(workload.model, backend=config.backend, mode=config.mode)
            first_ms, out, grads = workload.result(fn)
        cudagraph_steps = config.mode == "reduce-overhead" and ctx.device == "cuda"
        entry["first_call_ms"] = round(first_ms, 3)
        entry.update({k: round(v, 4) if isinstance(v, float) else v
                      for k, v in time_steps(workload, fn, cudagraph_steps=cudagraph_steps).items()})
        entry["max_abs_error"], entry["max_rel_error"] = max_errors(out, ref_out)
        if workload.train:
            entry["grad_max_abs_error"], entry["grad_max_rel_error"] = max_errors(grads, ref_grads)
        if ctx.device == "cuda":
            entry["gpu_busy_ms"] = round(gpu_busy_ms(workload, fn, cudagraph_steps), 4)
    except Exception as exc:  # one failing config must not lose the others
        entry.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        ctx.error(f"benchmark:{name}", exc)
    new_logs = [a["text"] for log in _CUDAGRAPH_LOGS for a in ctx.tap.artifact_texts(log)[logs_before[log]:]]
    entry["cudagraphs"] = cudagraph_status(ctx.device, name, new_logs, _cudagraph_skips() - skips_before)
    return entry


def _cudagraph_skips() -> int:
    try:
        return int(torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])
    except Exception:
        return 0


# --- cold vs warm compile ----------------------------------------------------------------------------------

WARM_COMPILE_MIN_SECONDS = 30  # the job time a warm compile needs left (two fresh processes) before it is tried


def cold_caches(kernels: int) -> dict:
    """What the recorded compile found in the caches (runtime.compile_cache.cold): its graph caches were off and the
    job's cache folders new, so every kernel binary it left was a miss. Called right after the recorded compile."""
    from engine.warm import cache_counts, kernel_binaries

    written = len(kernel_binaries())
    caches = cache_counts(torch._dynamo.utils.counters, kernels, written)
    for name in ("fx_graph", "aot_autograd"):
        caches[name]["state"] = "off during the recorded compile (to see IR and fusion)"
    caches["kernels"]["state"] = "the job's new, empty cache folders"
    return caches


def warm_compiles(job_dir: str, config_name: str, time_left_s: float) -> dict:
    """Cold vs warm (runtime.compile_cache): the same model and config compiled again in fresh processes
    (engine/warm.py) in the job's folder and sandbox. The first ("warmup") fills the graph caches the recorded
    compile kept off; the second ("warm") is what a user's next run of the script costs."""
    import subprocess
    import sys

    out = {}
    for label in ("warmup", "warm"):
        budget = time_left_s / (2 if label == "warmup" else 1)
        if budget < WARM_COMPILE_MIN_SECONDS / 2:
            out[label] = {"status": "skipped", "reason": f"only {time_left_s:.0f} s of the job's time left"}
            break
        path = os.path.join(job_dir, f"compile-{label}.json")
        started = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-m", "engine.warm", job_dir, config_name, path], cwd=job_dir,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, timeout=budget)
        except subprocess.TimeoutExpired:
            out[label] = {"status": "failed", "reason": f"did not finish within {budget:.0f} s"}
            break
        time_left_s -= time.monotonic() - started
        if proc.returncode != 0 or not os.path.exists(path):
            out[label] = {"status": "failed", "reason": (proc.stderr or f"exit status {proc.returncode}")[-2000:]}
            break
        with open(path) as f:
            out[label] = json.load(f)
    return out
