"""The runtime's pipeline stages: plain eager (the reference every rung is judged and timed against), then the
ladder: every requested config compiled on its own model copy, checked, warmed up, timed in interleaved rounds,
profiled."""

from __future__ import annotations

import torch

from contract.vocab import CONFIGS
from engine.measure.stats import speedup
from engine.stages.base import Stage
from engine.stages.runtime.accuracy import (
    RANDOM_STREAM_FALLBACK,
    Reference,
    fallback_random_backend,
    first_divergent_stage,
    rung_verdict,
)
from engine.stages.runtime.cudagraphs import CudagraphWatch
from engine.stages.runtime.memory import against_eager, measure_rung
from engine.stages.runtime.profiling import compute_peaks, gpu_busy_ms, kernel_profile, memory_bandwidth
from engine.stages.runtime.rung import Rung
from engine.stages.runtime.timing import latency, time_rounds, warm_up
from engine.stages.runtime.workload import SEED
from engine.userbackends import RecordingBackend, rung_config
from engine.usercode import describe, user_failure


class ReferenceStage(Stage):
    """Plain eager from the state as loaded and the seed (twice, and once with another seed): the yardstick of
    every error and the baseline of every speedup. Also states whether the job is inference or training."""

    name = "eager"

    def run(self, job) -> None:
        state = job.state
        program = state.program
        rt = job.report["runtime"]
        rt["mode"] = {
            "kind": "training" if program.train else "inference",
            "grad_enabled": bool(program.train),
            "reason": program.train_reason,
        }
        t0 = job.begin("eager")
        job.user_code_starts()
        try:
            state.reference = Reference(state.workload)
        except Exception as exc:
            raise user_failure(
                exc, state.ctx.user_file, "running the model in eager mode (before any compile)"
            ) from None
        job.stall.allow_steps(state.reference.first_ms / 1000)  # a slow model's steps pass between marks
        rt["reference"] = {
            "seed": SEED,
            "model_state": state.workload.model_state,
            "eager_repeat": state.reference.repeat,
        }
        job.end("eager", t0)


class LadderStage(Stage):
    """Every requested config on its own model copy: compiled, checked against eager, warmed up, then timed in
    rounds interleaved across configs; CUDA-graph status per rung; the recorded Inductor rung profiled per kernel."""

    name = "benchmark"

    def run(self, job) -> None:
        state, workload, rt = job.state, job.state.workload, job.report["runtime"]
        configs, order = self._set_up(job)
        entries, rungs = {}, []
        for name in order:
            t0 = job.begin("benchmark", config=name)
            rung = self.prepare(name, state, entries)
            if rung:
                rungs.append(rung)
            job.end("benchmark", t0, config=name, status=entries[name]["status"])

        t0 = job.begin("benchmark")  # the timed rounds of every config together (a stage without a config)
        time_rounds(workload, rungs, rt, state.ctx)
        self._figures(state, rungs, rt)
        job.report["debug"]["memory"] = self._memory(state, rungs, [n for n in configs if n in entries])
        for name, entry in entries.items():  # the recorded config has a watch even when it is not benchmarked
            entry["cudagraphs"] = state.watches[name].status(state.ctx.device, name)
        job.end("benchmark", t0)

        rt["benchmarks"] = [entries[n] for n in configs if n in entries]  # in the order asked for
        rt["correctness"] = first_divergent_stage(rt["benchmarks"], state.reference)
        rt["autotune"] = state.autotune.decisions
        rt["cudagraphs"] = next(
            (b["cudagraphs"] for b in rt["benchmarks"] if b["cudagraphs"]["status"] != "not_requested"),
            {"status": "not_requested"},
        )
        self._profile_recorded_rung(job, rungs)

    def _set_up(self, job) -> tuple[list[str], list[str]]:
        """The rungs (the requested configs, then the user's backends), the memory bandwidth and each rung's
        recompile budget; returns the rungs as asked for and in the order they are prepared (eager, the recorded
        config, the others)."""
        state, ctx, rt = job.state, job.state.ctx, job.report["runtime"]
        # The user's own backends (engine/userbackends.py) are rungs after the requested configs.
        state.user_rungs = {
            rung_config(name, fn).name: (
                rung_config(name, fn),
                RecordingBackend(name, fn, ctx.user_file, job.report["debug"]),
            )
            for name, fn in state.program.backends.items()
        }
        configs = job.request["configs"] + list(state.user_rungs)
        order = list(dict.fromkeys(n for n in ["eager", state.target.name] + configs if n in configs))
        # By the prestarted child, before its job (engine.child), or now.
        for field, measure in (("memory_bandwidth", memory_bandwidth), ("compute_peaks", compute_peaks)):
            measured = getattr(state, field, None)
            if measured and measured.get("device") == ctx.device:
                rt[field] = measured
            else:
                with ctx.guard(f"runtime.{field}"):
                    rt[field] = measure(ctx.device)
        # Rungs are not separated by torch._dynamo.reset() (it would drop the code being compared): each gets its
        # own recompile budget instead.
        with ctx.guard("dynamo.recompile_limit"):
            # Twice: an Inductor rung of a model that draws random numbers compiles again for its check.
            torch._dynamo.config.recompile_limit = torch._dynamo.config.recompile_limit * 2 * len(order)
        return configs, order

    def _figures(self, state, rungs: list, rt: dict) -> None:
        """After the timed rounds: each timed rung's latency, GPU busy time (on CUDA) and speedup against eager."""
        ctx, workload, device = state.ctx, state.workload, state.ctx.device
        eager = next((r for r in rungs if r.name == "eager"), None)
        timed = [r for r in rungs if r.entry["status"] == "ok"]
        load = rt["load"]
        contended_by = (
            f"the machine was busy, other processes used {load['other_cpu_cores']:.2f} of its {load['cpu_count']} "
            "cores in every round"
            if load["contended"]
            else None
        )
        for rung in timed:
            with ctx.guard(f"runtime.latency.{rung.name}"):
                rung.entry.update(latency(workload, rung, rung.entry["median_ms"] / 1000))
        # After every latency: once CUDA's profiler (CUPTI) has run in a process, kernel launches there cost more.
        for rung in timed if device == "cuda" else ():
            with ctx.guard(f"runtime.gpu_busy.{rung.name}"):
                rung.entry["gpu_busy_ms"] = round(gpu_busy_ms(workload, rung), 4)
        for rung in timed:
            entry = rung.entry
            if eager and eager.rounds_ms:
                entry["speedup"] = (
                    speedup(eager.rounds_ms, rung.rounds_ms, contended_by=contended_by)
                    if rung is not eager
                    else {
                        "value": 1.0,
                        "low": 1.0,
                        "high": 1.0,
                        "decided": True,
                        "verdict": "same",
                        "text": "the baseline",
                    }
                )
                entry["speedup"]["source"] = "capture_process"  # until the measuring processes' (processes.py)
                entry["speedup_vs_eager"] = entry["speedup"]["value"]

    def _memory(self, state, rungs: list, configs: list[str]) -> list[dict]:
        """debug.memory: one step of each rung that ran (after every timed round, so that none is timed beside
        the profiler), in the order asked for."""
        by_name = {r.name: r for r in rungs}
        memory = []
        for name in configs:
            figures = {"config": name, "peak_bytes": None, "method": None, "saved_for_backward": None, "error": None}
            rung = by_name.get(name)
            if rung is None:
                figures["error"] = "the rung failed before it could run a step"
            else:
                try:  # the user's model (a later call may raise) and the profiler's records (private API)
                    figures.update(measure_rung(state.workload, rung))
                except Exception as exc:  # noqa: BLE001 - a rung's memory is a figure, never the job's end
                    figures["error"] = f"{type(exc).__name__}: {exc}"[:500]
            memory.append(figures)
        against_eager(memory)
        return memory

    def _profile_recorded_rung(self, job, rungs: list) -> None:
        """The recorded Inductor rung's kernels in the profiler (runtime.kernel_profile)."""
        state, ctx, workload, rt = job.state, job.state.ctx, job.state.workload, job.report["runtime"]
        target = state.target
        recorded = next((r for r in rungs if r.name == target.name and r.entry["status"] == "ok"), None)
        if recorded and target.backend == "inductor":
            t0 = job.begin("profile")
            with ctx.guard("runtime.kernel_profile"):
                rt["kernel_profile"], rt["kernel_profile_summary"] = kernel_profile(
                    workload,
                    recorded,
                    job.report["inductor"]["kernels"],
                    (rt.get("memory_bandwidth") or {}).get("bytes_per_s"),
                    rt.get("compute_peaks"),
                )
            job.end("profile", t0)

    def judge(self, name: str, config, state, entry: dict, outs: list, grads: dict, cudagraph_steps: bool) -> None:
        """The rung's correctness against eager into ``entry``; an Inductor rung of a model that draws random
        numbers is judged on a second compile with fallback_random (same_stream_step). ``config``: the rung's
        (a built-in one, or a user backend's, whose backend is its rung name)."""
        reference, backend = state.reference, config.backend
        if name == "eager":
            correctness = {
                "verdict": "match" if reference.deterministic else "nondeterministic",
                "max_abs_error": 0.0,
                "max_rel_error": 0.0,
                "atol": None,
                "rtol": None,
                "fp64_checked": False,
                "reason": "the reference itself",
                "random_stream": None,
            }
        else:
            same_stream = None
            if reference.uses_rng and reference.deterministic and backend == "inductor":
                outs, grads, same_stream = self.same_stream_step(config, state, cudagraph_steps, (outs, grads))
            correctness = rung_verdict(reference.judge(outs, grads), reference, backend, same_stream)
        entry["correctness"] = correctness
        entry["max_abs_error"], entry["max_rel_error"] = correctness["max_abs_error"], correctness["max_rel_error"]
        if state.workload.train:
            g = correctness.get("gradients") or {"max_abs_error": 0.0, "max_rel_error": 0.0}
            entry["grad_max_abs_error"], entry["grad_max_rel_error"] = g["max_abs_error"], g["max_rel_error"]

    def same_stream_step(self, config, state, cudagraph_steps: bool, timed: tuple) -> tuple:
        """The compared step of ``config`` (an Inductor one) compiled again with fallback_random, seeded like eager: (outs, grads,
        (True, how)); where that cannot be done, the timed compile's (outs, grads) and (False, why)."""
        ctx, workload = state.ctx, state.workload
        backend, why = fallback_random_backend(config.mode)
        if backend is None:
            ctx.mark_unavailable("inductor.fallback_random", why)
            return (*timed, (False, why))
        try:
            with ctx.guard("dynamo.reset_code_state"):
                torch._dynamo.pgo.reset_code_state()
            inst = workload.fresh()
            _, outs, grads = workload.compared_step(
                torch.compile(inst.model, backend=backend), inst, cudagraph_steps=cudagraph_steps
            )
        except Exception as exc:  # noqa: BLE001 - the timed rung stands; only its check is lost
            return (*timed, (False, f"the check compile with fallback_random failed: {type(exc).__name__}: {exc}"))
        return outs, grads, (True, RANDOM_STREAM_FALLBACK.format(seed=SEED))

    def prepare(self, name: str, state, entries: dict) -> Rung | None:
        """Compile (the recorded config is compiled already), run the compared step, judge it, warm up."""
        ctx, workload, reference = state.ctx, state.workload, state.reference
        config, backend = state.user_rungs[name] if name in state.user_rungs else (CONFIGS[name], CONFIGS[name].backend)
        cudagraph_steps = config.cudagraph_steps(ctx.device)
        entry = entries[name] = {
            "config": name,
            "label": config.label,
            "backend": config.backend,
            "mode": config.mode,
            "status": "ok",
            "error": None,
        }
        watch = state.watches.setdefault(name, CudagraphWatch(ctx))
        try:
            with watch:
                if name == "eager":
                    inst, fn = reference.inst, reference.inst.model
                    first_ms, outs, grads = reference.first_ms, reference.outs, reference.grads
                elif name == state.target.name:
                    inst, fn, first_ms, outs, grads = state.recorded
                else:
                    with ctx.guard("dynamo.reset_code_state"):  # automatic-dynamic memory is per code object
                        torch._dynamo.pgo.reset_code_state()
                    inst = workload.fresh()
                    fn = torch.compile(inst.model, backend=backend, mode=config.mode)
                    with state.autotune.for_rung(name):
                        first_ms, outs, grads = workload.compared_step(fn, inst, cudagraph_steps=cudagraph_steps)
                entry["first_call_ms"] = round(first_ms, 3)
            # Outside the watch: the same-stream check compiles a second time, which is not this rung's CUDA graphs.
            self.judge(name, config, state, entry, outs, grads, cudagraph_steps)
            rung = Rung(name, inst, fn, entry, cudagraph_steps)
            with watch:
                rung.step_s = warm_up(workload, rung)
            return rung
        except Exception as exc:  # one failing config must not lose the others
            # What the backend itself raised (torch wraps it in BackendCompilerFailed), at the user's line.
            error, _ = describe(getattr(exc, "inner_exception", None) or exc, ctx.user_file)
            entry.update(status="failed", error=error[:2000])
            ctx.error(f"benchmark:{name}", exc)
            return None
