"""Runtime: what the compiled program costs and whether it is right, one module per concern.

The ladder (issue 9): every rung runs its own copy of the model as loaded, seeded alike, under torch.no_grad()
unless training; its compared step is judged against plain eager like torch._dynamo.utils.same (dtype-aware
tolerances, an fp64 fallback, eager against itself first), and the first stage that diverges is named. Timing
matches a user's loop: N back-to-back steps between one pair of timestamps (CUDA events on GPU), in rounds
interleaved across configs, median of rounds with its spread; a speedup says whether the spread decides it.

    workload.py       the user's program as one step: Workload (a fresh model copy per rung), Instance, the seed
    accuracy.py       the compared step judged: tolerances, compare, Reference (plain eager), verdicts, the first
                      divergent stage
    rung.py           Rung: one config of the ladder (its compiled function, report entry, timed rounds)
    timing.py         warm-up, timed rounds interleaved across rungs, latency, contention handling
    profiling.py      GPU busy time, per-kernel profile, the machine's memory bandwidth
    cudagraphs.py     what CUDA graph trees did per rung (used, skipped and why, re-recorded)
    compile_times.py  the recorded compile's seconds per stage and timeline (RuntimeCollector)
    ladder.py         the pipeline stages: ReferenceStage (plain eager) and LadderStage (every config)
    warm_compile.py   cold vs warm compile: WarmCompileStage, the fresh processes of engine/warm.py

The torch-free parts (statistics, machine load, compile metrics, cache counts) are in engine/measure/.
"""
