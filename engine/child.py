"""The child process of one job: load the user's code, compile it with every stage recorded, benchmark, report.

Run as ``python -m engine.child JOB_DIR`` by engine.job (never imported by the parent). Reads
JOB_DIR/request.json, writes progress events as JSON lines to the fd in PT2SCOPE_EVENT_FD, saves
JOB_DIR/report.json.partial after each stage (so a crash keeps what was done) and JOB_DIR/report.json at the end.
A job with a warm compile also writes JOB_DIR/report.json.early, the finished report before it (see save_early),
and asks the parent whether to run it now or leave it for later (post_report_deferral). With
PT2SCOPE_POST_REPORT_ONLY set, the child does such a job's deferred work alone, completing the report the job left
in JOB_DIR/report.json.deferred (engine.job.run_post_report).
"""

from __future__ import annotations

import time

STARTED_UNIX = time.time()  # before anything else is imported: the child's first instant on the timeline

import faulthandler  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from contract.limits import DEFAULT_LIMITS, STACK_DUMP_FILE, STALL_STACK_FILE, USER_CODE_STACK_FILE  # noqa: E402
from contract.timeline import Recorder, merged  # noqa: E402
from engine.reportfile import empty_report, failed_report, write_report  # noqa: E402
from engine.stall import StallWatch  # noqa: E402

# The timeline phase each stage's begin..end is (engine/stages call job.begin and job.end); aot and inductor run
# inside the recorded compile (their seconds are torch's metrics, not a span of their own).
STAGE_PHASES = {
    "load": "load_user_code",
    "eager": "eager",
    "dynamo": "compile",
    "report": "collect",
    "benchmark": "benchmark",
    "profile": "profile",
    "bisect": "bisect",
    "warm_compile": "warm_compile",
}
# What runs between the stage before and this stage's first begin: the recorded compile's hooks are installed, the
# ladder is set up (the memory bandwidth measured).
PHASE_BEFORE = {"dynamo": "install_hooks", "benchmark": "ladder_setup"}
# The stages under the user-code limit (Job.user_code_starts) rather than the stall watch, and the one whose
# processes have limits of their own (engine.stages.runtime.warm_compile).
USER_CODE_STAGES = ("load", "eager")
UNWATCHED_STAGES = (*USER_CODE_STAGES, "warm_compile")


class Job:
    def __init__(self, job_dir: str, prestart: Prestart | None = None):
        """``prestart``: what this child did before its job was handed to it (a prestarted child, see wait_for_job)."""
        self.job_dir = job_dir
        with open(os.path.join(job_dir, "request.json")) as f:
            self.request = json.load(f)
        self.post_report_only = bool(os.environ.get("PT2SCOPE_POST_REPORT_ONLY"))
        if self.post_report_only:
            with open(os.path.join(job_dir, "report.json.deferred")) as f:
                self.report = json.load(f)
        else:
            self.report = empty_report(self.request)
        self.started = time.monotonic()
        self.stall = StallWatch(
            self.request.get("stall_limit_s") or DEFAULT_LIMITS.stall_limit_s,
            os.path.join(job_dir, STALL_STACK_FILE),
            self.request["filename"],
        )
        fd = os.environ.get("PT2SCOPE_EVENT_FD")
        self.events = os.fdopen(int(fd), "w", buffering=1) if fd else None
        self.stage = "load"
        self.state = SimpleNamespace()  # what each stage leaves for the later ones (engine.child.pipeline)
        self._begun: dict[str, float] = {}
        self.timeline = prestart.timeline if prestart else Recorder("child")
        self._phase_begun: dict[str, float] = {}  # stage:config -> unix start, for the timeline
        if prestart is None:
            self.timeline.add("import_engine", STARTED_UNIX, time.time())
            dump_at = os.environ.get("PT2SCOPE_STACK_DUMP_AT")
        else:
            self.timeline.add("handover", prestart.handed_over, time.time())
            dump_at = prestart.stack_dump_at
            # The ladder uses them (engine.stages.runtime.ladder).
            self.state.memory_bandwidth, self.state.compute_peaks = prestart.memory_bandwidth, prestart.compute_peaks
            self.state.warm_forks = prestart.warm_forks
        self.prestarted = prestart is not None
        self.dump_at = float(dump_at) if dump_at else None
        self.user_code_dump = None  # while the user's own code runs under its limit (user_code_starts)
        if self.dump_at:  # every thread's stack, just before the parent's time limit: the timeout then names the line
            self.stack_dump = open(os.path.join(job_dir, STACK_DUMP_FILE), "w")
            self._dump_stack_at(self.dump_at)

    def _dump_stack_at(self, unix_s: float) -> None:
        self._arm_watchdog(max(0.1, unix_s - time.time()), exit=False, file=self.stack_dump)

    @staticmethod
    def _arm_watchdog(seconds: float, *, exit: bool, file) -> None:
        """faulthandler's watchdog, armed anew; never raises: it starts a thread, which a job at its process limit
        (a fork bomb) cannot, and the failure report must still be written. Without it the job's own limit holds."""
        try:
            faulthandler.dump_traceback_later(seconds, exit=exit, file=file)
        except (RuntimeError, OSError):
            faulthandler.cancel_dump_traceback_later()

    def emit(self, event: dict) -> None:
        event.setdefault("elapsed_s", round(time.monotonic() - self.started, 3))
        if self.events:
            try:
                self.events.write(json.dumps(event, default=str) + "\n")
            except OSError:  # the parent went away: finish the report anyway
                self.events = None

    def begin(self, stage: str, **extra) -> float:
        """Announce a stage (once: a stage begun already, such as load, keeps its start) and return its start."""
        self.stall.mark()
        if stage in UNWATCHED_STAGES:
            self.stall.pause()
        else:
            self.stall.watch()
        key = f"{stage}:{extra.get('config')}"
        if self.stage == stage and key in self._begun:
            return self._begun[key]
        self.stage = stage
        now = time.time()
        if stage in PHASE_BEFORE and not any(k.startswith(f"{stage}:") for k in self._begun):
            self.timeline.add(PHASE_BEFORE[stage], self._last_phase_end(), now)
        if stage == "dynamo":
            _record_compile_workers(self)
        self._phase_begun[key] = now
        self._begun[key] = time.monotonic()
        self.emit({"event": "stage", "stage": stage, "state": "started", **extra})
        return self._begun[key]

    def user_code_starts(self) -> None:
        """The user's own code runs from here until this stage ends (loading the file, the eager run): it has a
        wall-clock limit of its own, user_code_time_limit_s, so an endless loop ends in seconds rather than at the
        job's limit. At the limit faulthandler's watchdog thread (no GIL needed, so a loop in C code ends too) dumps
        every stack into USER_CODE_STACK_FILE and ends this process; the parent then says which limit and line. Not
        a security boundary (the user's code could cancel it): the job's own time limit is."""
        limit = self.request["user_code_time_limit_s"]
        if self.dump_at is None or time.time() + limit < self.dump_at:
            self.user_code_dump = open(os.path.join(self.job_dir, USER_CODE_STACK_FILE), "w")
            self._arm_watchdog(limit, exit=True, file=self.user_code_dump)

    def user_code_ends(self) -> None:
        """The user's code has returned (or raised): only the job's own limit is left."""
        if self.user_code_dump is not None:
            self.user_code_dump = None
            if self.dump_at:
                self._dump_stack_at(self.dump_at)
            else:
                faulthandler.cancel_dump_traceback_later()

    def end(self, stage: str, t0: float, seconds: float | None = None, **extra) -> None:
        self.user_code_ends()
        begun = self._phase_begun.pop(f"{stage}:{extra.get('config')}", None)
        if begun is not None and stage in STAGE_PHASES:
            # Phases follow each other: one begun before the last ended (load, begun before the imports) starts
            # where that one ended.
            self.timeline.add(
                STAGE_PHASES[stage], max(begun, self._last_phase_end()), time.time(), config=extra.get("config")
            )
        seconds = round(time.monotonic() - t0 if seconds is None else seconds, 4)
        entry = {"name": stage, "seconds": seconds, **extra}
        quiet = self.stall.take_longest()
        if self.stall.watching and stage not in UNWATCHED_STAGES:
            entry["longest_quiet_s"] = round(quiet, 2)
        self.report["stages"].append(entry)
        # Written before the event says so: the parent hands it to the sink when it reads the event (engine.sink).
        self._write("report.json.partial")
        self.emit({"event": "stage", "stage": stage, "state": "finished", "seconds": seconds, **extra})

    def post_report_deferral(self) -> str | None:
        """Asked once the early report is written and the warm compile announced: why the parent leaves the work
        after the report for later (other jobs wait), or None to run it now (also when no parent asks)."""
        fd = os.environ.get("PT2SCOPE_POST_REPORT_FD")
        if not fd:
            return None
        answer = b""
        with os.fdopen(int(fd), "rb") as pipe:
            while not answer.endswith(b"\n"):
                chunk = pipe.read1(4096)
                if not chunk:
                    break
                answer += chunk
        verb, _, reason = answer.decode("utf-8", "replace").strip().partition(" ")
        return (reason or "other jobs were waiting") if verb == "defer" else None

    def save(self) -> None:
        """Write the final report (its own writing ends at report.json's modification time, which the parent reads
        for the timeline)."""
        self._summarize(self.report)
        self._write("report.json")

    def save_early(self) -> None:
        """Write the report as a finished job's before the warm compile (runtime.compile_cache shows it pending),
        then say so by the warm_compile stage's start: the parent hands it to the worker, which stores it while the
        warm compile runs, so the user reads every other figure some 10 s sooner on the CPU (docs/benchmarks.md)."""
        start = time.time()
        early = {**self.report, "errors": list(self.report["errors"])}  # the job's own report stays as it is
        finish(self, early)
        self._summarize(early)
        self._write("report.json.early", early)
        self.timeline.add("write_report", start, time.time())

    def _summarize(self, report: dict) -> None:
        from contract.counts import summarize

        report["summary"] = summarize(report)  # the one owner of every count, failed jobs too
        ctx = getattr(self.state, "ctx", None)
        if ctx is not None and ctx.tap is not None:
            report["logs"] = ctx.tap.summary()  # what the log tap switched on, read, and could not read

    def _write(self, name: str, report: dict | None = None) -> None:
        report = self.report if report is None else report
        report["timeline"] = merged(None, STARTED_UNIX, "job_start", self.timeline, prestarted=self.prestarted)
        write_report(report, os.path.join(self.job_dir, name))

    def _last_phase_end(self) -> float:
        return max((p["end_s"] for p in self.timeline.phases if p["depth"] == 0), default=STARTED_UNIX)


def pipeline() -> list:
    """The registered stages, in order. Imported here, in the child only (they import torch), after the load stage
    has begun: torch's import time is part of it."""
    from engine.stages.capture import CaptureStage
    from engine.stages.runtime.bisect import BisectStage
    from engine.stages.runtime.ladder import LadderStage, ReferenceStage
    from engine.stages.runtime.warm_compile import WarmCompileStage
    from engine.usercode import LoadStage

    return [LoadStage(), ReferenceStage(), CaptureStage(), LadderStage(), BisectStage(), WarmCompileStage()]


def post_report_pipeline(job: Job) -> list:
    """A job's deferred post-report work alone: the state the warm compile reads, set up as the job had it (the
    recorded config from the request; what was unavailable and the errors so far carried on), then the stage. Torch
    is imported once, for the fork server, so that each warm process skips its own import (on an H100 the two took
    31.6-38.4 s as new interpreters, where a job's forked ones took 2-3 s each)."""
    with job.timeline.span("import_torch"):
        job.state.warm_forks = _import_compiler(job.request["device"])
    from contract.vocab import capture_config
    from engine.stages.base import Context
    from engine.stages.runtime.warm_compile import WarmCompileStage

    request, report = job.request, job.report
    job.state.ctx = Context(
        user_file=request["filename"],
        device=request["device"],
        train=bool(request.get("train")),
        tap=None,
        emit=job.emit,
    )
    job.state.ctx.unavailable = list(report["unavailable"])
    job.state.target = capture_config(request["configs"])
    report["stages"] = [s for s in report["stages"] if s["name"] != "warm_compile"]  # its deferral, replaced
    return [WarmCompileStage()]


def run(job: Job) -> None:
    if job.post_report_only:
        job.stage = "warm_compile"
        stages = post_report_pipeline(job)
    else:
        job.begin("load")
        with job.timeline.span("import_torch"):  # the stages import torch (a prestarted child did: wait_for_job)
            # One fork server for the warm compile, made before anything ran (a fork made later would copy the
            # threads and locks of what ran); a prestarted child made its own in wait_for_job.
            if not job.prestarted and _warm_compiles(job.request):
                job.state.warm_forks = _import_compiler(job.request["device"])
            stages = pipeline()
    for stage in stages:
        stage.run(job)
    finish(job, job.report)


def finish(job: Job, report: dict) -> None:
    """Complete ``report`` as a finished job's: what was unavailable, the non-fatal errors, status ok."""
    ctx = job.state.ctx
    report["unavailable"] = ctx.unavailable
    report["errors"] = report["errors"] + ctx.errors
    report["status"] = "ok"


def _record_compile_workers(job: Job) -> None:
    """Put the start-up of Inductor's compile worker pool on the timeline: from the pool's creation to its first
    answer (a compile that needs the pool waits for it). Private torch API: guarded."""
    ctx = getattr(job.state, "ctx", None)
    if ctx is None:
        return
    with ctx.guard("timeline.compile_workers"):
        from torch._inductor.async_compile import AsyncCompile

        create_pool, use_pool = AsyncCompile.process_pool, AsyncCompile.use_process_pool.__func__
        created = []

        def process_pool():
            if not created:
                created.append(time.time())
            return create_pool()

        # torch's atexit and after-fork handlers call process_pool.cache_clear() (it is an lru_cache): keep it.
        process_pool.cache_clear = getattr(create_pool, "cache_clear", lambda: None)

        def use_process_pool(cls):
            ready = use_pool(cls)
            future = cls._ready_future
            if len(created) == 1 and future is not None:
                created.append(future)
                future.add_done_callback(
                    lambda _: job.timeline.add("compile_workers_start", created[0], time.time(), depth=1)
                )
            return ready

        AsyncCompile.process_pool = staticmethod(process_pool)
        AsyncCompile.use_process_pool = classmethod(use_process_pool)


@dataclass
class Prestart:
    """What a prestarted child did before its job arrived, and what the go told it."""

    timeline: (
        Recorder  # its phases so far, those before the hand-over marked as the prestart's (the report's `prestart`)
    )
    handed_over: float  # unix seconds: when this child turned to its job
    stack_dump_at: str  # unix seconds, as PT2SCOPE_STACK_DUMP_AT: counted from the hand-over
    # engine.stages.runtime.profiling's memory_bandwidth and compute_peaks, measured before the job; None: not
    # (GPU) or it failed
    memory_bandwidth: dict | None
    compute_peaks: dict | None
    warm_forks: object  # engine.warm.ForkServer, or None


def wait_for_job(go_fd: int, device: str) -> Prestart | None:
    """A child prestarted for its job (engine.job.PrestartedChild): import what every job needs (our code and
    torch's, never a user's), measure the CPU's memory bandwidth, then wait until the parent has written the job into
    this sandbox's folder and says go. None: the parent discarded this child without a job."""
    timeline = Recorder("child")
    timeline.add("import_engine", STARTED_UNIX, time.time())
    with timeline.span("import_torch"):
        warm_forks = _import_compiler(device)
        pipeline()  # the engine's stages
    bandwidth = peaks = None  # the ladder then measures them itself, at hand-over, as without a prestart
    # A GPU job's next child starts beside that job (workers.tasks.Prestarter.job_started): measured now, the copies
    # would share the GPU with the job's timed steps and each disturb the other. A CPU child starts after its job.
    if device != "cuda":
        with timeline.span("ladder_setup"):
            try:
                from engine.stages.runtime.profiling import compute_peaks, memory_bandwidth

                bandwidth = {**memory_bandwidth(device), "measured_in_prestart": True}
                peaks = {**compute_peaks(device), "measured_in_prestart": True}
            except Exception:  # noqa: BLE001 - measured by the ladder then
                pass
    ready = time.time()
    go = b""
    while not go.endswith(b"\n"):
        chunk = os.read(go_fd, 128)  # "<hand-over unix s> <stack dump unix s>\n", or nothing: no job
        if not chunk:
            break
        go += chunk
    os.close(go_fd)
    try:
        handed, dump_at = go.split()
        handed_over = min(float(handed), time.time())
    except ValueError:
        return None
    if handed_over > ready:
        timeline.add("wait_for_job", ready, handed_over)
    timeline.mark_prestart(
        until=handed_over
    )  # a job that came while this child was still importing waited for the rest
    return Prestart(timeline, max(ready, handed_over), dump_at.decode(), bandwidth, peaks, warm_forks)


def _warm_compiles(request: dict) -> bool:
    """The job's warm compile will run (engine.stages.runtime.warm_compile): only then are Inductor and the fork
    server its processes start from worth their cost up front. An eager or aot_eager job imports neither: the
    eager-only seed job's child took 4.49-4.68 s against 5.23-5.66 s before, shorter in each of 4 interleaved pairs
    (2 vCPUs, load 1.0; Dynamo still imports what it uses of Inductor on the first compile)."""
    from contract.vocab import capture_config

    return capture_config(request["configs"]).backend == "inductor" and request.get("warm_compile", True)


def _import_compiler(device: str):
    """Import what torch.compile imports on its first use (Dynamo, Inductor), then start the warm processes' fork
    server (engine.warm.ForkServer) from this state: nothing run yet (the CUDA driver started before a fork would be
    unusable in it). Returns the server; None where it cannot start (the job's process limit, the driver started):
    the warm processes then start as fresh interpreters."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401

    from engine.warm import ForkServer

    try:
        return ForkServer(device)
    except OSError:
        return None


def main(argv: list[str]) -> int:
    prestart = None
    if os.environ.get("PT2SCOPE_GO_FD"):
        prestart = wait_for_job(int(os.environ["PT2SCOPE_GO_FD"]), os.environ.get("PT2SCOPE_PRESTART_DEVICE", "cpu"))
        if prestart is None:
            return 0
    job = Job(argv[0], prestart)
    job_pid = os.getpid()
    try:
        run(job)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a report; the parent classifies crashes
        if os.getpid() != job_pid:  # a copy the user's code forked (a fork bomb): only the job itself reports
            os._exit(1)
        job.user_code_ends()
        job.report = _failure_report(job, exc)
        # Kind and message also by event: the parent still knows them if the report cannot be written (a full
        # job folder).
        job.emit(
            {
                "event": "stage",
                "stage": job.stage,
                "state": "failed",
                "kind": job.report["failure"]["kind"],
                "message": job.report["failure"]["message"],
            }
        )
    if os.getpid() != job_pid:
        os._exit(0)
    job.save()
    _end_compile_workers()
    return 0


def _end_compile_workers() -> None:
    """End Inductor's compile-worker pool now that the report is written: nothing is left for it to compile. Left to
    the interpreter's exit, torch asks the pool's sidecar to shut down and waits while it joins workers that may
    still be starting: a deferred job's child (its compile soon after the pool's creation) took 5.0-5.5 s to exit on
    an H100 (bench/worker_time.py, process_exit), the worker held all that time. Killing the sidecar is instant
    (its workers watch it and exit; the job's group ends any straggler). Private torch API: without it the child
    exits as before (the report is written by then: nothing to say there). Nothing where Inductor's compile was
    never imported."""
    module = sys.modules.get("torch._inductor.async_compile")
    if module is None:
        return
    try:
        from torch._inductor.compile_worker.subproc_pool import SubprocPool

        for pool in list(getattr(module, "_pool_set", ())):
            if isinstance(pool, SubprocPool) and pool.running:
                with pool.write_lock:
                    pool.running = False  # torch's own shutdown at exit then returns at once
                if pool.timer:
                    pool.timer.quit()
                pool.process.kill()
                pool.process.wait()
    except Exception:  # noqa: BLE001 - a torch whose pool differs: its own shutdown at exit ends it
        pass


def _failure_report(job: Job, exc: BaseException) -> dict:
    """The report of a job that raised: a limit it reached, the user's error (at the user's line), or ours."""
    from engine.sandbox import limit_failure

    limit = limit_failure(getattr(exc, "original", None) or exc, job.request)
    if limit:
        return failed_report(
            job.request,
            job.stage,
            *limit,
            file=getattr(exc, "file", None),
            line=getattr(exc, "line", None),
            traceback_text=getattr(exc, "traceback_text", "") or traceback.format_exc()[-8000:],
            partial=job.report,
        )
    if getattr(exc, "kind", None) is not None and hasattr(exc, "traceback_text"):  # the user's (UserCodeError)
        return failed_report(
            job.request,
            job.stage,
            exc.kind,
            exc.message,
            file=exc.file,
            line=exc.line,
            traceback_text=exc.traceback_text,
            partial=job.report,
        )
    return failed_report(
        job.request,
        job.stage,
        "internal_error",
        f"{type(exc).__name__}: {exc}",
        traceback_text=traceback.format_exc()[-8000:],
        partial=job.report,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
