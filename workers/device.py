"""What a worker runs jobs on, found without importing torch (the worker process never does: jobs import it in
their own child process). Shown on the status page from each worker's heartbeat.

    {"cpu": "AMD EPYC 9654 96-Core Processor", "cpus": 2, "gpus": ["NVIDIA H200"],
     "torch": "2.13.0+cpu", "triton": null, "python": "3.11.7"}

Versions are read from the installed packages' metadata in the worker's own environment, which is the one the
job's child process runs in (engine.job starts it with the same interpreter).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import metadata

from engine import jobgroup

# Triton ships as "triton" with release wheels of torch and as "pytorch-triton" with nightly ones.
TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton")


def describe() -> dict:
    return {
        "cpu": cpu_model(),
        "cpus": len(os.sched_getaffinity(0)),
        "gpus": [gpu["name"] for gpu in visible_gpus()],
        "torch": package_version("torch"),
        "triton": next(filter(None, map(package_version, TRITON_DISTRIBUTIONS)), None),
        "python": platform.python_version(),
        "job_limits": jobgroup.probe()[1],  # what confines each job's processes (cgroup, CPU) on this host
    }


def cpu_model(cpuinfo_path: str = "/proc/cpuinfo") -> str:
    """The processor's marketing name ("model name" on x86, "Model" or "Hardware" on some ARM kernels)."""
    try:
        with open(cpuinfo_path) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        fields = {}
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    for key in ("model name", "Model", "Hardware"):
        if fields.get(key):
            return fields[key]
    return platform.processor() or platform.machine() or "unknown"


def package_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def visible_gpus(nvidia_smi: str = "nvidia-smi") -> list[dict]:
    """The NVIDIA GPUs this process may use: all the driver lists, narrowed by CUDA_VISIBLE_DEVICES.

    nvidia-smi ignores CUDA_VISIBLE_DEVICES and lists every GPU, so the variable is applied here. Its entries
    are indices in nvidia-smi's (PCI bus) order, which is CUDA's order only with CUDA_DEVICE_ORDER=PCI_BUS_ID
    (docs/deploy.md sets it), or UUIDs and their prefixes ("GPU-8f3a..."). MIG devices are not resolved.
    """
    if not shutil.which(nvidia_smi):
        return []
    try:
        listing = subprocess.run(
            [nvidia_smi, "--query-gpu=index,uuid,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listing.returncode != 0:
        return []
    gpus = []
    for line in listing.stdout.splitlines():
        parts = [part.strip() for part in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit():
            gpus.append({"index": parts[0], "uuid": parts[1], "name": parts[2]})
    return select_visible(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))


def select_visible(gpus: list[dict], cuda_visible_devices: str | None) -> list[dict]:
    """CUDA's rules: unset means all; the list is read up to the first entry that matches no GPU."""
    if cuda_visible_devices is None:
        return gpus
    chosen = []
    for entry in (e.strip() for e in cuda_visible_devices.split(",")):
        match = next((g for g in gpus if g["index"] == entry or _names_uuid(entry, g["uuid"])), None)
        if match is None:
            break
        if match not in chosen:
            chosen.append(match)
    return chosen


def _names_uuid(entry: str, uuid: str) -> bool:
    """A UUID or a prefix of one past "GPU-" (CUDA finds no GPU for a bare "GPU-": seen on an H200)."""
    return entry.startswith("GPU-") and len(entry) > len("GPU-") and uuid.startswith(entry)
