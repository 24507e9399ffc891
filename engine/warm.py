"""A warm compile: the job's model compiled again in a fresh process, with the caches the job's compiles left.

``python -m engine.warm JOB_DIR CONFIG OUT`` runs inside the job's sandbox and folder (spawned by the child, after
the benchmark ladder): it loads the user's file as the child did, compiles it with CONFIG's backend and mode with
every cache at torch's defaults (the recorded compile had the graph caches off to see IR and fusion; on CPU its
kernels carry profiler names, set here too so that its kernel binaries can be reused), calls it once
on each input set (and backward when training), and writes OUT (JSON): the exclusive compile seconds, as the
recorded compile's (runtime.compile_seconds), and the cache hits and misses per stage. Run twice, the first run
fills the FX-graph and AOTAutograd caches that the second then hits: a user's second run of the same script.
"""

from __future__ import annotations

import json
import os
import sys

from engine.sandbox import BINARY_SUFFIXES


def kernel_binaries() -> set[str]:
    found = set()
    for variable in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        root = os.environ.get(variable)
        if not root or not os.path.isdir(root):
            continue
        for folder, _, files in os.walk(root):
            found.update(os.path.join(folder, f) for f in files if f.endswith(BINARY_SUFFIXES))
    return found


def trusted_binaries(binaries: set[str]) -> set[str]:
    """The binaries on a read-only mount: the worker's trusted kernel cache, bound by the sandbox
    (engine.sandbox.publish_kernel_cache). A job cannot make one (it may not mount), so it cannot pass off a binary
    of its own as trusted."""
    found = set()
    for path in binaries:
        try:
            if os.statvfs(path).f_flag & os.ST_RDONLY:
                found.add(path)
        except OSError:
            pass
    return found


def cache_counts(counters, kernels: int, binaries_written: int) -> dict:
    """Hits and misses per cache from torch's counters (dynamo.utils.counters). Kernels: torch counts no on-disk
    kernel-cache hits, so they are measured: binaries written to the cache folders during the compile are misses
    (at most one per generated kernel: a C++ compile can also write helpers), the other generated kernels hits."""
    inductor, aot = counters["inductor"], counters["aot_autograd"]
    misses = min(kernels, binaries_written)
    return {
        "fx_graph": {
            "hits": inductor["fxgraph_cache_hit"],
            "misses": inductor["fxgraph_cache_miss"],
            "bypasses": inductor["fxgraph_cache_bypass"],
        },
        "aot_autograd": {
            "hits": aot["autograd_cache_hit"],
            "misses": aot["autograd_cache_miss"],
            "bypasses": aot["autograd_cache_bypass"],
        },
        "kernels": {
            "hits": kernels - misses,
            "misses": misses,
            "generated": kernels,
            "binaries_written": binaries_written,
        },
    }


def main(argv: list[str]) -> int:
    job_dir, config_name, out_path = argv
    import torch

    from contract.vocab import CONFIGS
    from engine import logtap, usercode
    from engine.stages import inductor as inductor_stage
    from engine.stages import runtime

    with open(os.path.join(job_dir, "request.json")) as f:
        request = json.load(f)
    with open(os.path.join(job_dir, request["filename"])) as f:
        source = f.read()
    program = usercode.load(source, request["filename"], request["device"], request.get("train"))
    config = CONFIGS[config_name]
    if request["device"] == "cpu":  # as the recorded compile (inductor stage): the same kernel source, so the
        import torch._inductor.config as inductor_config  # binaries it left can be found in the cache

        inductor_config.cpp.enable_kernel_profile = True
    # The structured trace only (as during the recorded compile, so both are timed with the same instrument); no
    # TORCH_LOGS artifact.
    tap = logtap.LogTap()
    tap.install(artifacts=())
    before = kernel_binaries()
    workload = runtime.Workload(program.model, program.inputs_list, program.train, program.loss_fn, request["device"])
    inst = workload.fresh()
    compiled = torch.compile(inst.model, backend=config.backend, mode=config.mode)
    # The recorded compile's step (grad mode included: an inference graph without train), so the same graphs and
    # cache keys; the first call compiles.
    workload.compared_step(
        compiled, inst, cudagraph_steps=config.mode == "reduce-overhead" and request["device"] == "cuda"
    )
    written = len(kernel_binaries() - before)
    metrics = logtap.read(tap, "runtime.compile_metrics")
    kernels = sum(inductor_stage.kernel_count(o["code"]) for o in logtap.read(tap, "inductor.output_code"))
    result = {
        "status": "ok",
        "config": config_name,
        "seconds": runtime.compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"]),
        "caches": cache_counts(torch._dynamo.utils.counters, kernels, written),
    }
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
