"""The recorded compile's cost: exclusive seconds per stage, each compile's metrics and the compile timeline, read
from the log tap (the arithmetic is torch-free: engine/measure/compile_metrics.py)."""

from __future__ import annotations

import os

import torch

from engine import logtap
from engine.measure.caches import cache_counts, kernel_binaries, trusted_binaries
from engine.measure.compile_metrics import compile_seconds, metrics_summary, timeline
from engine.readers.inductor_log import kernel_count
from engine.stages.base import Collector


def cold_caches(kernels: int) -> dict:
    """What the recorded compile found in the caches (runtime.compile_cache.cold): its graph caches were off and the
    job's cache folders new, holding at most the worker's trusted kernel binaries (bound read-only by the sandbox,
    engine.sandbox.publish_kernel_cache): every other kernel binary there was written by it, a miss. Called right
    after the recorded compile."""
    binaries = kernel_binaries()
    trusted = trusted_binaries(binaries)
    caches = cache_counts(torch._dynamo.utils.counters, kernels, len(binaries - trusted))
    for name in ("fx_graph", "aot_autograd"):
        caches[name]["state"] = "off during the recorded compile (to see IR and fusion)"
    caches["kernels"]["trusted_binaries"] = len(trusted)
    if trusted:
        sources = os.environ.get("PT2SCOPE_TRUSTED_KERNELS") or "the gallery"
        caches["kernels"]["state"] = (
            f"shared: the worker's trusted kernel cache, built at its start from {sources.replace(',', ', ')} and "
            f"bound read-only ({len(trusted)} binaries); a hit is a kernel found there, a miss one compiled here"
        )
    else:
        caches["kernels"]["state"] = "the job's new, empty cache folders"
    return caches


class RuntimeCollector(Collector):
    section = "runtime"

    def collect(self, report: dict) -> None:
        tap = self.ctx.tap
        section = report[self.section]
        metrics = logtap.read(tap, "runtime.compile_metrics")
        section["compile_seconds"] = compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"])
        section["compile_metrics"] = [metrics_summary(m) for m in metrics["forward"]]
        section["compile_timeline"] = logtap.read(tap, "runtime.timeline")
        outputs = logtap.read(tap, "inductor.output_code")
        if outputs:  # Inductor compiled: its caches (graph, AOTAutograd, kernels) are what a warm compile reuses
            with self.ctx.guard("runtime.compile_cache"):
                kernels = sum(kernel_count(o["code"]) for o in outputs)
                section["compile_cache"] = {
                    "cold": {"seconds": section["compile_seconds"], "caches": cold_caches(kernels)}
                }
        if not metrics["forward"]:
            self.ctx.mark_unavailable("runtime.compilation_metrics", "no compilation_metrics event in the trace")


logtap.declare(
    "runtime.compile_metrics",
    trace=("compilation_metrics", "bwd_compilation_metrics", "compilation_metrics_runtime"),
    read=lambda log: {
        kind: [e["metadata"] for e in log.events(event) if e["metadata"]]
        for kind, event in (
            ("forward", "compilation_metrics"),
            ("backward", "bwd_compilation_metrics"),
            ("runtime", "compilation_metrics_runtime"),
        )
    },
)
logtap.declare(
    "runtime.timeline",
    trace=("chromium_event",),
    read=lambda log: timeline([e for e in log.events("chromium_event") if e["payload"]], log),
)
