"""The child process of one job: load the user's code, compile it with every stage recorded, benchmark, report.

Run as ``python -m engine.child JOB_DIR`` by engine.job (never imported by the parent). Reads
JOB_DIR/request.json, writes progress events as JSON lines to the fd in PT2SCOPE_EVENT_FD, saves
JOB_DIR/report.json.partial after each stage (so a crash keeps what was done) and JOB_DIR/report.json at the end.
"""
from __future__ import annotations

import gc
import json
import os
import platform
import sys
import time
import traceback

from engine.report import capture_config, empty_report, failed_report, write_report


class Job:
    def __init__(self, job_dir: str):
        self.job_dir = job_dir
        with open(os.path.join(job_dir, "request.json")) as f:
            self.request = json.load(f)
        self.report = empty_report(self.request)
        self.started = time.monotonic()
        fd = os.environ.get("PT2SCOPE_EVENT_FD")
        self.events = os.fdopen(int(fd), "w", buffering=1) if fd else None
        self.stage = "load"
        self.tap = None  # the log tap, once installed (its summary is the report's "logs")

    def emit(self, event: dict) -> None:
        event.setdefault("elapsed_s", round(time.monotonic() - self.started, 3))
        if self.events:
            try:
                self.events.write(json.dumps(event, default=str) + "\n")
            except OSError:  # the parent went away: finish the report anyway
                self.events = None

    def begin(self, stage: str, **extra) -> float:
        self.stage = stage
        self.emit({"event": "stage", "stage": stage, "state": "started", **extra})
        return time.monotonic()

    def end(self, stage: str, t0: float, seconds: float | None = None, **extra) -> None:
        seconds = round(time.monotonic() - t0 if seconds is None else seconds, 4)
        self.report["stages"].append({"name": stage, "seconds": seconds, **extra})
        self.emit({"event": "stage", "stage": stage, "state": "finished", "seconds": seconds, **extra})
        write_report(self.report, os.path.join(self.job_dir, "report.json.partial"))

    def save(self) -> None:
        from contract.counts import summarize

        self.report["summary"] = summarize(self.report)  # the one owner of every count, failed jobs too
        if self.tap is not None:
            self.report["logs"] = self.tap.summary()
        write_report(self.report, os.path.join(self.job_dir, "report.json"))


def run(job: Job) -> None:
    # torch is imported here, in the child only, and its import time is part of the load stage.
    t0 = job.begin("load")
    import torch

    from engine import usercode
    from engine.logtap import LogTap
    from engine.stages import runtime
    from engine.stages.aot import AotCollector
    from engine.stages.base import Context
    from engine.stages.dynamo import DynamoCollector
    from engine.stages.inductor import InductorCollector

    req = job.request
    device, filename = req["device"], req["filename"]
    job.report["environment"] = environment(torch, device)
    job.report["caches"] = {"state": "cold", "inductor_cache_dir_was_empty": _empty(
        os.environ.get("TORCHINDUCTOR_CACHE_DIR")), "fx_graph_cache_during_capture": False,
        "autograd_cache_during_capture": False,
        "note": "each job has its own new kernel cache folder; graph caches are off for the recorded compile so "
                "IR, fusion and post-grad graphs are always produced; benchmark compiles may reuse its kernels"}
    if device == "cuda" and not torch.cuda.is_available():
        raise usercode.UserCodeError("no_device", "this worker has no CUDA device: choose device cpu")
    with open(os.path.join(job.job_dir, filename)) as f:
        source = f.read()
    program = usercode.load(source, filename, device, req.get("train"))
    job.report["request"]["train_effective"] = program.train
    job.end("load", t0)

    tap = job.tap = LogTap()
    ctx = Context(user_file=filename, device=device, train=program.train, tap=tap, emit=job.emit)
    workload = runtime.Workload(program.model, program.inputs_list, program.train, program.loss_fn, device)

    # Plain eager: the reference for every error and the baseline of every speedup.
    t0 = job.begin("eager")
    try:
        ref_ms, ref_out, ref_grads = workload.result(program.model)
    except Exception as exc:
        raise _user_failure(exc, filename, "running the model in eager mode (before any compile)") from None
    job.end("eager", t0)

    # The recorded compile: every stage's hooks on, caches cold.
    target = capture_config(req["configs"])
    dynamo, aot = DynamoCollector(ctx), AotCollector(ctx)
    inductor = InductorCollector(ctx, aot)
    collectors = [dynamo, aot, inductor] if target.backend == "inductor" else [dynamo, aot]
    with ctx.guard("logs.tap"):
        tap.install()
    for missing in tap.missing:
        ctx.mark_unavailable(f"logs.{missing}", "TORCH_LOGS artifact not known to this torch")
    for collector in collectors:
        collector.install()

    stages_seen = {"dynamo"}  # job.begin("dynamo") below announces it

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

    torch._dynamo.reset()
    ctx.recording = True
    compiled = torch.compile(program.model, backend=capture_backend)
    t0 = job.begin("dynamo", config=target.name)
    try:
        capture_ms, capture_out, capture_grads = workload.result(dynamo.numbered_calls(compiled, program.inputs_list))
    except Exception as exc:
        raise _compile_failure(exc, filename, job.stage if job.stage != "eager" else "dynamo", torch) from None
    finally:
        ctx.recording = False
    # The three stages ran interleaved inside one call: their durations come from torch's own compile metrics.
    runtime.RuntimeCollector(ctx).collect(job.report)
    seconds = job.report["runtime"]["compile_seconds"]
    durations = {"dynamo": seconds.get("dynamo"), "aot": seconds.get("aot_autograd"),
                 "inductor": (seconds.get("inductor") or 0) + (seconds.get("codegen") or 0)}
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
    tap.uninstall_trace()
    gc.collect()
    gc.freeze()

    # The ladder: plain eager, then the recorded compile (timed and profiled before any reset, which would make
    # it recompile), then every other config compiled on its own after a reset.
    rt = job.report["runtime"]
    rt["timing"] = {"method": "cuda_events" if device == "cuda" else "perf_counter",
                    "statistic": "median of per-step times, p10-p90 spread",
                    "step": "one call per example input set" + (", forward + backward" if program.train else "")}
    order = ["eager", target.name] + [n for n in req["configs"] if n not in ("eager", target.name)]
    entries = {}
    for name in order:
        if name not in req["configs"]:
            continue
        t0 = job.begin("benchmark", config=name)
        recorded = (compiled, capture_ms, capture_out, capture_grads) if name == target.name else (None,) * 4
        entry = runtime.benchmark_config(name, workload, recorded, (ref_out, ref_grads, ref_ms), ctx)
        eager_ms = entries["eager"].get("median_ms") if entries else entry.get("median_ms")
        if eager_ms and entry.get("median_ms"):
            entry["speedup_vs_eager"] = round(eager_ms / entry["median_ms"], 4)
        entries[name] = entry
        job.end("benchmark", t0, config=name, median_ms=entry.get("median_ms"), status=entry["status"])
        if name == target.name and target.backend == "inductor":
            t0 = job.begin("profile")
            with ctx.guard("runtime.kernel_profile"):
                names = {k["name"] for k in job.report["inductor"]["kernels"]}
                rt["kernel_profile"] = runtime.kernel_profile(workload, compiled, names, device)
            job.end("profile", t0)
    rt["benchmarks"] = [entries[n] for n in req["configs"] if n in entries]
    rt["cudagraphs"] = next((b["cudagraphs"] for b in rt["benchmarks"]
                             if b["cudagraphs"]["status"] != "not_requested"), {"status": "not_requested"})

    if target.backend == "inductor":  # cold vs warm: only Inductor's compile has caches worth warming
        t0 = job.begin("warm_compile", config=target.name)
        with ctx.guard("runtime.warm_compile"):
            time_left = req.get("time_limit_s", 900) - (time.monotonic() - job.started) - 10
            rt.setdefault("compile_cache", {}).update(runtime.warm_compiles(job.job_dir, target.name, time_left))
        job.end("warm_compile", t0, config=target.name)

    job.report["unavailable"] = ctx.unavailable
    job.report["errors"] += ctx.errors
    job.report["status"] = "ok"


def _user_failure(exc, filename, doing):
    from engine.usercode import UserCodeError, describe, user_traceback

    message, line = describe(exc, filename)
    return UserCodeError("user_exception", f"{message} while {doing}", file=filename, line=line,
                         traceback_text=user_traceback(exc, filename), original=exc)


def _compile_failure(exc, filename, stage, torch):
    """torch.compile failed: name the stage (Dynamo, AOTAutograd, Inductor) and the user's line."""
    from engine.usercode import UserCodeError, describe, user_traceback

    message, line = describe(exc, filename)
    kind = "compile_error"
    if isinstance(exc, getattr(torch._dynamo.exc, "BackendCompilerFailed", ())):
        kind = "backend_compile_error"
    return UserCodeError(kind, f"torch.compile failed in stage '{stage}': {message}", file=filename, line=line,
                         traceback_text=user_traceback(exc, filename) + "\n" + traceback.format_exc()[-4000:],
                         original=exc)


def environment(torch, device: str) -> dict:
    env = {"torch_version": torch.__version__, "python_version": platform.python_version(),
           "platform": platform.platform(), "device": device, "num_threads": torch.get_num_threads(),
           "cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "triton_version": None}
    try:
        import triton

        env["triton_version"] = triton.__version__
    except Exception:
        pass
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update(device_name=props.name, cuda_version=torch.version.cuda,
                   gpu_memory_gb=round(props.total_memory / 2**30, 1), compute_capability=f"{props.major}.{props.minor}")
    else:
        env["device_name"] = env["cpu_model"]
    return env


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _empty(path) -> bool:
    return not path or not os.path.isdir(path) or not os.listdir(path)


def main(argv: list[str]) -> int:
    job = Job(argv[0])
    job_pid = os.getpid()
    try:
        run(job)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a report; the parent classifies crashes
        if os.getpid() != job_pid:  # a copy the user's code forked (a fork bomb): only the job itself reports
            os._exit(1)
        from engine.sandbox import limit_failure

        limit = limit_failure(getattr(exc, "original", None) or exc, job.request)
        from_user = getattr(exc, "kind", None) is not None and hasattr(exc, "traceback_text")
        if limit:
            job.report = failed_report(job.request, job.stage, *limit, file=getattr(exc, "file", None),
                                       line=getattr(exc, "line", None),
                                       traceback_text=getattr(exc, "traceback_text", "") or
                                       traceback.format_exc()[-8000:], partial=job.report)
        elif from_user:
            job.report = failed_report(job.request, job.stage, exc.kind, exc.message, file=exc.file, line=exc.line,
                                       traceback_text=exc.traceback_text, partial=job.report)
        else:
            job.report = failed_report(job.request, job.stage, "internal_error", f"{type(exc).__name__}: {exc}",
                                       traceback_text=traceback.format_exc()[-8000:], partial=job.report)
        job.emit({"event": "stage", "stage": job.stage, "state": "failed", "message": job.report["failure"]["message"]})
    if os.getpid() != job_pid:
        os._exit(0)
    job.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
