"""The one small interface every stage collector implements, and the context they share.

A collector ``install()``s its hooks before the recorded compile and ``collect(report)``s what they saw after it.
Every use of a private torch API goes through ``ctx.guard(name)``: if the hook is missing or breaks on this torch
version, the report gets a named entry under "unavailable" and the job carries on.
"""

from __future__ import annotations

import contextlib
import traceback

from engine.logtap import LogTap


class Context:
    def __init__(self, *, user_file: str, device: str, train: bool, tap: LogTap, emit, progress=lambda: None):
        self.user_file = user_file
        self.device = device
        self.train = train
        self.tap = tap
        self.emit = emit  # emit(event: dict): progress to the parent
        self.progress = progress  # progress(): the job moved on (each timed round; engine/stall.py)
        # The user's name and line for the compiled model, {function, file, line} (engine.usercode.entry_point):
        # what a compiled frame of torch's own code (torch.compile's wrapper of an nn.Sequential) is called.
        self.entry: dict | None = None
        # True only during the recorded compile: benchmark compiles later reuse the same hooks but record nothing.
        self.recording = False
        self.unavailable: list[dict] = []
        self.errors: list[dict] = []

    @contextlib.contextmanager
    def guard(self, name: str):
        """Run a private-API capture; on failure record it as unavailable instead of failing the job."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - any failure of a private hook is reported, not raised
            self.mark_unavailable(name, f"{type(exc).__name__}: {exc}")

    def mark_unavailable(self, name: str, reason: str) -> None:
        if not any(u["name"] == name for u in self.unavailable):
            self.unavailable.append({"name": name, "reason": reason[:500]})

    def error(self, stage: str, exc: BaseException) -> None:
        self.errors.append(
            {
                "stage": stage,
                "message": f"{type(exc).__name__}: {exc}",
                "traceback": "".join(traceback.format_exception(exc))[-4000:],
            }
        )


class Collector:
    """Base class: one per stage, in engine/stages/<stage>.py."""

    section = ""  # the report key this collector fills

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def install(self) -> None:
        """Set hooks and configs before the recorded compile."""

    def collect(self, report: dict) -> None:
        """Fill report[self.section] from what the hooks and the log tap saw."""


class Stage:
    """One step of a job's pipeline. engine/child.py runs the steps of ``engine.child.pipeline()`` in order; each
    ``run(job)`` reads what earlier steps left in ``job.state``, adds its own, and fills ``job.report``.
    ``job.begin(stage)`` / ``job.end(stage, t0)`` announce progress (the stages of contract.vocab.STAGES, which a
    step may announce several of) and save the partial report."""

    name = ""  # the step's own name: a progress stage where the step is one, else what it does ("capture")

    def run(self, job) -> None:
        raise NotImplementedError
