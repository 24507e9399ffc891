"""The command lines of pt2scope's processes, in one place: `python -m service serve` (embedded: both), the
container entry points `python -m service web` and `python -m service worker` (Dockerfile, docker-compose.yml),
the tests and the benches all start these."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from workers.device import visible_gpus


def gpu_present() -> bool:
    """A CUDA GPU this worker may use, found without importing torch (the worker parent never does)."""
    return bool(visible_gpus())


def worker_queues() -> list[str]:
    return ["cpu", "gpu"] if gpu_present() else ["cpu"]


def worker_command(name: str, queues: list[str], loglevel: str = "INFO") -> list[str]:
    """``name`` must be unique among live workers: heartbeats and the reaper key on it."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.celery_app",
        "worker",
        "--hostname",
        name,
        "--queues",
        ",".join(queues),
        "--concurrency",
        "1",
        "--pool",
        "prefork",
        "--loglevel",
        loglevel,
        # No remote control is needed, and the SQLite transport supports none of it.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def web_command(host: str, port: int, workers: int = 2, threads: int = 8) -> list[str]:
    """gunicorn with threaded workers: a report page is mostly database reads, so threads overlap them."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--bind",
        f"{host}:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--access-logfile",
        "-",
        "webapp:create_app()",
    ]


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def dies_with_parent(sig: int = signal.SIGTERM):
    """A ``preexec_fn`` for the processes above: the process started gets ``sig`` when the thread that started it
    ends (Linux PR_SET_PDEATHSIG), so a launcher killed outright (SIGKILL, the OOM killer, a test run stopped)
    leaves no web server or worker behind, whose jobs would take the cores of the next ones."""
    parent = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it

    def set_parent_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the launcher died before the signal was set: nobody will send it
            os._exit(1)

    return set_parent_death_signal
