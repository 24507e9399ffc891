"""Settings shared by the web app, the workers and the launcher, read from the environment.

Everything has a default that needs nothing running: SQLite for data and an SQLite broker, both in the instance
folder. Production sets DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Settings:
    instance_path: str
    database_url: str
    broker_url: str
    examples_dir: str
    # The engine's own limit for one job; the Celery hard limit and the reaper's deadline add a margin to it.
    job_time_limit_s: float = 900.0
    max_code_bytes: int = 256 * 1024
    # A worker whose heartbeat is older than this is dead: GPU is no longer offered and its runs are reaped.
    heartbeat_interval_s: float = 5.0
    worker_stale_after_s: float = 30.0

    @property
    def jobs_path(self) -> str:
        return os.path.join(self.instance_path, "jobs")

    @property
    def hard_time_limit_s(self) -> float:
        """Celery kills the task after this: the engine's limit plus time to start the child and store results."""
        return self.job_time_limit_s + 120

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        env = os.environ
        instance = overrides.pop("instance_path", None) or env.get(
            "PT2SCOPE_INSTANCE", os.path.join(PROJECT_ROOT, "instance"))
        instance = os.path.abspath(instance)
        settings = cls(
            instance_path=instance,
            database_url=env.get("DATABASE_URL") or f"sqlite:///{os.path.join(instance, 'pt2scope.sqlite')}",
            broker_url=env.get("CELERY_BROKER_URL") or f"sqla+sqlite:///{os.path.join(instance, 'broker.sqlite')}",
            examples_dir=env.get("PT2SCOPE_EXAMPLES", os.path.join(PROJECT_ROOT, "examples")),
            job_time_limit_s=float(env.get("PT2SCOPE_JOB_TIME_LIMIT", 900)),
            heartbeat_interval_s=float(env.get("PT2SCOPE_HEARTBEAT_INTERVAL", 5)),
            worker_stale_after_s=float(env.get("PT2SCOPE_WORKER_STALE_AFTER", 30)),
        )
        return replace(settings, **overrides)

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
        }
