"""The recorded compile: the one compile with every stage's hooks on (Dynamo, AOTAutograd, Inductor collectors),
on its own copy of the model, seeded like every rung; its first call's outputs are the recorded rung's compared
step. The three stages run interleaved inside that one call, so their durations come from torch's own metrics."""

from __future__ import annotations

import gc

import torch

from contract.vocab import CONFIGS, capture_config
from engine.stages.aot import AotCollector
from engine.stages.base import Stage
from engine.stages.dynamo import DynamoCollector
from engine.stages.inductor import InductorCollector
from engine.stages.runtime.autotune import AutotuneWatch
from engine.stages.runtime.compile_times import RuntimeCollector
from engine.stages.runtime.cudagraphs import CudagraphWatch
from engine.usercode import compile_failure


class CaptureStage(Stage):
    """The recorded compile and its first call, then every stage's capture turned into the report: announced as
    the progress stages dynamo, aot, inductor (each as torch reaches it) and report."""

    name = "capture"

    def run(self, job) -> None:
        state = job.state
        ctx = state.ctx
        target = state.target = capture_config(job.request["configs"])
        dynamo, aot = DynamoCollector(ctx), AotCollector(ctx)
        inductor = InductorCollector(ctx, aot)
        collectors = [dynamo, aot, inductor] if target.backend == "inductor" else [dynamo, aot]
        with ctx.guard("logs.tap"):
            ctx.tap.install()
        for missing in ctx.tap.missing:
            ctx.mark_unavailable(f"logs.{missing}", "TORCH_LOGS artifact not known to this torch")
        for collector in collectors:
            collector.install()
        state.autotune = AutotuneWatch(ctx)  # every rung's autotuning, from this compile on (the ladder's)
        if any(CONFIGS[name].backend == "inductor" for name in job.request["configs"] if name in CONFIGS):
            state.autotune.install()  # it imports Inductor (1.3 s here): not for a job that never compiles with it

        stages_seen = {"dynamo"}  # job.begin("dynamo") in _first_call announces it

        def stage_started(stage):
            if stage not in stages_seen:
                stages_seen.add(stage)
                job.stage = stage
                job.emit({"event": "stage", "stage": stage, "state": "started", "config": target.name})

        def capture_backend(gm, example_inputs):
            stage_started("dynamo")
            dynamo.on_graph(gm, example_inputs)
            if target.backend == "eager":
                return gm.forward
            stage_started("aot")
            if target.backend == "aot_eager":
                return aot.recording_aot_eager(gm, example_inputs)
            return inductor.compile(gm, example_inputs, target.mode, on_inductor=lambda: stage_started("inductor"))

        t0, capture_ms = _first_call(job, capture_backend, dynamo)
        RuntimeCollector(ctx).collect(job.report)
        seconds = job.report["runtime"]["compile_seconds"]
        durations = {
            "dynamo": seconds.get("dynamo"),
            "aot": seconds.get("aot_autograd"),
            "inductor": (seconds.get("inductor") or 0) + (seconds.get("codegen") or 0),
        }
        for stage in ("dynamo", "aot", "inductor"):
            if stage in stages_seen:
                job.end(stage, t0, seconds=durations[stage], config=target.name)
        t0 = job.begin("report")
        dynamo.collect(job.report)
        aot.collect(job.report, dynamo.graph_modules)
        if target.backend == "inductor":
            inductor.collect(job.report)
        job.report["runtime"]["recorded_config"] = target.name
        job.report["runtime"]["first_call_ms"] = round(capture_ms, 3)
        job.end("report", t0)

        # Our own objects must not cost the user's timings: stop the trace (torch then skips building its payloads)
        # and move everything allocated so far out of the garbage collector's reach (no gen-2 pauses in the loop).
        ctx.tap.uninstall_trace()
        gc.collect()
        gc.freeze()


def _first_call(job, capture_backend, dynamo: DynamoCollector) -> tuple[float, float]:
    """Compile a fresh copy of the model with the recording backend and run its first (compared) step; keep it as
    state.recorded. Returns (when the dynamo stage began, the first call's ms)."""
    state = job.state
    ctx, workload, target = state.ctx, state.workload, state.target
    torch._dynamo.reset()
    ctx.recording = True
    inst = workload.fresh()
    compiled = torch.compile(inst.model, backend=capture_backend)
    cudagraph_steps = target.cudagraph_steps(ctx.device)
    # The recorded rung's CUDA-graph status includes what its compile said (skip reasons are logged then).
    watch = state.watches.setdefault(target.name, CudagraphWatch(ctx))
    t0 = job.begin("dynamo", config=target.name)
    try:
        with watch, state.autotune.for_rung(target.name):
            # Numbered calls: each recompile names the input set (example_inputs[i]) that triggered it.
            numbered = dynamo.numbered_calls(compiled, inst.inputs, inst.model)
            capture_ms, outs, grads = workload.compared_step(numbered, inst, cudagraph_steps=cudagraph_steps)
    except Exception as exc:
        raise compile_failure(exc, ctx.user_file, job.stage if job.stage != "eager" else "dynamo") from None
    finally:
        ctx.recording = False
    state.recorded = (inst, compiled, capture_ms, outs, grads)
    return t0, capture_ms
