"""Timing across processes (runtime.processes): the ladder's interleaved timed rounds run again in fresh processes
that look like a user's script, and the Runtime figures taken across them.

The capture process carries the log tap and the recorded compile's hooks and has compiled every rung under them; a
user's script has none of that. What differs from one fresh process to the next (the address-space layout, the
allocator's history, where the OpenMP threads land) is in no single process's interval: pyperf spawns many
worker processes for this reason. The warm-compile processes (engine/warm.py) already load the model fresh in the
job's folder and sandbox, with the job's caches warm; after their compile they detach the log tap entirely and time
every config here, so each figure has a median per process and a speedup is decided only when they agree
(engine.measure.stats.speedup_across_processes). The capture process's own figures stay, labelled
(`benchmarks[].capture_speedup`). The figures across processes are torch-free: engine/measure/process_figures.py."""

from __future__ import annotations

import torch

from contract.vocab import CONFIGS
from engine.stages.runtime.rung import Rung
from engine.stages.runtime.timing import Unwatched, time_rounds, warm_up
from engine.stages.runtime.workload import Workload


def time_here(workload: Workload, compiled: tuple, target: str, configs: list[str], device: str) -> dict:
    """In a measuring process: every config in ``configs`` on its own model copy (``compiled``: the target's
    (instance, compiled function), compiled already), warmed up and timed in the ladder's interleaved rounds. Returns what the child merges
    (merge_processes): each config's rounds (ms per step), its steps per round, the machine's load, errors."""
    errors = Unwatched()
    rungs = []
    torch._dynamo.config.recompile_limit = torch._dynamo.config.recompile_limit * len(configs)  # as the ladder
    for name in configs:
        config = CONFIGS[name]
        cudagraph_steps = config.cudagraph_steps(device)
        try:
            inst = workload.fresh() if name != target else compiled[0]
            if name == target:
                fn = compiled[1]
            elif name == "eager":
                fn = inst.model
            else:
                try:  # automatic-dynamic memory is per code object (private API: as the ladder, guarded)
                    torch._dynamo.pgo.reset_code_state()
                except Exception:  # noqa: BLE001 - without it a rung may compile dynamic shapes sooner
                    pass
                fn = torch.compile(inst.model, backend=config.backend, mode=config.mode)
            with workload.grad_mode():  # the first call compiles
                workload.step(fn, inst, cudagraph_steps=cudagraph_steps)
                workload.sync()
            rung = Rung(name, inst, fn, {"status": "ok"}, cudagraph_steps)
            rung.step_s = warm_up(workload, rung)
            rungs.append(rung)
        except Exception as exc:  # noqa: BLE001 - one config failing here keeps the others measured
            errors.error(name, exc)
    rt: dict = {}
    time_rounds(workload, rungs, rt, errors)
    timed = [r for r in rungs if r.entry["status"] == "ok" and r.rounds_ms]
    return {
        "rounds_ms": {r.name: [round(t, 5) for t in r.rounds_ms] for r in timed},
        "steps_per_round": {r.name: r.steps_per_round for r in timed},
        "load": rt["load"],
        "errors": errors.errors,
    }
