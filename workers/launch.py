"""How a worker process is started: one command line for the embedded server and the tests."""
from __future__ import annotations

import shutil
import subprocess
import sys


def gpu_present() -> bool:
    """A CUDA GPU on this machine, found without importing torch (the worker parent never does)."""
    if not shutil.which("nvidia-smi"):
        return False
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and "GPU" in listing.stdout


def worker_queues() -> list[str]:
    return ["cpu", "gpu"] if gpu_present() else ["cpu"]


def worker_command(name: str, queues: list[str], loglevel: str = "INFO") -> list[str]:
    """``name`` must be unique among live workers: heartbeats and the reaper key on it."""
    return [sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "--hostname", name,
            "--queues", ",".join(queues), "--concurrency", "1", "--pool", "prefork", "--loglevel", loglevel,
            # No remote control is needed, and the SQLite transport supports none of it.
            "--without-gossip", "--without-mingle", "--without-heartbeat"]
