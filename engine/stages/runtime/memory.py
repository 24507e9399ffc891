"""Memory per rung (debug.memory): one step of each rung with its peak allocation and, when training, the tensors
autograd saved for backward; then each rung against eager, as PyTorch's benchmark suite puts a memory compression
ratio beside every speedup.

The peak is the allocator's own figure: on CUDA `torch.cuda.max_memory_allocated` (reset before the step); on the
CPU, which keeps no such counter, the profiler's record of every allocation and free (profile_memory) summed in
order. Both count from what was allocated before the step, so the model's parameters are not in it."""

from __future__ import annotations

import torch

from engine.stages.runtime.rung import Rung
from engine.stages.runtime.workload import Workload

CUDA_METHOD = "torch.cuda.max_memory_allocated"
CPU_METHOD = "profiler: peak of CPU allocations"
# A CUDA-graph replay allocates nothing: its memory pool was taken when the graph was recorded.
CUDAGRAPH_PEAK = (
    "not measured per step: a CUDA-graph replay runs in the memory pool taken when the graph was recorded, so a "
    "step allocates nothing"
)


class SavedTensors:
    """A saved_tensors_hooks pack hook that notes each saved tensor's storage once (views of one storage, or one
    tensor saved by several ops, are one allocation)."""

    def __init__(self):
        self.tensors = 0
        self.storages: dict[tuple, int] = {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.tensors += 1
        storage = tensor.untyped_storage()
        self.storages[(tensor.device, storage.data_ptr())] = storage.nbytes()
        return tensor

    def figure(self) -> dict:
        return {"tensors": self.tensors, "bytes": sum(self.storages.values())}


def measure_rung(workload: Workload, rung: Rung) -> dict:
    """One step of ``rung`` after its timed rounds: {peak_bytes, method, saved_for_backward}. Gradients are
    cleared first, so every rung's step starts from the same state (the last timed step's gradients freed)."""
    for leaf in rung.inst.grad_leaves:
        leaf.grad = None
    saved = SavedTensors()
    hooks = torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda tensor: tensor)
    figures: dict = {"peak_bytes": None, "method": None, "error": None}
    with workload.grad_mode(), hooks:
        if workload.device == "cuda":
            figures.update(_cuda_peak(workload, rung))
        else:
            figures.update(peak_bytes=_cpu_peak(workload, rung), method=CPU_METHOD)
    figures["saved_for_backward"] = saved.figure() if workload.train else None
    return figures


def _cuda_peak(workload: Workload, rung: Rung) -> dict:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    workload.step(rung.fn, rung.inst, cudagraph_steps=rung.cudagraph_steps)
    torch.cuda.synchronize()
    if rung.cudagraph_steps:
        return {"peak_bytes": None, "method": CUDA_METHOD, "error": CUDAGRAPH_PEAK}
    return {"peak_bytes": max(0, torch.cuda.max_memory_allocated() - before), "method": CUDA_METHOD}


def _cpu_peak(workload: Workload, rung: Rung) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        workload.step(rung.fn, rung.inst)
    # Each "[memory]" event is one allocation (bytes > 0) or free (< 0) by the CPU allocator, in time order.
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def against_eager(memory: list[dict]) -> None:
    """Each measured rung's compression ratio (eager's peak / its own) and saved ratio (eager's bytes saved for
    backward / its own), in place; a ratio above 1 means the rung needs less memory than plain eager."""
    eager = next((m for m in memory if m["config"] == "eager"), None)
    for m in memory:
        if eager is None or m is eager:
            m["compression_ratio"] = 1.0 if m is eager and m["peak_bytes"] else None
            m["saved_ratio"] = 1.0 if m is eager and m["saved_for_backward"] else None
            continue
        m["compression_ratio"] = _ratio(eager["peak_bytes"], m["peak_bytes"])
        saved, eager_saved = m["saved_for_backward"], eager["saved_for_backward"]
        m["saved_ratio"] = _ratio(eager_saved and eager_saved["bytes"], saved and saved["bytes"])


def _ratio(eager: int | None, rung: int | None) -> float | None:
    return round(eager / rung, 4) if eager and rung else None
