"""Run one job in a child process and return its report, whatever happens to the child.

This is the boundary between trusted code (the CLI, the workers) and the user's code: the parent never imports
torch or the user's module. The child (``python -m engine.child JOB_DIR``) reads JOB_DIR/request.json, writes
progress events as JSON lines to an inherited pipe and the report to JOB_DIR/report.json. A crash, a hang past
the time limit or running out of memory becomes a failed report naming the stage and the limit, never a hung
parent. The launch command is built in one place (``_child_command``) so a sandbox can wrap it.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

from engine.report import STAGES, failed_report, parse_configs, read_report

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_OUTPUT_LIMIT = 64 * 1024  # bytes of the user's stdout/stderr kept in the report (the tail)


@dataclass
class JobRequest:
    code: str
    filename: str = "model.py"
    device: str = "cpu"
    train: bool | None = None  # None: the user's file decides (``train = True`` at top level)
    configs: list[str] = field(default_factory=list)  # empty: the device's default ladder
    time_limit_s: float = 900.0
    memory_limit_mb: int | None = None  # RLIMIT_AS for CPU jobs; None: no limit

    def validated(self) -> "JobRequest":
        """Normalise and check the request before anything is started (raises engine.report.ConfigError)."""
        self.configs = parse_configs(self.configs, self.device)
        self.filename = os.path.basename(self.filename) or "model.py"
        if not self.filename.endswith(".py"):
            self.filename += ".py"
        return self


def run_job(request: JobRequest, job_dir: str | None = None, on_event=None) -> dict:
    """Run ``request`` in a fresh child process; return the report (status "ok" or "failed").

    ``on_event(event: dict)`` is called in this thread for every progress event as it arrives, e.g.
    ``{"event": "stage", "stage": "dynamo", "state": "finished", "elapsed_s": 1.2, "seconds": 0.4}``.
    """
    request.validated()
    job_dir = job_dir or tempfile.mkdtemp(prefix="pt2scope-job-")
    os.makedirs(job_dir, exist_ok=True)
    with open(os.path.join(job_dir, request.filename), "w") as f:
        f.write(request.code)
    with open(os.path.join(job_dir, "request.json"), "w") as f:
        json.dump(asdict(request), f)
    report_path = os.path.join(job_dir, "report.json")

    read_fd, write_fd = os.pipe()
    out = open(os.path.join(job_dir, "stdout.txt"), "wb")
    err = open(os.path.join(job_dir, "stderr.txt"), "wb")
    env = _child_env(job_dir, write_fd)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            _child_command(job_dir), cwd=job_dir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            pass_fds=(write_fd,), start_new_session=True,  # own process group: a kill reaches every descendant
            preexec_fn=_limits(request),
        )
    finally:
        os.close(write_fd)
        out.close()
        err.close()

    last_stage, timed_out = _pump_events(proc, read_fd, started + request.time_limit_s, on_event)
    os.close(read_fd)
    returncode = proc.wait()
    _kill_group(proc.pid)  # stray grandchildren (compile workers) must not outlive the job

    request_dict = asdict(request)
    try:
        report = read_report(report_path)
    except (OSError, ValueError):
        report = None
    if timed_out:
        report = failed_report(request_dict, last_stage, "timeout",
                               f"time limit of {request.time_limit_s:g} s reached during stage '{last_stage}'; "
                               "the job was killed. Use smaller inputs or fewer configs.",
                               partial=_partial(report_path))
    elif report is None or report.get("status") not in ("ok", "failed"):
        report = failed_report(request_dict, last_stage, *_describe_exit(returncode, request, last_stage),
                               partial=_partial(report_path))
    report["user_output"] = _user_output(job_dir)
    report.setdefault("runtime", {})["job_seconds"] = round(time.monotonic() - started, 3)
    return report


def _child_command(job_dir: str) -> list[str]:
    return [sys.executable, "-m", "engine.child", job_dir]


def _child_env(job_dir: str, event_fd: int) -> dict:
    """A minimal environment: the child gets no secrets, database or broker URLs from the parent."""
    keep = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CC", "CXX")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    tmp = os.path.join(job_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    env.update({
        "HOME": job_dir,
        "TMPDIR": tmp,
        "PYTHONPATH": PROJECT_ROOT,
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # One kernel cache per job: no other job's entries can run here, and the compile is honestly cold.
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(job_dir, "inductor-cache"),
        "TRITON_CACHE_DIR": os.path.join(job_dir, "triton-cache"),
        "PT2SCOPE_EVENT_FD": str(event_fd),
    })
    return env


def _limits(request: JobRequest):
    if request.memory_limit_mb is None:
        return None

    def apply():  # runs in the child between fork and exec
        import resource
        limit = request.memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def _pump_events(proc, read_fd, deadline, on_event):
    """Forward the child's events until its pipe closes or the deadline passes; return (last stage, timed out)."""
    last_stage, buf = "load", b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill_group(proc.pid)
            return last_stage, True
        ready, _, _ = select.select([read_fd], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(read_fd, 65536)
        if not chunk:  # every writer closed: the child (and its descendants) exited
            return last_stage, False
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "stage" and event.get("stage") in STAGES:
                last_stage = event["stage"]
            if on_event:
                on_event(event)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_exit(returncode: int, request: JobRequest, stage: str) -> tuple[str, str]:
    """(kind, message) for a child that died without writing a final report."""
    if returncode < 0:
        sig = signal.Signals(-returncode)
        if sig == signal.SIGKILL and request.memory_limit_mb is None:
            return "crash", (f"the job was killed (SIGKILL) during stage '{stage}'; the machine's out-of-memory "
                             "killer is the usual cause: use smaller inputs")
        if sig == signal.SIGXCPU:
            return "cpu_time", f"CPU time limit reached during stage '{stage}'"
        return "crash", f"the job's process died from {sig.name} during stage '{stage}'"
    if request.memory_limit_mb is not None and returncode != 0:
        return "memory", (f"the job exited with code {returncode} during stage '{stage}', probably at the memory "
                          f"limit of {request.memory_limit_mb} MiB")
    return "crash", f"the job's process exited with code {returncode} during stage '{stage}' without a report"


def _partial(report_path: str) -> dict | None:
    """The report the child saved after its last finished stage, if any."""
    try:
        return read_report(report_path + ".partial")
    except (OSError, ValueError):
        return None


def _user_output(job_dir: str) -> dict:
    result = {"truncated": False}
    for name in ("stdout", "stderr"):
        path = os.path.join(job_dir, f"{name}.txt")
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                if size > USER_OUTPUT_LIMIT:
                    f.seek(size - USER_OUTPUT_LIMIT)
                    result["truncated"] = True
                result[name] = f.read().decode("utf-8", "replace")
        except OSError:
            result[name] = ""
    return result
