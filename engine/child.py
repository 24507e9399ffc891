"""The child process of one job: load the user's code, compile it with every stage recorded, benchmark, report.

Run as ``python -m engine.child JOB_DIR`` by engine.job (never imported by the parent). Reads
JOB_DIR/request.json, writes progress events as JSON lines to the fd in PT2SCOPE_EVENT_FD, saves
JOB_DIR/report.json.partial after each stage (so a crash keeps what was done) and JOB_DIR/report.json at the end.
"""
from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import traceback
from types import SimpleNamespace

from engine.report import empty_report, failed_report, write_report


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
        self.state = SimpleNamespace()  # what each stage leaves for the later ones (engine.child.pipeline)
        self._begun: dict[str, float] = {}
        dump_at = os.environ.get("PT2SCOPE_STACK_DUMP_AT")
        if dump_at:  # every thread's stack, just before the parent's time limit: the timeout then names the line
            self.stack_dump = open(os.path.join(job_dir, "stack-at-time-limit.txt"), "w")
            faulthandler.dump_traceback_later(max(0.1, float(dump_at) - time.time()), file=self.stack_dump)

    def emit(self, event: dict) -> None:
        event.setdefault("elapsed_s", round(time.monotonic() - self.started, 3))
        if self.events:
            try:
                self.events.write(json.dumps(event, default=str) + "\n")
            except OSError:  # the parent went away: finish the report anyway
                self.events = None

    def begin(self, stage: str, **extra) -> float:
        """Announce a stage (once: a stage begun already, such as load, keeps its start) and return its start."""
        key = f"{stage}:{extra.get('config')}"
        if self.stage == stage and key in self._begun:
            return self._begun[key]
        self.stage = stage
        self._begun[key] = time.monotonic()
        self.emit({"event": "stage", "stage": stage, "state": "started", **extra})
        return self._begun[key]

    def end(self, stage: str, t0: float, seconds: float | None = None, **extra) -> None:
        seconds = round(time.monotonic() - t0 if seconds is None else seconds, 4)
        self.report["stages"].append({"name": stage, "seconds": seconds, **extra})
        # Written before the event says so: the worker stores the finished sections when it reads the event.
        write_report(self.report, os.path.join(self.job_dir, "report.json.partial"))
        self.emit({"event": "stage", "stage": stage, "state": "finished", "seconds": seconds, **extra})

    def save(self) -> None:
        write_report(self.report, os.path.join(self.job_dir, "report.json"))


def pipeline() -> list:
    """The registered stages, in order. Imported here, in the child only (they import torch), after the load stage
    has begun: torch's import time is part of it."""
    from engine.stages.capture import CaptureStage
    from engine.stages.runtime import LadderStage, ReferenceStage
    from engine.usercode import LoadStage

    return [LoadStage(), ReferenceStage(), CaptureStage(), LadderStage()]


def run(job: Job) -> None:
    job.begin("load")
    for stage in pipeline():
        stage.run(job)
    ctx = job.state.ctx
    job.report["unavailable"] = ctx.unavailable
    job.report["errors"] += ctx.errors
    job.report["status"] = "ok"


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
        # Kind and message also by event: the parent still knows them if the report cannot be written (a full
        # job folder).
        job.emit({"event": "stage", "stage": job.stage, "state": "failed", "kind": job.report["failure"]["kind"],
                  "message": job.report["failure"]["message"]})
    if os.getpid() != job_pid:
        os._exit(0)
    job.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
