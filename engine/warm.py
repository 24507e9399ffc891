"""A warm compile: the job's model compiled again in a fresh process, with the caches the job's compiles left.

``python -m engine.warm JOB_DIR CONFIG OUT`` runs inside the job's sandbox and folder (spawned by the child, after
the benchmark ladder): it loads the user's file as the child did, compiles it with CONFIG's backend and mode with
every cache at torch's defaults (the recorded compile had the graph caches off to see IR and fusion; on CPU its
kernels carry profiler names, set here too so that its kernel binaries can be reused), calls it once
on each input set (and backward when training), and writes OUT (JSON): the exclusive compile seconds, as the
recorded compile's (runtime.compile_seconds), and the cache hits and misses per stage. Run twice, the first run
fills the FX-graph and AOTAutograd caches that the second then hits: a user's second run of the same script.

``python -m engine.warm JOB_DIR CONFIG OUT CONFIGS`` is also a measuring process (runtime.processes): after its
compile it detaches the log tap and times every config of CONFIGS (comma-separated) in the ladder's interleaved
rounds (engine.stages.runtime.processes.time_here); OUT then holds them too, under "timing".
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    job_dir, config_name, out_path, *timed = argv
    import torch

    from contract.vocab import CONFIGS
    from engine import logtap, usercode
    from engine.measure.caches import cache_counts, kernel_binaries
    from engine.measure.compile_metrics import compile_seconds
    from engine.readers.inductor_log import kernel_count
    from engine.stages import inductor  # noqa: F401 - declares the log reader of the output code read below
    from engine.stages.runtime import compile_times  # noqa: F401 - declares the log readers read below
    from engine.stages.runtime.workload import Workload

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
    workload = Workload(program.model, program.inputs_list, program.train, program.loss_fn, request["device"])
    inst = workload.fresh()
    compiled = torch.compile(inst.model, backend=config.backend, mode=config.mode)
    # The recorded compile's step (grad mode included: an inference graph without train), so the same graphs and
    # cache keys; the first call compiles.
    workload.compared_step(
        compiled, inst, cudagraph_steps=config.mode == "reduce-overhead" and request["device"] == "cuda"
    )
    written = len(kernel_binaries() - before)
    metrics = logtap.read(tap, "runtime.compile_metrics")
    kernels = sum(kernel_count(o["code"]) for o in logtap.read(tap, "inductor.output_code"))
    result = {
        "status": "ok",
        "config": config_name,
        "seconds": compile_seconds(metrics["forward"], metrics["backward"], metrics["runtime"]),
        "caches": cache_counts(torch._dynamo.utils.counters, kernels, written),
    }
    if timed and timed[0]:  # a measuring process: nothing of ours stays attached while it times the configs
        from engine.stages.runtime.processes import time_here

        tap.uninstall()
        result["timing"] = time_here(workload, (inst, compiled), config_name, timed[0].split(","), request["device"])
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
