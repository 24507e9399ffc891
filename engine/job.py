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
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

from contract.limits import DEFAULT_LIMITS
from contract.report import ReportError, checked_report
from engine import sandbox
from engine.report import STAGES, failed_report, parse_configs

PROJECT_ROOT = sandbox.PROJECT_ROOT
USER_OUTPUT_LIMIT = 64 * 1024  # bytes of the user's stdout/stderr kept in the report (the tail)
MAX_EVENT_BYTES = 64 * 1024  # a longer progress line from the child is dropped: it is not ours
MAX_EVENTS = 5000  # events forwarded per job; the rest are dropped (each one is a database row)
OUTPUT_CHECK_INTERVAL_S = 0.25


@dataclass
class JobRequest:
    code: str
    filename: str = "model.py"
    device: str = "cpu"
    train: bool | None = None  # None: the user's file decides (``train = True`` at top level)
    configs: list[str] = field(default_factory=list)  # empty: the device's default ladder
    # Limits: contract.limits.JobLimits says what each one bounds; docs/security.md why each default.
    time_limit_s: float = DEFAULT_LIMITS.time_limit_s
    memory_limit_mb: int | None = DEFAULT_LIMITS.memory_limit_mb
    cpu_time_limit_s: float = DEFAULT_LIMITS.cpu_time_limit_s
    process_limit: int = DEFAULT_LIMITS.process_limit
    open_files_limit: int = DEFAULT_LIMITS.open_files_limit
    file_size_limit_mb: int = DEFAULT_LIMITS.file_size_limit_mb
    output_limit_mb: int = DEFAULT_LIMITS.output_limit_mb

    def validated(self) -> JobRequest:
        """Normalise and check the request before anything is started (raises engine.report.ConfigError)."""
        self.configs = parse_configs(self.configs, self.device)
        self.filename = os.path.basename(self.filename) or "model.py"
        if not self.filename.endswith(".py"):
            self.filename += ".py"
        if self.device == "cuda":
            self.memory_limit_mb = None
        self.file_size_limit_mb = min(self.file_size_limit_mb, self.output_limit_mb)  # no file outgrows the whole
        return self


def run_job(request: JobRequest, job_dir: str | None = None, on_event=None,
            isolation: sandbox.Isolation | None = None) -> dict:
    """Run ``request`` in a fresh child process; return the report (status "ok" or "failed").

    ``on_event(event: dict)`` is called in this thread for every progress event as it arrives, e.g.
    ``{"event": "stage", "stage": "dynamo", "state": "finished", "elapsed_s": 1.2, "seconds": 0.4}``.
    ``isolation`` defaults to the environment's (PT2SCOPE_ISOLATION, default bubblewrap).
    """
    request.validated()
    isolation = isolation or sandbox.Isolation.from_env()
    job_dir = os.path.abspath(job_dir or tempfile.mkdtemp(prefix="pt2scope-job-"))
    sandbox.prepare_job_dir(job_dir, isolation)
    with open(os.path.join(job_dir, request.filename), "w") as f:
        f.write(request.code)
    with open(os.path.join(job_dir, "request.json"), "w") as f:
        json.dump(asdict(request), f)

    read_fd, write_fd = os.pipe()
    # The parent keeps its own handles on the output files: the child may rename or replace the names, but what
    # the parent reads back is always the file it created (never a link the job planted).
    out, err = (open(os.path.join(job_dir, f"{name}.txt"), "w+b") for name in ("stdout", "stderr"))
    env = _child_env(job_dir, write_fd)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            sandbox.child_command(isolation, request, job_dir, env), cwd=job_dir, env=env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, pass_fds=(write_fd,),
            start_new_session=True,  # own process group: a kill reaches every descendant
        )
    except OSError as exc:
        os.close(read_fd)
        out.close()
        err.close()
        return failed_report(asdict(request), "load", "internal_error", f"the job could not start: {exc}")
    finally:
        os.close(write_fd)

    last_stage, killed_for = _pump_events(proc, read_fd, request, job_dir, started, on_event)
    os.close(read_fd)
    returncode = proc.wait()
    _kill_group(proc.pid)  # stray grandchildren (compile workers) must not outlive the job

    request_dict = asdict(request)
    report_path = os.path.join(job_dir, "report.json")
    try:
        report = _read_child_report(report_path, request)
    except ReportError as exc:
        report = failed_report(request_dict, last_stage, "invalid_report", f"report from the job is invalid: {exc}")
    if killed_for == "timeout":
        report = failed_report(request_dict, last_stage, "timeout",
                               f"time limit of {request.time_limit_s:g} s reached during stage '{last_stage}'; "
                               "the job was killed. Use smaller inputs or fewer configs.",
                               partial=_read_partial_report(report_path, request))
    elif killed_for == "output_limit":
        report = failed_report(request_dict, last_stage, "output_limit",
                               f"output limit of {request.output_limit_mb} MiB reached during stage '{last_stage}': "
                               "the job's output and files grew past it, and the job was killed. Print less.",
                               partial=_read_partial_report(report_path, request))
    elif report is None or report.get("status") not in ("ok", "failed"):
        stderr_tail = _tail(err, 2000).decode("utf-8", "replace")
        report = failed_report(request_dict, last_stage,
                               *_describe_exit(returncode, request, isolation, last_stage, stderr_tail),
                               partial=_read_partial_report(report_path, request))
    report["user_output"] = _user_output(out, err)
    out.close()
    err.close()
    report["isolation"] = sandbox.describe(isolation, request)
    report.setdefault("runtime", {})["job_seconds"] = round(time.monotonic() - started, 3)
    return report


# Our own code, never a user's: compiled once by warm_up_shared_pch so Inductor builds its precompiled header.
PCH_WARMUP_CODE = "import torch\nmodel = lambda x: torch.sin(x) * torch.cos(x)\nexample_inputs = (torch.randn(64),)\n"


def warm_up_shared_pch(isolation: sandbox.Isolation) -> list[str]:
    """Fill isolation.shared_pch_dir by compiling PCH_WARMUP_CODE in a sandboxed job; return the files added.

    Run by a worker when it starts, outside any user's job. A cold precompiled header costs every CPU job about
    10 s of g++ (docs/benchmarks.md, "Sandbox"); engine.sandbox explains why sharing this one is safe.
    """
    def compile_in(job_dir: str) -> None:
        report = run_job(JobRequest(code=PCH_WARMUP_CODE, configs=["inductor_default"]), job_dir, isolation=isolation)
        if report["status"] != "ok":
            raise RuntimeError(f"the precompiled-header warm-up failed: {report['failure']['message']}")

    return sandbox.warm_shared_pch(isolation, compile_in)


def _child_env(job_dir: str, event_fd: int) -> dict:
    """The child's whole environment: no secrets, database or broker URLs from the parent reach it."""
    keep = ("LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CC", "CXX")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({
        "PATH": os.pathsep.join([os.path.dirname(os.path.abspath(sys.executable)), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
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
        "PT2SCOPE_EVENT_FD": str(event_fd),
    })
    return env


def _pump_events(proc, read_fd, request: JobRequest, job_dir: str, started: float, on_event):
    """Forward the child's events until it ends, the time limit passes or its output outgrows the limit.

    Returns (last stage, None | "timeout" | "output_limit"); on a limit the whole sandbox has been killed.
    """
    deadline = started + request.time_limit_s
    output_limit = request.output_limit_mb * 1024 * 1024
    last_stage, buf, forwarded, checked_at = "load", b"", 0, 0.0
    while True:
        now = time.monotonic()
        if now >= deadline:
            _kill_group(proc.pid)
            return last_stage, "timeout"
        if now - checked_at >= OUTPUT_CHECK_INTERVAL_S:
            checked_at = now
            if _disk_usage(job_dir) > output_limit:
                _kill_group(proc.pid)
                return last_stage, "output_limit"
            if proc.poll() is not None and not select.select([read_fd], [], [], 0)[0]:
                return last_stage, None  # the child is gone; a process it left holding the pipe does not count
        ready, _, _ = select.select([read_fd], [], [], min(deadline - now, OUTPUT_CHECK_INTERVAL_S))
        if not ready:
            continue
        chunk = os.read(read_fd, 65536)
        if not chunk:  # every writer closed: the child (and its descendants) exited
            return last_stage, None
        buf += chunk
        *lines, buf = buf.split(b"\n")
        if len(buf) > MAX_EVENT_BYTES:
            buf = b""
        for line in lines:
            try:
                event = json.loads(line) if len(line) <= MAX_EVENT_BYTES else None
            except (ValueError, RecursionError):
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "stage" and event.get("stage") in STAGES:
                last_stage = event["stage"]
            if on_event and forwarded < MAX_EVENTS:
                forwarded += 1
                on_event(event)


def _disk_usage(job_dir: str) -> int:
    """Bytes the job folder occupies (allocated blocks: a sparse file counts what it uses)."""
    total = 0
    for folder, dirs, files in os.walk(job_dir):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_exit(returncode: int, request: JobRequest, isolation: sandbox.Isolation, stage: str,
                   stderr_tail: str) -> tuple[str, str]:
    """(kind, message) for a child that died without writing a final report."""
    if isolation.mode == "bubblewrap" and returncode == 1 and "bwrap:" in stderr_tail:
        return "internal_error", f"the sandbox could not start the job: {stderr_tail.strip()[-500:]}"
    sig = sandbox.exit_signal(returncode, isolation)
    if sig == signal.SIGXCPU:
        return "cpu_time", (f"CPU time limit of {request.cpu_time_limit_s:g} s reached during stage '{stage}'; the "
                            "job was killed")
    if sig == signal.SIGXFSZ:
        return "output_limit", (f"file size limit of {request.file_size_limit_mb} MiB reached during stage "
                                f"'{stage}'; the job was killed")
    if sig == signal.SIGKILL and request.memory_limit_mb is None:
        return "crash", (f"the job was killed (SIGKILL) during stage '{stage}'; the machine's out-of-memory "
                         "killer is the usual cause: use smaller inputs")
    if sig is not None:
        return "crash", f"the job's process died from {sig.name} during stage '{stage}'"
    if request.memory_limit_mb is not None and returncode != 0:
        return "memory", (f"the job exited with code {returncode} during stage '{stage}', probably at the memory "
                          f"limit of {request.memory_limit_mb} MiB")
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
