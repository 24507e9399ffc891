"""Run one job in a child process and return its report, whatever happens to the child.

This is the boundary between trusted code (the CLI, the workers) and the user's code: the parent never imports
torch or the user's module. The child (``python -m engine.child JOB_DIR``) reads JOB_DIR/request.json, writes
progress events as JSON lines to an inherited pipe and the report to JOB_DIR/report.json. A crash, a hang past
a limit becomes a failed report naming the stage and the limit, never a hung parent. The child runs sandboxed
(engine.sandbox builds its whole launch command), and everything it leaves (report, output) is read back as
untrusted data.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import select
import signal
import stat
import subprocess
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, fields, replace

from contract.limits import (
    DEFAULT_LIMITS,
    STACK_DUMP_FILE,
    STACK_DUMP_LEAD_S,
    STALL_STACK_FILE,
    USER_CODE_STACK_FILE,
    JobLimits,
)
from contract.report import ReportError, checked_report
from contract.timeline import Recorder, merged
from contract.vocab import MEASURING_PROCESSES, ConfigError, new_error_id, parse_configs
from engine import events, sandbox, seccomp
from engine.jobgroup import (
    FORK_BOMB_S,
    FORK_BOMB_SHARE,
    FORK_HOLD_S,
    FORK_HOLD_SHARE,
    FORK_RATE_PER_S,
    FORK_REFUSALS_S,
    REFUSAL_GAP_S,
    JobGroup,
)
from engine.reportfile import failed_report
from engine.sink import Deferral, ReportSink

PROJECT_ROOT = sandbox.PROJECT_ROOT
USER_OUTPUT_LIMIT = 64 * 1024  # bytes of the user's stdout/stderr kept in the report (the tail)
OUTPUT_CHECK_INTERVAL_S = 0.25
FULL_SPACE_BYTES = 1024 * 1024  # a tmpfs job folder with less free is full (a report needs more)
EXIT_GRACE_S = 10.0  # after the child closed its event pipe, how long it may take to exit before it is killed
STACK_FRAME = re.compile(r'File "([^"\n]*)", line (\d+)')
# CPU seconds a prestarted child may spend before its job is handed over: importing torch, torch._dynamo,
# Inductor and the engine's stages (measured 2.5-4.5 s of CPU on the 2-core machine) and the memory bandwidth
# copies (under 1 s), with room for a slower machine. RLIMIT_CPU is set when the sandbox starts, so such a child
# runs under the job's CPU time limit plus this (docs/security.md); every other limit is the job's own.
PRESTART_CPU_S = 20
# Where the job has a cgroup, RLIMIT_NPROC (per uid, checked before the cgroup) sits this far above pids.max: the
# kernel then refuses a fork at the cgroup's limit and counts it, which is how a fork bomb is told from a job that
# hit its limit once (_Pump._forks_keep_being_refused) and how a failure is named `processes`.
NPROC_ABOVE_PIDS_MAX = 8

log = logging.getLogger(__name__)


@dataclass
class JobRequest:
    code: str
    filename: str = "model.py"
    device: str = "cpu"
    train: bool | None = None  # None: the user's file decides (``train = True`` at top level)
    configs: list[str] = field(default_factory=list)  # empty: the device's default ladder
    # Limits: contract.limits.JobLimits says what each one bounds; docs/security.md why each default.
    time_limit_s: float = DEFAULT_LIMITS.time_limit_s
    user_code_time_limit_s: float = DEFAULT_LIMITS.user_code_time_limit_s
    stall_limit_s: float = DEFAULT_LIMITS.stall_limit_s
    memory_limit_mb: int | None = DEFAULT_LIMITS.memory_limit_mb
    cpu_time_limit_s: float = DEFAULT_LIMITS.cpu_time_limit_s
    process_limit: int = DEFAULT_LIMITS.process_limit
    open_files_limit: int = DEFAULT_LIMITS.open_files_limit
    file_size_limit_mb: int = DEFAULT_LIMITS.file_size_limit_mb
    output_limit_mb: int = DEFAULT_LIMITS.output_limit_mb
    cpu_cores: float | None = DEFAULT_LIMITS.cpu_cores
    # False: no warm-compile (measuring) processes after an Inductor rung (engine/stages/runtime/warm_compile.py),
    # about half of such a job; its cold-vs-warm figures then say "not requested".
    warm_compile: bool = True
    # Fresh processes each figure on the Runtime tab is taken across (runtime.processes): the warm compile's two,
    # and past two, that many more that only time (pyperf's --processes). Where a step's speed is a property of the
    # process (a host-bound GPU step), two processes' median is decided by which one happened to be slow.
    measuring_processes: int = MEASURING_PROCESSES[0]

    def validated(self) -> JobRequest:
        """Normalise and check the request before anything is started (raises contract.vocab.ConfigError)."""
        self.configs = parse_configs(self.configs, self.device)
        self.filename = os.path.basename(self.filename) or "model.py"
        if not self.filename.endswith(".py"):
            self.filename += ".py"
        if self.device == "cuda":
            self.memory_limit_mb = None
        self.file_size_limit_mb = min(self.file_size_limit_mb, self.output_limit_mb)  # no file outgrows the whole
        fewest, most = MEASURING_PROCESSES
        if not fewest <= self.measuring_processes <= most:
            raise ConfigError(
                f"measuring processes must be {fewest} to {most} (a speedup is decided across at least {fewest}; "
                f"each one more costs a fresh process's import and warm compile), not {self.measuring_processes}"
            )
        return self


def run_job(
    request: JobRequest,
    job_dir: str | None = None,
    sink: ReportSink | None = None,
    isolation: sandbox.Isolation | None = None,
    *,
    scratch: bool = False,
    prestarted: PrestartedChild | None = None,
) -> dict:
    """Run ``request`` in a fresh child process; hand its report to ``sink`` as it is made (engine.sink: the
    progress events, the report once the stages are collected, before the warm compile and at the end) and return
    the final report (status "ok" or "failed") as well.

    If ``sink.event`` or ``sink.partial`` raises, the job is killed at once and the report names the failure (kind
    "internal_error", with an error id logged with the traceback). ``isolation`` defaults to the environment's
    (PT2SCOPE_ISOLATION, default bubblewrap). ``scratch``: the folder is the job's alone and is removed when it
    ends; it is then a size-limited tmpfs where the worker may mount one (a root worker). ``prestarted``: a child
    prestarted for this job (PrestartedChild); the job runs in it (and in its folder, ``prestarted.job_dir``,
    not ``job_dir``) if it fits, else it is discarded first.

    Whatever happens, when ``sink.final`` is called no process of the job runs any more, its descriptors are
    closed, its cgroup and uid are given back (and with ``scratch`` its folder is gone).
    """
    started_unix = time.time()  # the report's timeline starts here (origin job_start); a worker re-bases it
    request.validated()
    sink = sink or ReportSink()
    isolation = isolation or sandbox.Isolation.from_env()
    if prestarted is not None and not prestarted.fits(request, isolation, scratch):
        prestarted.discard()
        prestarted = None
    if prestarted is not None:
        with prestarted.cleanup:
            report = _run(request, prestarted.held, sink, isolation, started_unix, prestarted)
    else:
        job_dir = os.path.abspath(job_dir or tempfile.mkdtemp(prefix="pt2scope-job-"))
        with ExitStack() as cleanup:
            held = _hold(request, job_dir, isolation, scratch, cleanup)
            report = _run(request, held, sink, isolation, started_unix)
    sink.final(report)
    return report


@dataclass
class _Held:
    """What a job's child runs in, held until the job ends: its folder, uid, cgroup, whether the folder is a
    size-limited tmpfs (job_space), and what gives them back (cleanup)."""

    job_dir: str
    uid: int | None
    group: JobGroup
    job_space: bool
    cleanup: ExitStack


def _hold(request: JobRequest, job_dir: str, isolation: sandbox.Isolation, scratch: bool, cleanup: ExitStack) -> _Held:
    """What a job's child is started in: its folder (a tmpfs with ``scratch``), a uid lease and a cgroup, each
    given back by ``cleanup``."""
    if scratch:
        cleanup.callback(sandbox.remove_job_dir, job_dir)
    job_space = scratch and sandbox.mount_job_space(job_dir, request.output_limit_mb * 1024 * 1024)
    lease = sandbox.UidLease.take() if isolation.mode == "bubblewrap" else sandbox.UidLease(None, None)
    cleanup.callback(lease.release)  # after the group: callbacks run last-registered first
    group = JobGroup(
        f"pt2scope-job-{os.getpid()}-{secrets.token_hex(4)}",
        None if request.memory_limit_mb is None else request.memory_limit_mb * 1024 * 1024,
        request.process_limit,
        request.cpu_cores,
    )
    cleanup.callback(group.close)
    return _Held(job_dir, lease.uid, group, job_space, cleanup)


def launch_signature(request: JobRequest, isolation: sandbox.Isolation, scratch: bool) -> dict:
    """Everything a job's sandboxed child is started with that is not the job itself: a prestarted child
    (PrestartedChild) serves a job only when this is the same for the job as it was at the child's start. Whatever
    else a launch comes to bind or set (from the settings or the files present at start) belongs here too."""
    request = replace(request).validated()  # as launched: a GPU job has no memory limit, whatever was asked
    return {
        "device": request.device,
        "limits": {f.name: getattr(request, f.name) for f in fields(JobLimits)},
        "isolation": isolation,
        "scratch": scratch,
        # bound file by file when the sandbox starts (engine.sandbox): one published since is not in the child
        "shared_pch": sandbox._shared_pch_files(isolation) if isolation.mode == "bubblewrap" else [],
        # the trusted kernel cache's folder, bound file by file likewise
        "shared_kernel_cache": sandbox.kernel_store_id(isolation) if isolation.mode == "bubblewrap" else None,
    }


@dataclass
class _Child:
    """A started child: its process, the read ends of its event and status pipes, the parent's own handles on its
    output, when it was spawned, the write end of the pipe that tells it whether to run the work after its report
    now (``decide_post_report``) and (a prestarted child) that of the pipe that says go."""

    proc: subprocess.Popen
    read_fd: int
    status_read: int | None
    out: object
    err: object
    spawned_unix: float
    decide_fd: int | None = None
    go_fd: int | None = None

    def close_go(self) -> None:
        if self.go_fd is not None:
            os.close(self.go_fd)
            self.go_fd = None

    def decide_post_report(self, deferral: Deferral | None) -> None:
        """Run the work after the report now (None) or leave it for later, and why (engine.child.Job
        .post_report_deferral reads it). Closing the pipe undecided means run it (a child whose early report
        was never handed over)."""
        if self.decide_fd is None:
            return
        line = "run\n" if deferral is None else f"defer {' '.join(deferral.reason.split())[:1000]}\n"
        try:
            os.write(self.decide_fd, line.encode())
        except OSError:  # the child is gone
            pass
        finally:
            os.close(self.decide_fd)
            self.decide_fd = None


def _spawn(
    request: JobRequest,
    job_dir: str,
    isolation: sandbox.Isolation,
    uid: int | None,
    group: JobGroup,
    cleanup: ExitStack,
    *,
    prestart: bool = False,
    post_report_only: bool = False,
) -> _Child:
    """Start the sandboxed child on a prepared job folder (raises OSError); ``cleanup`` closes what it opened.
    ``prestart``: the child imports what every job needs, then waits for go (engine.child.wait_for_job).
    ``post_report_only``: the child does a job's deferred post-report work alone (run_post_report)."""
    read_fd, write_fd = os.pipe()
    cleanup.callback(os.close, read_fd)
    sandboxed = isolation.mode == "bubblewrap"
    status_read, status_write = os.pipe() if sandboxed else (None, None)
    if sandboxed:
        cleanup.callback(os.close, status_read)
    go_read, go_write = os.pipe() if prestart else (None, None)
    decide_read, decide_write = os.pipe()
    seccomp_fd = seccomp.filter_fd() if sandboxed else None
    out, err = _output_files(job_dir, cleanup)
    env = _child_env(job_dir, write_fd, request, go_read, decide_read, post_report_only)
    if group.enforced:  # the cgroup's pids.max refuses first, so the kernel counts each refusal (pids.events)
        request = replace(request, process_limit=request.process_limit + NPROC_ABOVE_PIDS_MAX)
    spawned_unix = time.time()
    inherited = (write_fd, seccomp_fd, status_write, go_read, decide_read)
    try:
        proc = subprocess.Popen(
            sandbox.child_command(isolation, request, job_dir, env, uid, seccomp_fd, status_write),
            cwd=job_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            pass_fds=tuple(fd for fd in inherited if fd is not None),
            start_new_session=True,  # own process group: a kill reaches every descendant
            preexec_fn=group.join_in_child if group.enforced else None,
        )
    except OSError:
        for fd in (go_write, decide_write):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in inherited:
            if fd is not None:
                os.close(fd)
    group.started(proc.pid)
    child = _Child(proc, read_fd, status_read, out, err, spawned_unix, decide_write, go_write)
    cleanup.callback(child.close_go)
    cleanup.callback(child.decide_post_report, None)
    return child


def _output_files(job_dir: str, cleanup: ExitStack) -> tuple:
    """The child's stdout and stderr files. The parent keeps its own handles on them: the child may rename or
    replace the names, but what the parent reads back is always the file it created (never a link the job
    planted)."""
    return tuple(
        cleanup.enter_context(open(os.path.join(job_dir, f"{name}.txt"), "w+b")) for name in ("stdout", "stderr")
    )


class PrestartedChild:
    """The sandboxed child of the NEXT job, started before that job exists: its sandbox is up (a uid lease, a
    cgroup, a folder of its own, the seccomp filter) and it has imported torch, Dynamo, Inductor and the engine's
    stages (our code only) and measured the CPU's memory bandwidth, while the worker was busy with the job before
    (a GPU job's next child: beside it, workers.tasks.Prestarter.job_started).

    Still one sandbox per job: it serves exactly one job (``run_job(..., prestarted=...)`` writes the job into its
    folder and says go) and ends with it; nothing of any user has run in it before. It fits only a job with the
    same launch (launch_signature: device, limits, isolation, folder kind, shared headers); ``discard`` ends it.
    Its CPU time limit is the job's plus PRESTART_CPU_S (the imports); the wall-clock limit counts from the go.
    """

    def __init__(
        self, template: JobRequest, job_dir: str, isolation: sandbox.Isolation, *, scratch: bool = False
    ) -> None:
        self.template = replace(template).validated()
        self.job_dir = os.path.abspath(job_dir)
        self.signature = launch_signature(self.template, isolation, scratch)  # before the binds are made
        self.started_unix = time.time()
        self.cleanup = ExitStack()
        try:
            self.held = _hold(self.template, self.job_dir, isolation, scratch, self.cleanup)
            sandbox.prepare_job_dir(self.job_dir, isolation, self.held.uid)
            spawned = replace(self.template, cpu_time_limit_s=self.template.cpu_time_limit_s + PRESTART_CPU_S)
            self.child = _spawn(
                spawned, self.job_dir, isolation, self.held.uid, self.held.group, self.cleanup, prestart=True
            )
            self.cleanup.callback(self._end)
        except BaseException:
            self.cleanup.close()
            raise

    def fits(self, request: JobRequest, isolation: sandbox.Isolation, scratch: bool = False) -> bool:
        return (
            self.child.go_fd is not None
            and self.child.proc.poll() is None
            and launch_signature(request, isolation, scratch) == self.signature
        )

    def hand_over(self, request: JobRequest) -> float:
        """Write the job into the folder and say go, with the time and when to dump the stack (just before the
        time limit, which counts from now); returns the time."""
        _write_job(self.job_dir, request)
        now = time.time()
        os.write(self.child.go_fd, f"{now:.6f} {_stack_dump_at(request, now):.3f}\n".encode())
        self.child.close_go()
        return now

    def discard(self) -> None:
        """End the waiting child (a closed go pipe ends it; the kill makes sure) and give back its uid, cgroup and
        folder."""
        self.cleanup.close()
        sandbox.remove_job_dir(self.job_dir)

    def _end(self) -> None:
        self.child.close_go()
        if self.child.proc.returncode is None:  # not reaped yet: its pid cannot be another process's
            _kill_group(self.child.proc.pid)
            self.held.group.kill_all()
            self.child.proc.wait()


def _run(
    request: JobRequest,
    held: _Held,
    sink: ReportSink,
    isolation: sandbox.Isolation,
    started_unix: float,
    prestarted: PrestartedChild | None = None,
    *,
    post_report_of: str | None = None,
    should_yield=None,
) -> dict:
    """``post_report_of``: a folder a job kept for its deferred post-report work (_keep_for_later); the child does
    that work alone on a copy of it, stopped (killed) as soon as ``should_yield()`` is true."""
    job_dir, group = held.job_dir, held.group
    if prestarted is None:
        _prepare(request, held, isolation, post_report_of)
    try:
        child, started, handed_unix = _start_child(
            request, job_dir, isolation, held.uid, group, held.cleanup, prestarted, post_report_of is not None
        )
    except OSError as exc:  # a prestarted child may have died between the fit check and the go
        return failed_report(asdict(request), "load", "internal_error", f"the job could not start: {exc}")
    proc, read_fd, status_read, out, err = child.proc, child.read_fd, child.status_read, child.out, child.err

    def complete(report: dict, report_path: str, exited_unix: float | None) -> dict:
        """What the parent adds to the child's report: the user's output, the isolation, the job's timeline."""
        report["user_output"] = _user_output(out, err)
        report["isolation"] = sandbox.describe(
            isolation,
            request,
            group=group.describe(),
            cpu=group.describe_cpu(),
            cpu_cores=group.cpu_cores,
            job_space=held.job_space,
            seccomp=isolation.mode == "bubblewrap" and seccomp.program() is not None,
        )
        report.setdefault("runtime", {})["job_seconds"] = round(time.monotonic() - started, 3)
        report["timeline"] = _job_timeline(
            report.get("timeline"), report_path, started_unix, child.spawned_unix, exited_unix, prestarted, handed_unix
        )
        return report

    early = _EarlyHandOver(sink, child, request, job_dir, complete)
    pump = _Pump(proc, read_fd, status_read, request, job_dir, started, sink, group, watch_space=not held.job_space)
    if post_report_of is None:
        pump.on_early_report = early
    pump.should_yield = should_yield
    returncode, exited_unix = _pump_until_exit(pump, proc, group)
    report_path = os.path.join(job_dir, "report.json")
    report = _final_report(request, job_dir, report_path, pump, group, isolation, returncode, err)
    report = complete(report, report_path, exited_unix)
    if early.deferral is not None and is_deferred(report):
        _keep_for_later(report, job_dir, early.deferral)
    return report


def _prepare(request: JobRequest, held: _Held, isolation: sandbox.Isolation, post_report_of: str | None) -> None:
    """The job's folder for a new child: its own folders, the files a job kept for its deferred work (a copy,
    owned by this job's uid), then the job's request and file as the parent has them."""
    sandbox.prepare_job_dir(held.job_dir, isolation, held.uid)
    if post_report_of is not None:
        sandbox.copy_job_files(post_report_of, held.job_dir, held.uid, skip=CHILD_WRITES_ANEW)
    _write_job(held.job_dir, request)


class _EarlyHandOver:
    """What the pump calls once, when the warm compile starts: ask the sink whether to leave the work after the
    report for later (``deferral``) and tell the child, then hand the report before it (report.json.early) over.
    Asked first: the child waits for the answer, never for the early report's store."""

    def __init__(self, sink: ReportSink, child: _Child, request: JobRequest, job_dir: str, complete) -> None:
        self.sink, self.child, self.request, self.job_dir, self.complete = sink, child, request, job_dir, complete
        self.deferral: Deferral | None = None

    def __call__(self) -> None:
        try:
            self.deferral = self.sink.defer_post_report()
        except Exception:  # the work then runs now, as it always could
            log.exception("error %s: could not tell whether to defer the warm compile", new_error_id())
        self.child.decide_post_report(self.deferral)
        early_path = os.path.join(self.job_dir, "report.json.early")
        try:
            early = _read_child_report(early_path, self.request)
            if early is not None and early.get("status") == "ok" and not early.get("failure"):
                self.sink.early(self.complete(early, early_path, None))
        except Exception:  # the final report is still handed over: only the early look is lost
            log.exception("error %s: the report before the warm compile could not be handed over", new_error_id())


# What a child writes itself in its folder, never carried into the folder of a job's deferred post-report work.
CHILD_WRITES_ANEW = frozenset(
    {"report.json", "report.json.partial", "report.json.early", "stdout.txt", "stderr.txt", STACK_DUMP_FILE}
    | {USER_CODE_STACK_FILE, STALL_STACK_FILE}
)
DEFERRED_REPORT = "report.json.deferred"  # in a kept folder: the job's report, which the post-report child completes


def is_deferred(report: dict) -> bool:
    warm = ((report.get("runtime") or {}).get("compile_cache") or {}).get("warm") or {}
    return report.get("status") == "ok" and warm.get("status") == "deferred"


def _keep_for_later(report: dict, job_dir: str, deferral: Deferral) -> None:
    """Copy the job's folder (its kernel and graph caches, as the warm compile needs them) to the deferral's, with
    the report the post-report child completes; where it cannot be kept, the deferred entries say so instead."""
    try:
        sandbox.copy_job_files(job_dir, deferral.keep_dir, None, skip=CHILD_WRITES_ANEW)
        with open(os.path.join(deferral.keep_dir, DEFERRED_REPORT), "w") as f:
            json.dump(report, f)
    except OSError as exc:
        sandbox.remove_job_dir(deferral.keep_dir)
        skipped = {"status": "skipped", "reason": f"the job's folder could not be kept for it ({exc.strerror or exc})"}
        runtime = report["runtime"]
        for label in ("warmup", "warm"):
            runtime["compile_cache"][label] = dict(skipped)
        if (runtime.get("processes") or {}).get("status") == "deferred":
            runtime["processes"].update(skipped)


def run_post_report(
    request: JobRequest,
    kept_dir: str,
    job_dir: str,
    sink: ReportSink | None = None,
    isolation: sandbox.Isolation | None = None,
    should_yield=lambda: False,
) -> dict | None:
    """The work a job left for later (engine.sink.Deferral: its warm compile and measuring processes), done in a
    fresh sandboxed child in ``job_dir`` (scratch: removed when it ends), on a copy of the folder the job kept,
    ``kept_dir`` (which stays as it is: each try starts from the same caches). Returns the job's report with that work done, also handed to ``sink.final``;
    None, with nothing handed over, when ``should_yield()`` became true first (a job arrived): the child was
    stopped and the work can be tried again."""
    request.validated()
    sink = sink or ReportSink()
    isolation = isolation or sandbox.Isolation.from_env()
    yielded = []

    def stop_when_told() -> bool:
        if should_yield():
            yielded.append(True)
        return bool(yielded)

    with ExitStack() as cleanup:
        held = _hold(request, job_dir, isolation, True, cleanup)
        report = _run(request, held, sink, isolation, time.time(), post_report_of=kept_dir, should_yield=stop_when_told)
    if yielded:
        return None
    sink.final(report)
    return report


def _start_child(
    request: JobRequest,
    job_dir: str,
    isolation: sandbox.Isolation,
    uid: int | None,
    group: JobGroup,
    cleanup: ExitStack,
    prestarted: PrestartedChild | None,
    post_report_only: bool = False,
) -> tuple[_Child, float, float | None]:
    """The job's child (a new one, or the prestarted one handed the job), the monotonic time its time limit counts
    from, and the Unix time of the hand-over (None for a new child). OSError where it could not start."""
    if prestarted is None:
        started = time.monotonic()
        child = _spawn(request, job_dir, isolation, uid, group, cleanup, post_report_only=post_report_only)
        return child, started, None
    handed_unix = prestarted.hand_over(request)
    return prestarted.child, time.monotonic(), handed_unix  # the time limit counts from the go


def _pump_until_exit(pump: _Pump, proc: subprocess.Popen, group: JobGroup) -> tuple[int, float]:
    """Read the child's events until it ends or is stopped, then end every process of the job: (its exit status,
    the Unix time it was gone)."""
    try:
        pump.run()
        pump._note_full_space()
        if pump.killed_for is None and pump.failure is None and pump.exit_code is None:
            try:  # the child closed its pipe: let bubblewrap pass its exit status on before anything is killed
                proc.wait(timeout=EXIT_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
    finally:
        # Every process of the job, wherever it went (double forks, setsid daemons): the cgroup or, without one,
        # the sandbox's PID namespace, whose init dies with bubblewrap (--die-with-parent) and takes it along.
        _kill_group(proc.pid)
        group.kill_all()
        proc.wait()
        exited_unix = time.time()
    return (proc.returncode if pump.exit_code is None else pump.exit_code), exited_unix


def _final_report(
    request: JobRequest,
    job_dir: str,
    report_path: str,
    pump: _Pump,
    group: JobGroup,
    isolation: sandbox.Isolation,
    returncode: int,
    err,
) -> dict:
    """The job's report once its child has exited: the child's own, unless the job was stopped (a limit, the time)
    or the child could not write one, in which case a failed report says why, with what the child had so far."""
    request_dict = asdict(request)
    stage = pump.last_stage
    partial = _read_partial_report(report_path, request)
    try:
        report = _read_child_report(report_path, request)
    except ReportError as exc:
        report = failed_report(request_dict, stage, "invalid_report", f"report from the job is invalid: {exc}")
    unwritten = report is None or report.get("status") not in ("ok", "failed")
    if pump.failure is not None:
        report = failed_report(request_dict, stage, *pump.failure, partial=partial)
    elif stopped := _stopped_report(request, job_dir, pump, group, stage, partial):
        report = stopped
    elif pump.failed_event and unwritten:
        # The child knew why it failed but could not write its report (its folder was full): its event says.
        report = failed_report(
            request_dict,
            stage,
            pump.failed_event["kind"],
            pump.failed_event.get("message", "") + " (the job could not write its report)",
            partial=partial,
        )
    elif pump.space_full and unwritten:
        report = failed_report(
            request_dict,
            stage,
            "output_limit",
            f"output limit of {request.output_limit_mb} MiB reached during stage '{stage}': the "
            "job's folder was full (files it deleted but kept open count), so the job could not "
            "even write its report. Write less.",
            partial=partial,
        )
    elif unwritten:
        stderr_tail = _tail(err, 2000).decode("utf-8", "replace")
        report = failed_report(
            request_dict,
            stage,
            *_describe_exit(returncode, request, isolation, stage, stderr_tail, group),
            partial=partial,
        )
    if pump.killed_for != "processes":  # else the parent saw a fork bomb, whatever the kernel refused
        _processes_or_memory(report.get("failure") or {}, request, group, stage)
    return report


def _processes_or_memory(failure: dict, request: JobRequest, group: JobGroup, stage: str) -> None:
    """A failure the child called ``processes`` where the kernel refused no process at the limit is memory: the
    address space a thread needs (each reserves a stack and a malloc arena) is what ran out. Rewritten in place."""
    if failure.get("kind") == "processes" and group.enforced and group.counter("pids_hit") == 0:
        failure.update(
            kind="memory",
            message=(
                f"the job could not start another thread or process during stage '{stage}', although the process "
                f"limit of {request.process_limit} was not reached: the memory limit of {request.memory_limit_mb} MiB "
                f"address space per process ran out ({failure.get('message', '')[-200:]})"
            ),
        )


def _stopped_report(
    request: JobRequest, job_dir: str, pump: _Pump, group: JobGroup, stage: str, partial
) -> dict | None:
    """The failed report of a job the parent or the kernel stopped: its time limit, its output limit, or memory
    (a process of the job killed by the kernel); None if it was not stopped."""
    request_dict = asdict(request)
    if pump.killed_for == "timeout":
        file, line = _line_at_timeout(job_dir, request.filename)
        where = f" at {file}:{line}" if line else ""
        return failed_report(
            request_dict,
            stage,
            "timeout",
            f"time limit of {request.time_limit_s:g} s reached during stage '{stage}'{where}; "
            "the job was killed. Use smaller inputs or fewer configs.",
            file=file if line else None,
            line=line,
            partial=partial,
        )
    if pump.killed_for is None and _stack_dump(job_dir, USER_CODE_STACK_FILE):  # the child ended at that limit
        file, line = _line_at_timeout(job_dir, request.filename, USER_CODE_STACK_FILE)
        where = f" at {file}:{line}" if line else ""
        return failed_report(
            request_dict,
            stage,
            "timeout",
            f"your code ran for {request.user_code_time_limit_s:g} s in stage '{stage}'{where} without finishing "
            "(the limit of each stage that runs only your code: loading the file, the eager run); the job was "
            "stopped. An endless loop? If the model really needs longer, raise the limit "
            "(PT2SCOPE_USER_CODE_TIME_LIMIT, or explore --user-code-time-limit).",
            file=file if line else None,
            line=line,
            partial=partial,
        )
    if pump.killed_for is None and (dump := _stack_dump(job_dir, STALL_STACK_FILE)):  # the child's stall watch
        return _stalled_report(request, job_dir, dump, stage, partial)
    if pump.killed_for == "processes":
        return failed_report(
            request_dict,
            stage,
            "processes",
            f"{pump.fork_bomb} during stage '{stage}' (a fork bomb?); every process of the job was killed. Start "
            "fewer processes or threads.",
            partial=partial,
        )
    if pump.killed_for == "output_limit":
        return failed_report(
            request_dict,
            stage,
            "output_limit",
            f"output limit of {request.output_limit_mb} MiB reached during stage '{stage}': "
            "the job's output and files grew past it, and the job was killed. Print less.",
            partial=partial,
        )
    if pump.killed_for == "memory" or group.counter("oom") > 0:  # the kernel killed a process of the job
        return failed_report(request_dict, stage, "memory", _memory_message(request, stage), partial=partial)
    return None


def _stalled_report(request: JobRequest, job_dir: str, dump: str, stage: str, partial) -> dict:
    """The failed report of a job its stall watch ended (engine/stall.py): the stage, the user's line where the
    stack shows one (a loop Dynamo traces for ever shows only Dynamo's frames), the limit applied and how to raise
    it."""
    file, line = _line_at_timeout(job_dir, request.filename, STALL_STACK_FILE)
    where = f" at {file}:{line}" if line else ""
    applied = re.search(r"limit (\d+) s", dump.partition("\n")[0])
    limit = applied.group(1) if applied else f"{request.stall_limit_s:g}"
    traced = "" if line else " (a loop that Dynamo traces for ever shows no line of yours)"
    return failed_report(
        asdict(request),
        stage,
        "timeout",
        f"no progress for {limit} s during stage '{stage}'{where}: nothing was compiled, logged or timed{traced}; "
        "the job was stopped. An endless loop that runs only when compiled, after some calls, or in your backend? "
        f"If the model really needs longer, raise the stall limit ({request.stall_limit_s:g} s plus ten eager "
        "steps: PT2SCOPE_STALL_LIMIT, or explore --stall-limit).",
        file=file if line else None,
        line=line,
        partial=partial,
    )


def _write_job(job_dir: str, request: JobRequest) -> None:
    with open(os.path.join(job_dir, request.filename), "w") as f:
        f.write(request.code)
    with open(os.path.join(job_dir, "request.json"), "w") as f:
        json.dump(asdict(request), f)


def _job_timeline(
    child: dict | None,
    report_path: str,
    started_unix: float,
    spawned_unix: float,
    exited_unix: float | None,
    prestarted: PrestartedChild | None = None,
    handed_unix: float | None = None,
) -> dict:
    """The child's timeline (untrusted, but validated numbers) inside the parent's: the folder prepared, the sandbox
    started up to the child's first instant, the report written (until the report file's modification time: the
    report cannot hold its own end), the child's exit up to the parent's wait returning, the read-back. A prestarted
    child: its folder and sandbox were made before the job (up to the hand-over), the job's own
    prepare is writing the job into its folder. ``exited_unix`` None: the report before the warm compile, read
    while the child runs on (no exit yet)."""
    parent = Recorder("parent")
    before = Recorder("parent")  # a prestarted child: what its start-up did before the hand-over
    if prestarted is None:
        parent.add("prepare", started_unix, spawned_unix)
    else:
        before.add("prepare", prestarted.started_unix, spawned_unix)
        parent.add("prepare", started_unix, handed_unix)
    until = time.time() if exited_unix is None else exited_unix
    phases = (child or {}).get("phases") or []
    origin = (child or {}).get("origin_unix_s")
    known = bool(phases) and isinstance(origin, (int, float)) and spawned_unix <= origin <= until
    child_started = origin if known else until
    (parent if prestarted is None else before).add("sandbox_start", spawned_unix, child_started)
    child_ended = child_started + max((p["end_s"] for p in phases), default=0.0) if known else until
    writer = Recorder("child")
    try:
        written = os.lstat(report_path).st_mtime
    except OSError:
        written = None
    if known and written is not None and child_ended < written <= until:
        writer.add("write_report", child_ended, written)
        child_ended = written
    if exited_unix is not None:
        parent.add("process_exit", min(child_ended, exited_unix), exited_unix)
    parent.add("read_report", min(child_ended, until) if exited_unix is None else exited_unix, time.time())
    if handed_unix is not None:
        before.mark_prestart(until=handed_unix)  # a sandbox still starting at the hand-over: the rest is the job's
    return merged(
        child if known else None, started_unix, "job_start", parent, writer, before, prestarted=prestarted is not None
    )


# Our own code, never a user's: compiled once by warm_up_shared_pch so Inductor builds its precompiled header.
PCH_WARMUP_CODE = "import torch\nmodel = lambda x: torch.sin(x) * torch.cos(x)\nexample_inputs = (torch.randn(64),)\n"


def warm_up_shared_pch(isolation: sandbox.Isolation) -> list[str]:
    """Fill isolation.shared_pch_dir by compiling PCH_WARMUP_CODE in a sandboxed job; return the files added.

    Run by a worker when it starts, outside any user's job. A cold precompiled header costs every CPU job about
    10 s of g++ (docs/benchmarks.md, "Sandbox"); engine.sandbox explains why sharing this one is safe.
    """

    def compile_in(job_dir: str) -> None:
        request = JobRequest(code=PCH_WARMUP_CODE, configs=["inductor_default"], warm_compile=False)
        report = run_job(request, job_dir, isolation=isolation)
        if report["status"] != "ok":
            raise RuntimeError(f"the precompiled-header warm-up failed: {report['failure']['message']}")

    return sandbox.warm_shared_pch(isolation, compile_in)


def warm_up_kernel_cache(isolation: sandbox.Isolation, examples_dir: str, names, devices=("cpu",)) -> list[str]:
    """Fill isolation.kernel_cache_dir with the kernels of gallery files ``names`` (our own code, in
    ``examples_dir``), each run as a sandboxed job per device in ``devices``; return the files published.

    Run by a worker when it starts, after the precompiled header (the jobs compile with it), outside any user's
    job. Each job is a user's job of that file (the same engine, so the recorded compile's settings, hence the same
    kernel sources and cache keys), without the store (it compiles every kernel). engine.sandbox explains why
    sharing the binaries is safe and how jobs get them."""
    jobs = {}  # "seed.py (cpu)": (device, file name, code)
    for name in names:
        with open(os.path.join(examples_dir, name)) as f:
            code = f.read()
        jobs.update({f"{name} ({device})": (device, name, code) for device in devices})
    builder = replace(isolation, kernel_cache_dir=None)

    def compile_in(job_dir: str, label: str, _code: str) -> None:
        device, name, code = jobs[label]
        # The capture process's compile is what a user's job would find in the store; the measuring processes
        # after it would compile nothing new and only delay the worker's first job.
        request = JobRequest(code=code, filename=name, device=device, configs=["inductor_default"], warm_compile=False)
        report = run_job(request, job_dir, isolation=builder)
        if report["status"] != "ok":
            raise RuntimeError(f"the kernel-cache warm-up of {label} failed: {report['failure']['message']}")

    return sandbox.publish_kernel_cache(isolation, {label: job[2] for label, job in jobs.items()}, compile_in)


def _stack_dump_at(request: JobRequest, now: float) -> float:
    """When the child dumps its stack (engine.child), so a timeout can name the user's line: just before the
    parent's time limit, counted from ``now``, kills it."""
    return now + request.time_limit_s - STACK_DUMP_LEAD_S


# glibc's malloc adapts its thresholds to a process's history: in some processes a step's freed tensors go back to
# the OS and are faulted in again every step, in others they are reused. The seed's eager step read 2.5 ms with no
# page faults in one job and 5.8 ms with 2,900 a step in the next, so the same model's speedup read 3.3x, then
# 7.7x, both "decided" (tests/engine/test_runtime_truth.py, three successive jobs). Fixed thresholds (the largest
# mmap threshold glibc takes, and a trim threshold far above it) make every job's heap keep and reuse its memory,
# as PyTorch's CPU benchmarks get from jemalloc or tcmalloc; a job's peak memory is the same. The report states it
# (runtime.timing.allocator) and each rung's page faults per step.
MALLOC_SETTINGS = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def _child_env(
    job_dir: str,
    event_fd: int,
    request: JobRequest,
    go_fd: int | None = None,
    decide_fd: int | None = None,
    post_report_only: bool = False,
) -> dict:
    """The child's whole environment: no secrets, database or broker URLs from the parent reach it. ``go_fd``: a
    prestarted child, told by that pipe when its job is there (and its stack dump time); ``decide_fd``: the pipe
    that says whether to run the work after the report now (_Child.decide_post_report); ``post_report_only``: a
    child of a job's deferred work (run_post_report)."""
    keep = ("LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CC", "CXX")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        {
            "PATH": os.pathsep.join([os.path.dirname(sandbox.CHILD_PYTHON), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": job_dir,
            "USER": sandbox.JOB_USER,
            "LOGNAME": sandbox.JOB_USER,
            # Also where Inductor keeps its precompiled header (see engine.sandbox): on disk, in the job's folder.
            "TMPDIR": os.path.join(job_dir, "tmp"),
            "PYTHONPATH": PROJECT_ROOT,
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # One kernel cache per job: no other job's entries can run here, and the compile is honestly cold.
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(job_dir, "inductor-cache"),
            "TRITON_CACHE_DIR": os.path.join(job_dir, "triton-cache"),
            # torch.cuda.is_available() by NVML, not the driver: on torch 2.11 importing Inductor asks it
            # (torch/_inductor/runtime/benchmarking.py), which started the CUDA driver in the child before anything
            # ran and left its warm processes' fork server (engine.warm.ForkServer) unable to fork a process that
            # can use the GPU. The job's own first CUDA call starts the driver as before.
            "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
            "PT2SCOPE_EVENT_FD": str(event_fd),
            **({"PT2SCOPE_POST_REPORT_FD": str(decide_fd)} if decide_fd is not None else {}),
            **({"PT2SCOPE_POST_REPORT_ONLY": "1"} if post_report_only else {}),
            **MALLOC_SETTINGS,
        }
    )
    if go_fd is None:
        env["PT2SCOPE_STACK_DUMP_AT"] = f"{_stack_dump_at(request, time.time()):.3f}"
    else:
        env.update({"PT2SCOPE_GO_FD": str(go_fd), "PT2SCOPE_PRESTART_DEVICE": request.device})
    return env


class _Pump:
    """Hand the child's events (and its report once the stages are collected) to the sink until the child ends, a
    limit is reached or the sink fails.

    Afterwards ``last_stage`` is the stage the job was in; ``killed_for`` None, "timeout", "yielded", "processes" (a fork bomb:
    ``fork_bomb`` says how it was seen), "output_limit" or "memory" (the watchdog's, without a cgroup); ``failure`` (kind, message) when the sink raised. On any of
    those the whole job has been killed.
    """

    def __init__(
        self,
        proc,
        read_fd,
        status_fd,
        request: JobRequest,
        job_dir: str,
        started: float,
        sink: ReportSink,
        group: JobGroup,
        watch_space: bool,
    ):
        self.proc, self.read_fd, self.request, self.job_dir = proc, read_fd, request, job_dir
        # bubblewrap's status (sandbox.child_command): the job's own process ended, with this exit status.
        self.status_fd, self.status_buf, self.exit_code = status_fd, b"", None
        self.deadline = started + request.time_limit_s
        self.sink, self.group, self.watch_space = sink, group, watch_space
        self.last_stage, self.killed_for, self.failure = "load", None, None
        self.forwarded = self.forwarded_bytes = 0
        self.capped = self.space_full = False
        self.failed_event = None  # the child's own "failed" event, with the failure's kind and message
        self.on_early_report = None  # called once when the warm compile starts: the report before it is written
        self.should_yield = None  # polled: when it returns true the job is stopped (killed_for "yielded")
        self.partial_pending = True
        # The kernel's count of refused forks; since when it keeps growing, and when it last grew.
        self.forks_refused, self.refused_since, self.refused_last = 0, None, 0.0
        self.pids: set[int] = set()  # the job's processes at the last poll
        self.births, self.window_start, self.fast_since = 0, time.monotonic(), None  # processes started
        self.many_since = None  # since when the job holds FORK_HOLD_SHARE of its process limit
        self.fork_bomb = ""  # how a fork bomb was seen, in words

    def run(self) -> None:
        output_limit = self.request.output_limit_mb * 1024 * 1024
        memory_limit = (
            None
            if self.group.enforced or self.request.memory_limit_mb is None
            else self.request.memory_limit_mb * 1024 * 1024
        )
        buf, checked_at = b"", 0.0
        while True:
            now = time.monotonic()
            if now >= self.deadline:
                return self._kill("timeout")
            if now - checked_at >= OUTPUT_CHECK_INTERVAL_S:
                checked_at = now
                if self.should_yield is not None and self.should_yield():
                    return self._kill("yielded")
                pids = self.group.pids()  # once a poll: without a cgroup it is a walk of /proc
                if (
                    self._forks_keep_being_refused(now)
                    or self._forking_fast(now, pids)
                    or self._holding_many(now, pids)
                ):
                    return self._kill("processes")
                if self.watch_space and _disk_usage(self.job_dir, pids) > output_limit:
                    return self._kill("output_limit")
                self._note_full_space()
                if memory_limit is not None and self.group.memory_used(pids) > memory_limit:
                    return self._kill("memory")
                if self.proc.poll() is not None and not select.select([self.read_fd], [], [], 0)[0]:
                    return  # the child is gone; a process it left holding the pipe does not count
            readable = [self.read_fd] + ([self.status_fd] if self.status_fd is not None else [])
            ready, _, _ = select.select(readable, [], [], min(self.deadline - now, OUTPUT_CHECK_INTERVAL_S))
            if self.status_fd in ready and self._job_process_ended():
                self._drain(buf)
                return  # what it left behind (a fork bomb's copies, daemons) is killed by the caller
            if self.read_fd not in ready:
                continue
            chunk = os.read(self.read_fd, 65536)
            if not chunk:  # every writer closed: the child (and its descendants) exited
                return
            buf += chunk
            *lines, buf = buf.split(b"\n")
            if len(buf) > events.MAX_LINE_BYTES:
                buf = b""
            for line in lines:
                event = events.parse(line)
                if event is None:
                    continue
                self._note(event)
                if not self._forward(event):
                    return

    def _job_process_ended(self) -> bool:
        chunk = os.read(self.status_fd, 4096)
        if not chunk:
            self.status_fd = None  # bubblewrap exited
            return False
        self.status_buf += chunk
        *lines, self.status_buf = self.status_buf.split(b"\n")
        for line in lines:
            try:
                status = json.loads(line)
            except ValueError:
                continue
            if isinstance(status, dict) and isinstance(status.get("exit-code"), int):
                self.exit_code = status["exit-code"]
        return self.exit_code is not None

    def _drain(self, buf: bytes) -> None:
        """The events the job's process wrote before it ended (still in the pipe)."""
        while select.select([self.read_fd], [], [], 0)[0]:
            chunk = os.read(self.read_fd, 65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > 4 * events.MAX_LINE_BYTES:
                break
        for line in buf.split(b"\n"):
            event = events.parse(line)
            if event is not None:
                self._note(event)
                if not self._forward(event):
                    return

    def _forks_keep_being_refused(self, now: float) -> bool:
        """The kernel kept refusing forks at the process limit for FORK_REFUSALS_S, never pausing for REFUSAL_GAP_S
        (cgroup only)."""
        refused = self.group.counter("pids_hit")
        if refused > self.forks_refused:
            self.refused_since = self.refused_since or now
            self.refused_last = now
        elif now - self.refused_last > REFUSAL_GAP_S:
            self.refused_since = None
        self.forks_refused = refused
        if self.refused_since is None or now - self.refused_since < FORK_REFUSALS_S:
            return False
        self.fork_bomb = (
            f"process limit of {self.request.process_limit} processes and threads reached, and the job kept "
            f"starting more: the kernel refused {refused} forks, for {FORK_REFUSALS_S:g} s on end"
        )
        return True

    def _forking_fast(self, now: float, alive: list[int]) -> bool:
        """More than FORK_RATE_PER_S processes started a second with FORK_BOMB_SHARE of the limit held, in every
        second for FORK_BOMB_S (``alive``: the job's processes now)."""
        pids = set(alive)
        self.births += len(pids - self.pids)
        self.pids = pids
        if now - self.window_start >= 1.0:
            many = len(pids) >= FORK_BOMB_SHARE * self.request.process_limit
            fast = many and self.births > FORK_RATE_PER_S * (now - self.window_start)
            self.fast_since = (self.fast_since or self.window_start) if fast else None
            self.births, self.window_start = 0, now
        if self.fast_since is None or now - self.fast_since < FORK_BOMB_S:
            return False
        self.fork_bomb = (
            f"the job started over {FORK_RATE_PER_S} processes a second for {now - self.fast_since:.0f} s on end "
            f"with {len(self.pids)} alive (under its process limit of {self.request.process_limit}: they died as fast)"
        )
        return True

    def _holding_many(self, now: float, alive: list[int]) -> bool:
        """FORK_HOLD_SHARE of the process limit held in processes for FORK_HOLD_S on end, however slowly they came."""
        many = len(alive) >= FORK_HOLD_SHARE * self.request.process_limit
        self.many_since = (self.many_since or now) if many else None
        if self.many_since is None or now - self.many_since < FORK_HOLD_S:
            return False
        self.fork_bomb = (
            f"the job held {len(alive)} processes, over {FORK_HOLD_SHARE:.0%} of its process limit of "
            f"{self.request.process_limit}, for {FORK_HOLD_S:g} s on end"
        )
        return True

    def _note(self, event: dict) -> None:
        if event["event"] != "stage":  # a message in words: forwarded, nothing to note
            return
        self.last_stage = event["stage"]
        if event["stage"] == "warm_compile" and event["state"] == "started" and self.on_early_report:
            self.on_early_report, hand_over = None, self.on_early_report
            hand_over()
        if event["state"] == "failed" and "kind" in event:
            self.failed_event = event

    def _forward(self, event: dict) -> bool:
        """Hand one event to the sink within the caps, and after the capture's ``report`` stage the report so far;
        False when the sink failed (the job is killed)."""
        if not self.capped:
            self.forwarded += 1
            self.forwarded_bytes += events.size(event)
            if self.forwarded > events.MAX_EVENTS or self.forwarded_bytes > events.EVENT_BYTES_LIMIT:
                self.capped = True
                dropped = {
                    "event": "message",
                    "text": (
                        f"further progress events were dropped: a job may send at most {events.MAX_EVENTS} events "
                        f"and {events.EVENT_BYTES_LIMIT // 1024} KiB of them (the report is not affected)"
                    ),
                }
                if not self._hand_over(self.sink.event, dropped):
                    return False
            elif not self._hand_over(self.sink.event, event):
                return False
        if self.partial_pending and event.get("stage") == "report" and event.get("state") == "finished":
            self.partial_pending = False  # once: a child that repeats the event makes the parent read nothing more
            return self._hand_over(self.sink.partial, self._partial_report())
        return True

    def _partial_report(self) -> dict | None:
        """The report as the child saved it when its ``report`` stage ended: every stage's artifacts, before the
        benchmarks (the child writes report.json.partial before it sends the stage's end)."""
        return _read_partial_report(os.path.join(self.job_dir, "report.json"), self.request)

    def _hand_over(self, method, what) -> bool:
        if what is None:
            return True
        try:
            method(what)
        except Exception as exc:  # the sink could not take it (a database error): stop the job, say why
            error_id = new_error_id()
            log.exception("error %s: the report sink failed; job killed", error_id)
            self.failure = (
                "internal_error",
                f"pt2scope could not record this run's progress ({type(exc).__name__}, "
                f"error id {error_id}); the job was stopped. Submit it again.",
            )
            self._kill(None)
            return False
        return True

    def _note_full_space(self) -> None:
        """On a tmpfs job folder the kernel refuses writes past the limit, the report's included: remember having
        seen it full, to name the cause when the job then dies without a report."""
        if not self.watch_space and not self.space_full:
            info = os.statvfs(self.job_dir)
            self.space_full = info.f_bavail * info.f_frsize < FULL_SPACE_BYTES

    def _kill(self, why: str | None) -> None:
        self.killed_for = why
        _kill_group(self.proc.pid)
        self.group.kill_all()


def _stack_dump(job_dir: str, name: str) -> str:
    """A stack dump the child wrote (faulthandler), read as untrusted data: at most 256 KiB, "" when none."""
    try:
        fd = os.open(os.path.join(job_dir, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read(256 * 1024).decode("utf-8", "replace")


def _line_at_timeout(job_dir: str, filename: str, dump: str = STACK_DUMP_FILE) -> tuple[str | None, int | None]:
    """The user's innermost line in the stack the child dumped just before a limit (faulthandler)."""
    text = _stack_dump(job_dir, dump)
    user_file = os.path.join(job_dir, filename)
    for match in STACK_FRAME.finditer(text):
        if match.group(1) in (user_file, filename):
            return filename, int(match.group(2))
    return None, None


def _memory_message(request: JobRequest, stage: str) -> str:
    return (
        f"out of memory: the job's processes together reached the memory limit of {request.memory_limit_mb} MiB "
        f"during stage '{stage}', and the job was killed. Use smaller inputs."
    )


def _disk_usage(job_dir: str, pids: list[int]) -> int:
    """Bytes the job folder occupies (allocated blocks: a sparse file counts what it uses), plus deleted files its
    processes still hold open (they keep their space until closed)."""
    total = 0
    for folder, dirs, files in os.walk(job_dir):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").endswith(" (deleted)"):
                    info = os.stat(f"/proc/{pid}/fd/{fd}")
                    if stat.S_ISREG(info.st_mode):
                        total += info.st_blocks * 512
            except OSError:
                pass
    return total


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_exit(
    returncode: int, request: JobRequest, isolation: sandbox.Isolation, stage: str, stderr_tail: str, group: JobGroup
) -> tuple[str, str]:
    """(kind, message) for a child that died without writing a final report: the kernel's counters first (which
    limit was hit), then the signal or exit code as it was."""
    if isolation.mode == "bubblewrap" and returncode == 1 and "bwrap:" in stderr_tail:
        return "internal_error", f"the sandbox could not start the job: {stderr_tail.strip()[-500:]}"
    sig = sandbox.exit_signal(returncode, isolation)
    if group.counter("oom") > 0:
        return "memory", _memory_message(request, stage)
    if group.counter("pids_hit") > 0 or "Thread creation failed" in stderr_tail:
        return "processes", (
            f"process limit of {request.process_limit} processes and threads reached during "
            f"stage '{stage}'; the job could not start another and ended"
        )
    if sig == signal.SIGXCPU:
        return "cpu_time", (
            f"CPU time limit of {request.cpu_time_limit_s:g} s reached during stage '{stage}'; the job was killed"
        )
    if sig == signal.SIGXFSZ:
        return "output_limit", (
            f"file size limit of {request.file_size_limit_mb} MiB reached during stage '{stage}'; the job was killed"
        )
    if sig == signal.SIGKILL and not group.enforced:
        return "crash", (
            f"the job was killed (SIGKILL) during stage '{stage}'; the machine's out-of-memory "
            "killer is the usual cause: use smaller inputs"
        )
    if sig is not None:
        return "crash", f"the job's process died from {sig.name} during stage '{stage}'"
    if any(text in stderr_tail for text in ("MemoryError", "std::bad_alloc", "Cannot allocate memory")):
        return "memory", (
            f"out of memory during stage '{stage}': the job reached the memory limit of "
            f"{request.memory_limit_mb} MiB ({stderr_tail.strip().splitlines()[-1][:300]})"
        )
    return "crash", f"the job's process exited with code {returncode} during stage '{stage}' without a report"


def _read_child_report(path: str, request: JobRequest) -> dict | None:
    """The child's report, read as untrusted data: a regular file (no link, no pipe) within the file size limit,
    validated against the schema (contract.report; raises ReportError naming the field). None: no report."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > request.file_size_limit_mb * 1024 * 1024:
            return None
        try:
            report = json.loads(f.read())
        except (ValueError, RecursionError):
            return None
    return checked_report(report)


def _read_partial_report(report_path: str, request: JobRequest) -> dict | None:
    """What the child saved after its last finished stage, or None if it saved nothing valid."""
    try:
        return _read_child_report(report_path + ".partial", request)
    except ReportError:
        return None


def _tail(f, limit: int) -> bytes:
    """The last ``limit`` bytes, read without moving the offset the child's inherited handle shares."""
    size = os.fstat(f.fileno()).st_size
    return os.pread(f.fileno(), limit, max(0, size - limit))


def _user_output(out, err) -> dict:
    """The tail of what the user's code printed, read through the parent's own handles."""
    result = {"truncated": False}
    for name, f in (("stdout", out), ("stderr", err)):
        if os.fstat(f.fileno()).st_size > USER_OUTPUT_LIMIT:
            result["truncated"] = True
        result[name] = _tail(f, USER_OUTPUT_LIMIT).decode("utf-8", "replace")
    return result
