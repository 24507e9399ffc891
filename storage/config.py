"""Settings shared by the web app, the workers and the launcher, read from the environment.

Everything has a default that needs nothing running: SQLite for data and an SQLite broker, both in the instance
folder. Production sets DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from contract.limits import DEFAULT_LIMITS, JobLimits
from contract.vocab import ISOLATION_MODES

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Settings:
    instance_path: str
    database_url: str
    broker_url: str
    examples_dir: str
    # The engine's own limit for one job; the Celery hard limit and the reaper's deadline add a margin to it.
    job_time_limit_s: float = DEFAULT_LIMITS.time_limit_s
    max_code_bytes: int = 256 * 1024
    # A worker whose heartbeat is older than this is dead: GPU is no longer offered and its runs are reaped.
    heartbeat_interval_s: float = 5.0
    worker_stale_after_s: float = 30.0
    # Security (docs/security.md). How jobs are confined: "bubblewrap" or, explicitly, "none".
    isolation: str = "bubblewrap"
    # Per-job limits beyond the time limit (contract/limits.py: the defaults engine.job.JobRequest also uses).
    cpu_time_limit_s: float = DEFAULT_LIMITS.cpu_time_limit_s
    user_code_time_limit_s: float = DEFAULT_LIMITS.user_code_time_limit_s
    stall_limit_s: float = DEFAULT_LIMITS.stall_limit_s
    memory_limit_mb: int | None = (
        DEFAULT_LIMITS.memory_limit_mb
    )  # CPU jobs only (RLIMIT_AS); GPU: a cgroup/container limit
    process_limit: int = DEFAULT_LIMITS.process_limit
    open_files_limit: int = DEFAULT_LIMITS.open_files_limit
    file_size_limit_mb: int = DEFAULT_LIMITS.file_size_limit_mb
    output_limit_mb: int = DEFAULT_LIMITS.output_limit_mb
    cpu_cores: float | None = DEFAULT_LIMITS.cpu_cores
    report_limit_mb: int = 256  # one run's report as stored (sections, outlines, graphs); larger ones are refused
    # Workers compile a trusted precompiled header once at start and share it read-only with every CPU job.
    pch_warmup: bool = True
    # Each worker prestarts the sandboxed child of its next job (torch imported, nothing of a user's): still one
    # sandbox per job, used by that job only (engine.job.PrestartedChild, docs/security.md).
    prestart_child: bool = True
    # A job whose report is readable while other runs wait leaves its warm compile and measuring processes for when
    # the worker is idle (workers/deferred.py); off: every job runs them before the next job starts.
    defer_post_report: bool = True

    # ... and compile these gallery files (comma-separated, in examples_dir) into a trusted kernel cache that every
    # job gets read-only (engine.job.warm_up_kernel_cache); "none": no trusted kernel cache.
    kernel_cache_gallery: str = "seed.py"

    def kernel_cache_files(self) -> list[str]:
        names = [name.strip() for name in self.kernel_cache_gallery.split(",")]
        return [name for name in names if name and name != "none"]

    # Submissions per client (by IP address, stored only as a keyed hash) within the window; 0 turns it off.
    rate_limit_count: int = 30
    rate_limit_window_s: float = 600.0
    # How many proxies in front of the web app set X-Forwarded-For (0: use the connection's address).
    proxy_count: int = 0
    # GET /api/runs lists recent runs only when the operator allows it: links are private by default.
    list_runs: bool = False
    # TORCH_TRACE imports (docs/api.md, POST /api/traces): the largest upload, and the most bytes its logs may
    # expand to once decompressed.
    max_trace_mb: int = 256
    max_trace_expanded_mb: int = 2048
    max_trace_ranks: int = 1024  # logs in one upload: each becomes a run of its own
    secret_key: str = ""  # signs the session cookie that carries the CSRF token; empty: kept in the instance

    def job_limits(self) -> dict:
        """The engine.job.JobRequest limit fields (contract.limits.JobLimits names them)."""
        limits = {f.name: getattr(self, f.name) for f in fields(JobLimits) if f.name != "time_limit_s"}
        return {**limits, "time_limit_s": self.job_time_limit_s}

    @property
    def pch_path(self) -> str:
        return os.path.join(self.instance_path, "pch")

    @property
    def kernel_cache_path(self) -> str:
        return os.path.join(self.instance_path, "kernel-cache")

    @property
    def jobs_path(self) -> str:
        return os.path.join(self.instance_path, "jobs")

    @property
    def deferred_path(self) -> str:
        """The folders jobs kept for their deferred post-report work (workers/deferred.py), one per run."""
        return os.path.join(self.instance_path, "deferred")

    @property
    def hard_time_limit_s(self) -> float:
        """Celery kills the task after this: the engine's limit plus time to start the child and store results."""
        return self.job_time_limit_s + 120

    @classmethod
    def from_env(cls, **overrides) -> Settings:
        env = os.environ
        instance = overrides.pop("instance_path", None) or env.get(
            "PT2SCOPE_INSTANCE", os.path.join(PROJECT_ROOT, "instance")
        )
        instance = os.path.abspath(instance)
        settings = cls(
            instance_path=instance,
            database_url=env.get("DATABASE_URL") or f"sqlite:///{os.path.join(instance, 'pt2scope.sqlite')}",
            broker_url=env.get("CELERY_BROKER_URL") or f"sqla+sqlite:///{os.path.join(instance, 'broker.sqlite')}",
            examples_dir=env.get("PT2SCOPE_EXAMPLES", os.path.join(PROJECT_ROOT, "examples")),
            job_time_limit_s=float(env.get("PT2SCOPE_JOB_TIME_LIMIT", DEFAULT_LIMITS.time_limit_s)),
            heartbeat_interval_s=float(env.get("PT2SCOPE_HEARTBEAT_INTERVAL", 5)),
            worker_stale_after_s=float(env.get("PT2SCOPE_WORKER_STALE_AFTER", 30)),
        )
        defaults: dict[str, Any] = {f.name: f.default for f in fields(cls)}
        for name, variable in SECURITY_ENV.items():
            if variable in env:
                overrides.setdefault(name, _parsed(env[variable], defaults[name]))
        settings = replace(settings, **overrides)
        if settings.isolation not in ISOLATION_MODES:
            raise ValueError(f"PT2SCOPE_ISOLATION={settings.isolation!r}: choose one of {', '.join(ISOLATION_MODES)}")
        return settings

    def to_env(self) -> dict[str, str]:
        """The environment that gives another process (a worker, the server) these same settings."""
        return {
            "PT2SCOPE_INSTANCE": self.instance_path,
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.broker_url,
            "PT2SCOPE_EXAMPLES": self.examples_dir,
            "PT2SCOPE_JOB_TIME_LIMIT": str(self.job_time_limit_s),
            "PT2SCOPE_HEARTBEAT_INTERVAL": str(self.heartbeat_interval_s),
            "PT2SCOPE_WORKER_STALE_AFTER": str(self.worker_stale_after_s),
            **{
                variable: str(getattr(self, name))
                for name, variable in SECURITY_ENV.items()
                if getattr(self, name) not in ("", None)
            },
        }


def _parsed(value: str, default):
    """An environment variable's text as the type of its setting's default (a None default: a number, or None for
    "" or "none")."""
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    if default is None:
        return None if value.strip().lower() in ("", "none") else float(value)
    return type(default)(value)


# The security settings' environment variables (docs/security.md has each default and what it does).
SECURITY_ENV = {
    "isolation": "PT2SCOPE_ISOLATION",
    "cpu_time_limit_s": "PT2SCOPE_CPU_TIME_LIMIT",
    "user_code_time_limit_s": "PT2SCOPE_USER_CODE_TIME_LIMIT",
    "stall_limit_s": "PT2SCOPE_STALL_LIMIT",
    "memory_limit_mb": "PT2SCOPE_MEMORY_LIMIT_MB",
    "process_limit": "PT2SCOPE_PROCESS_LIMIT",
    "open_files_limit": "PT2SCOPE_OPEN_FILES_LIMIT",
    "file_size_limit_mb": "PT2SCOPE_FILE_SIZE_LIMIT_MB",
    "output_limit_mb": "PT2SCOPE_OUTPUT_LIMIT_MB",
    "cpu_cores": "PT2SCOPE_JOB_CPU_CORES",
    "report_limit_mb": "PT2SCOPE_REPORT_LIMIT_MB",
    "pch_warmup": "PT2SCOPE_PCH_WARMUP",
    "kernel_cache_gallery": "PT2SCOPE_KERNEL_CACHE_GALLERY",
    "prestart_child": "PT2SCOPE_PRESTART",
    "defer_post_report": "PT2SCOPE_DEFER_POST_REPORT",
    "rate_limit_count": "PT2SCOPE_RATE_LIMIT",
    "rate_limit_window_s": "PT2SCOPE_RATE_LIMIT_WINDOW",
    "proxy_count": "PT2SCOPE_PROXY_COUNT",
    "list_runs": "PT2SCOPE_LIST_RUNS",
    "secret_key": "PT2SCOPE_SECRET_KEY",
    "max_trace_mb": "PT2SCOPE_MAX_TRACE_MB",
    "max_trace_expanded_mb": "PT2SCOPE_MAX_TRACE_EXPANDED_MB",
    "max_trace_ranks": "PT2SCOPE_MAX_TRACE_RANKS",
}
