"""The per-job limits' defaults, in one place: engine.job.JobRequest (what the engine enforces), the settings
(storage/config.py, overridable from the environment) and the CLI read them from here. docs/security.md says why
each value, and what enforces it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobLimits:
    # Wall clock, the whole job: ten minutes, the last resort of an interactive service (an endless loop ends at the
    # user-code or stall limit, in about 90 s); the slowest gallery job takes 141 s on a 2-core CPU
    # (docs/benchmarks.md, "stall limit").
    time_limit_s: float = 600.0
    # Wall clock of each stage that runs only the user's own code: loading the file (torch's import included) and
    # the eager reference run. An endless loop there ends in this, not the whole job's limit; every gallery and
    # test model loads and runs eagerly in seconds.
    user_code_time_limit_s: float = 90.0
    # Once the user's code has run eagerly, the longest the job may go without progress (engine/stall.py): an endless
    # loop that only a compile or a later call reaches ends in this, plus ten of the model's eager steps, rather
    # than at the job's limit. Measured against every gallery model (docs/benchmarks.md, "stall limit").
    stall_limit_s: float = 90.0
    # RLIMIT_AS, CPU jobs only: CUDA reserves huge virtual address ranges, so GPU hosts need a cgroup or container
    # limit instead (None: not enforced per job).
    memory_limit_mb: int | None = 8192
    cpu_time_limit_s: float = 1800.0  # per process, all its threads together
    process_limit: int = 512  # processes and threads
    open_files_limit: int = 1024
    file_size_limit_mb: int = 256  # the largest single file (the user's stdout and report.json included)
    output_limit_mb: int = 1024  # everything in the job folder together
    # The most cores the job's processes may use together, at one low CPU weight (cgroup cpu controller); None: the
    # cores the worker is given.
    cpu_cores: float | None = None


DEFAULT_LIMITS = JobLimits()
# Before the parent kills a job at its time limit, the child dumps every thread's stack (faulthandler) into its
# folder, this long ahead, so the timeout can name the user's line.
STACK_DUMP_FILE = "stack-at-time-limit.txt"
STACK_DUMP_LEAD_S = 1.5
# At the user-code limit the child itself dumps its stacks here and ends (engine.child.Job.user_code_starts): the
# parent reads the file to say so and name the line.
USER_CODE_STACK_FILE = "stack-at-user-code-limit.txt"
# At the stall limit the child's stall watch (engine/stall.py) writes the limit it applied on the first line, then
# every thread's stack, and ends the process: the parent reads the file to say so.
STALL_STACK_FILE = "stack-at-stall.txt"
