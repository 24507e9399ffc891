"""Cold vs warm compile (runtime.compile_cache): what the recorded compile found in the caches, and the same model
compiled again in fresh processes (engine/warm.py), as a user's next run of the script would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import torch

from engine.measure.caches import cache_counts, kernel_binaries, trusted_binaries
from engine.stages.base import Stage

WARM_COMPILE_MIN_SECONDS = 30  # the job time a warm compile needs left (two fresh processes) before it is tried


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


def warm_compiles(job_dir: str, config_name: str, time_left_s: float) -> dict:
    """Cold vs warm (runtime.compile_cache): the same model and config compiled again in fresh processes
    (engine/warm.py) in the job's folder and sandbox. The first ("warmup") fills the graph caches the recorded
    compile kept off; the second ("warm") is what a user's next run of the script costs."""
    out = {}
    for label in ("warmup", "warm"):
        budget = time_left_s / (2 if label == "warmup" else 1)
        if budget < WARM_COMPILE_MIN_SECONDS / 2:
            out[label] = {"status": "skipped", "reason": f"only {time_left_s:.0f} s of the job's time left"}
            break
        path = os.path.join(job_dir, f"compile-{label}.json")
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "engine.warm", job_dir, config_name, path],
                cwd=job_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=budget,
            )
        except subprocess.TimeoutExpired:
            out[label] = {"status": "failed", "reason": f"did not finish within {budget:.0f} s"}
            break
        wall_s = time.monotonic() - started
        time_left_s -= wall_s
        if proc.returncode != 0 or not os.path.exists(path):
            out[label] = {"status": "failed", "reason": (proc.stderr or f"exit status {proc.returncode}")[-2000:]}
            break
        with open(path) as f:
            out[label] = {**json.load(f), "wall_seconds": round(wall_s, 3)}  # its start and exit included
    return out


class WarmCompileStage(Stage):
    """Cold vs warm (runtime.compile_cache), after the ladder: the recorded Inductor config compiled again in
    fresh processes in the job's folder and sandbox. Only Inductor's compile has caches worth warming."""

    name = "warm_compile"

    def run(self, job) -> None:
        target = job.state.target
        if target.backend != "inductor":
            return
        pending = {"status": "pending", "reason": "the warm compile was still running when the report was stored"}
        job.report["runtime"]["compile_cache"].update(warmup=pending, warm=pending)
        job.save_early()
        t0 = job.begin(self.name, config=target.name)
        with job.state.ctx.guard("runtime.warm_compile"):
            time_left = job.request.get("time_limit_s", 900) - (time.monotonic() - job.started) - 10
            job.report["runtime"]["compile_cache"].update(warm_compiles(job.job_dir, target.name, time_left))
        cache = job.report["runtime"]["compile_cache"]
        for label in ("warmup", "warm"):  # what never ran (the one before it failed, or this stage raised)
            if cache[label]["status"] == "pending":
                cache[label] = {"status": "skipped", "reason": "the warm compile did not get this far (see errors)"}
        job.end(self.name, t0, config=target.name)
