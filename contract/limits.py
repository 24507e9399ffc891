"""The per-job limits' defaults, in one place: engine.job.JobRequest (what the engine enforces), the settings
(storage/config.py, overridable from the environment) and the CLI read them from here. docs/security.md says why
each value, and what enforces it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobLimits:
    time_limit_s: float = 900.0  # wall clock, the whole job
    # RLIMIT_AS, CPU jobs only: CUDA reserves huge virtual address ranges, so GPU hosts need a cgroup or container
    # limit instead (None: not enforced per job).
    memory_limit_mb: int | None = 8192
    cpu_time_limit_s: float = 1800.0  # per process, all its threads together
    process_limit: int = 512  # processes and threads
    open_files_limit: int = 1024
    file_size_limit_mb: int = 256  # the largest single file (the user's stdout and report.json included)
    output_limit_mb: int = 1024  # everything in the job folder together


DEFAULT_LIMITS = JobLimits()
