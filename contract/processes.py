"""Timing across processes (runtime.processes, benchmarks[].processes): the ladder's rounds timed again in fresh
measuring processes (engine/stages/runtime/processes.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class ProcessRun(_Model):
    """One fresh measuring process (a warm-compile process, after its compile, with the log tap detached)."""

    label: str
    """warmup or warm: the warm-compile process it was"""
    status: Literal["ok", "failed"]
    reason: str | None = None
    """why it failed, or the configs that failed in it"""
    rounds: int | None = None
    medians_ms: dict[str, float] = {}
    """per config: the median over this process's rounds of the time per step"""
    p10_ms: dict[str, float] = {}
    """per config: the spread within this process (p10-p90 over its rounds)"""
    p90_ms: dict[str, float] = {}
    speedups: dict[str, float] = {}
    """per config: this process's median paired speedup over eager"""
    contended: bool = False
    """every batch of this process's rounds was contended (its speedups then decide nothing)"""
    load: str | None = None
    wall_seconds: float | None = None


class Processes(_Model):
    """The measuring processes: the figures across them are `benchmarks[].processes` and `benchmarks[].speedup`."""

    status: Literal["ok", "failed", "pending", "deferred", "skipped"] | None = None
    """null: none was run (a recorded config that is not an Inductor one, whose job starts no warm-compile
    processes; a ladder without eager and another config; a report from before them); pending:
    still running when the report was first stored; deferred: left, with the warm compile, for when the worker is
    idle (other jobs were waiting); ok: at least two processes timed the configs"""
    reason: str | None = None
    method: str | None = None
    runs: list[ProcessRun] = []


class ProcessFigure(_Model):
    """A config's time per step across the measuring processes."""

    median_ms: float
    """the median of the processes' medians"""
    low_ms: float
    """the lowest process median: the spread across processes is low_ms-high_ms"""
    high_ms: float
    process_medians_ms: list[float]
    reading: str | None = None
    """in words, how far the figure holds in the next process: the processes' spread (`noisy` past 5%), and on a
    GPU whether the step is host-bound (the GPU busy for under 60% of it: the figure is then the host's launch
    speed, which moves from process to process and core to core); null in reports from before it"""
