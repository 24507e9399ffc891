"""Profiling: the GPU's busy time per step, the per-kernel profile of the recorded rung, and the machine's copy
bandwidth (each kernel's share of the roofline)."""

from __future__ import annotations

import time

import torch

from engine.stages.runtime.rung import Rung
from engine.stages.runtime.workload import Workload

PROFILE_STEPS = 10


def memory_bandwidth(device: str) -> dict:
    """Copy bandwidth of this worker, once per job (by the prestarted child, before its job arrives): best of 6
    copies of a tensor far larger than the caches."""
    n = (1 << 30 if device == "cuda" else 128 << 20) // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(6):  # the first copy pays for page faults: the best of all of them is what the memory can do
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    nbytes = 2 * src.numel() * src.element_size()
    del src, dst
    return {
        "bytes_per_s": nbytes / best,
        "device": device,
        "method": f"copy of a {nbytes // 2 >> 20} MiB float32 tensor, best of 6, read + write bytes counted",
    }


def compute_peaks(device: str) -> dict:
    """Matrix-multiply throughput of this worker, once per job beside the memory bandwidth: the roofline's compute
    roofs. FP32 with TF32 off (on a GPU its CUDA cores), and on a GPU TF32 and BF16 (tensor cores); best of 3
    after a warm-up. The TF32 switch is put back as it was (the user's file may have set it)."""
    n = 8192 if device == "cuda" else 2048  # on 2 CPU cores 1024 gave 222-301 GFLOP/s, 2048 252-265 (0.3 s)
    kinds = [("fp32", torch.float32, False)]
    if device == "cuda":
        kinds += [("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)]
    was_tf32 = torch.backends.cuda.matmul.allow_tf32
    peaks = {}
    try:
        for name, dtype, tf32 in kinds:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            best = float("inf")
            for attempt in range(4):  # the first is the warm-up (library choice, clocks)
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                torch.mm(a, b)
                if device == "cuda":
                    torch.cuda.synchronize()
                if attempt:
                    best = min(best, time.perf_counter() - t0)
            peaks[name] = 2 * n**3 / best
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was_tf32
    return {**peaks, "device": device, "method": f"{n}x{n} matrix multiplies, best of 3 after a warm-up"}


def gpu_busy_ms(workload: Workload, rung: Rung) -> float:
    """GPU time per step (sum of device kernel time) from the profiler: compare with wall time to see host-bound."""
    from torch.profiler import ProfilerActivity, profile

    with workload.grad_mode(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        workload.run_steps(rung.fn, rung.inst, 5, cudagraph_steps=rung.cudagraph_steps)
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


def kernel_profile(
    workload: Workload, rung: Rung, kernels: list[dict], bandwidth: float | None, peaks: dict | None = None
) -> tuple:
    """Per-kernel time per step over PROFILE_STEPS steps (generated kernels by name, plus the ATen ops Inductor
    called), made to agree with the rung's measured step, each generated kernel placed on the roofline of
    ``bandwidth`` and ``peaks`` (compute_peaks): (rows, summary)."""
    by_name = {k["name"]: k for k in kernels}
    rows, profiled_step_ms = _profiled_rows(workload, rung, by_name)
    step_ms = rung.entry.get("median_ms") or profiled_step_ms
    raw_ms = sum(r["total_ms"] for r in rows)
    # The profiler slows what it watches (most on the CPU, where it wraps every op): when the kernels' sum would
    # exceed the step as measured without it, scale by the step's own dilation and say so.
    scaled_by = min(1.0, step_ms / profiled_step_ms) if raw_ms > step_ms and profiled_step_ms > 0 else 1.0
    for r in rows:
        r["total_ms"] *= scaled_by
        k = by_name.get(r["kernel"]) or {}
        r["bytes_per_call"] = k.get("bytes_accessed")
        r["bytes_source"] = k.get("bytes_source") if k.get("bytes_accessed") else None
        r["bandwidth_bytes_per_s"] = (
            r["bytes_per_call"] * max(r["calls"], 1) / (r["total_ms"] / 1e3)
            if r["bytes_per_call"] and r["total_ms"] > 0
            else None
        )
        r["roofline_share"] = (
            r["bandwidth_bytes_per_s"] / bandwidth if r["bandwidth_bytes_per_s"] and bandwidth else None
        )
        r.update(roofline_place(k, r, bandwidth, peaks))
    kernel_ms = raw_ms * scaled_by
    for r in rows:
        r["share"] = r["total_ms"] / (kernel_ms or 1.0)
    summary = _profile_summary(rows, workload.device, step_ms, profiled_step_ms, kernel_ms, scaled_by)
    return sorted(rows, key=lambda r: -r["total_ms"])[:50], summary


def roofline_place(kernel: dict, row: dict, bandwidth: float | None, peaks: dict | None) -> dict:
    """A profiled kernel's place on the roofline: its FLOP/s, FLOP per byte, the roof it sits under (the memory
    slope or the compute peak of its dtype) and the share of that roof it reaches."""
    flops, nbytes = kernel.get("flops"), row.get("bytes_per_call")
    place = {"flops_per_call": flops}
    if flops is None or not row["total_ms"]:
        return place
    place["flops_per_s"] = flops * max(row["calls"], 1) / (row["total_ms"] / 1e3)
    peak_name = "bf16" if kernel.get("compute_dtype") in ("bfloat16", "float16") else "fp32"
    peak = (peaks or {}).get(peak_name)
    if not nbytes or not bandwidth or not peak:
        return place
    intensity = flops / nbytes
    roof = min(peak, intensity * bandwidth)
    place.update(
        arithmetic_intensity=intensity,
        peak=peak_name,
        bound="memory" if intensity * bandwidth < peak else "compute",
        attainable_share=place["flops_per_s"] / roof if flops else row.get("roofline_share"),
    )
    return place


def _profiled_rows(workload: Workload, rung: Rung, by_name: dict) -> tuple[list[dict], float]:
    """PROFILE_STEPS steps under torch's profiler: a row per generated kernel (by name) and per ATen op (on the
    GPU, per device kernel), its calls and milliseconds per step; and the step's time under the profiler."""
    from torch.profiler import ProfilerActivity, profile

    device = workload.device
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with workload.grad_mode(), profile(activities=activities) as prof:
        workload.sync()
        t0 = time.perf_counter()
        workload.run_steps(rung.fn, rung.inst, PROFILE_STEPS, cudagraph_steps=rung.cudagraph_steps)
        workload.sync()
        profiled_step_ms = (time.perf_counter() - t0) * 1000 / PROFILE_STEPS
    rows = []
    for e in prof.key_averages():
        if device == "cuda" and not _on_device(e):
            continue  # on GPU the rows are the kernels themselves, timed on the device
        self_us = _device_self_us(e) if device == "cuda" else float(e.self_cpu_time_total)
        # CPU kernels are recorded as "graph_<n>_<kernel name>" (cpp.enable_kernel_profile).
        kernel = next((k for k in by_name if e.key == k or e.key.endswith("_" + k)), None)
        if self_us <= 0 or not (kernel or e.key.startswith("aten::") or device == "cuda"):
            continue
        rows.append(
            {
                "name": e.key,
                "kernel": kernel,
                "generated": kernel is not None,
                "calls": int(e.count) // PROFILE_STEPS,
                "total_ms": self_us / 1000 / PROFILE_STEPS,
            }
        )
    return rows, profiled_step_ms


def _profile_summary(
    rows: list[dict], device: str, step_ms: float, profiled_step_ms: float, kernel_ms: float, scaled_by: float
) -> dict:
    """The step split into time in kernels (generated ones apart) and host overhead, in figures and words."""
    generated_ms = sum(r["total_ms"] for r in rows if r["generated"])
    host_ms = max(0.0, step_ms - kernel_ms)
    where = "on the GPU" if device == "cuda" else "inside kernels and library calls"
    text = (
        f"Of a {step_ms:.4g} ms step, {kernel_ms:.4g} ms is spent {where} ({generated_ms:.4g} ms in generated "
        f"kernels) and {host_ms:.4g} ms ({host_ms / step_ms:.0%}) is host overhead: Python, guards, "
        f"{'kernel launches' if device == 'cuda' else 'calls into kernels'} and allocations."
    )
    if scaled_by < 1:
        text += (
            f" Under the profiler a step took {profiled_step_ms:.4g} ms; kernel times are scaled by "
            f"{scaled_by:.2f} to remove that overhead."
        )
    return {
        "profiled_steps": PROFILE_STEPS,
        "step_ms": round(step_ms, 4),
        "profiled_step_ms": round(profiled_step_ms, 4),
        "kernel_ms": round(kernel_ms, 4),
        "generated_ms": round(generated_ms, 4),
        "host_overhead_ms": round(host_ms, 4),
        "host_overhead_share": round(host_ms / step_ms, 4) if step_ms else None,
        "scaled_by": round(scaled_by, 4),
        "text": text,
    }
