"""Import a TORCH_TRACE upload in a child process with limits, and read its reports back: the worker's side.

The log is untrusted data (never code): parsing it runs in a child (``python -m engine.traceimport``) with an
address-space, CPU-time and file-size limit and a wall-clock timeout, so a hostile or huge upload costs one child,
never the worker. The child writes OUT/report.json (+ OUT/report.rank<N>.json per further rank) or OUT/error.json.
No torch here: the worker and ``python -m engine import`` (engine/cli.py) are this side.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from contract.vocab import new_error_id
from engine.sandbox import PROJECT_ROOT

log = logging.getLogger(__name__)
# The file the child lists its report files in, first rank first (engine.traceimport.write_import).
REPORTS_INDEX = "reports.json"


@dataclass(frozen=True)
class ImportLimits:
    time_limit_s: float = 300.0
    # Address space for what the log holds (the importer imports no torch: a 100 MiB log peaked at 379 MiB RSS,
    # the records kept grow with the log up to max_log_mb).
    memory_limit_mb: int = 6144
    max_log_mb: int = 2048  # decompressed bytes read
    max_ranks: int = 1024  # logs in one upload (engine.readers.tracelog.DEFAULT_MAX_RANKS)
    output_limit_mb: int = 1024  # the largest report file


class ImportFailed(Exception):
    """The upload could not be imported; ``kind`` is bad_log, timeout, memory or internal_error."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def import_request(filename: str, device: str, limits: ImportLimits | None = None) -> dict:
    """The report's ``request`` for an import: no code, no configs, and the limits the import ran under (the
    child writes the defaults; the parent, which set the limits, writes its own over them)."""
    limits = limits or ImportLimits()
    return {
        "code": "",
        "filename": filename,
        "device": device,
        "train": None,
        "configs": [],
        "time_limit_s": float(limits.time_limit_s),
        "memory_limit_mb": limits.memory_limit_mb,
        "cpu_time_limit_s": float(limits.time_limit_s * 2),
        "process_limit": None,
        "open_files_limit": None,
        "file_size_limit_mb": limits.output_limit_mb,
        "output_limit_mb": limits.output_limit_mb,
    }


def _limit_child(limits: ImportLimits):
    def apply():
        memory = limits.memory_limit_mb * 1024**2
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = int(limits.time_limit_s * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        size = limits.output_limit_mb * 1024**2
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def _start_child(limits: ImportLimits) -> subprocess.Popen:
    """A limited child that imports the importer (no torch: a quarter of a second) and reads one job from stdin."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": PROJECT_ROOT,
        "HOME": "/nonexistent",
        "OMP_NUM_THREADS": "1",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    stderr = tempfile.TemporaryFile()  # a file, not a pipe: nobody reads it while the child waits
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.traceimport"],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        preexec_fn=_limit_child(limits),
        start_new_session=True,
    )
    proc.stderr_file = stderr
    return proc


class ImportedReports:
    """An import's reports as the child wrote them, read one at a time: ``first`` (the first rank's, which lists
    every rank) and ``further()``, the other ranks' in rank order, each read only when it is asked for."""

    def __init__(self, out_dir: str, names: list[str], limits: ImportLimits):
        self.out_dir, self.names, self.limits = out_dir, names, limits
        self.first = self._read(names[0])

    def __len__(self) -> int:
        return len(self.names)

    def further(self):
        for name in self.names[1:]:
            yield self._read(name)

    def _read(self, name: str) -> dict:
        # Read as data, validated once, by storage (runstore.store_report) before it is stored: validating a large
        # import twice costs seconds the user waits.
        with open(os.path.join(self.out_dir, name)) as f:
            report = json.load(f)
        report["request"] = import_request(report["request"]["filename"], report["request"]["device"], self.limits)
        return report


def run_import(log_path: str, out_dir: str, display_name: str, limits: ImportLimits | None = None) -> ImportedReports:
    """Worker side: import in a limited child; its reports, read back one at a time (raises ImportFailed)."""
    limits = limits or ImportLimits()
    os.makedirs(out_dir, exist_ok=True)
    proc = _start_child(limits)
    job = json.dumps(
        {
            "log": os.path.abspath(log_path),
            "out": os.path.abspath(out_dir),
            "name": display_name,
            "max_mb": limits.max_log_mb,
            "max_ranks": limits.max_ranks,
        }
    )
    try:
        proc.communicate(job.encode() + b"\n", timeout=limits.time_limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise ImportFailed(
            "timeout",
            f"reading the log took longer than {limits.time_limit_s:g} s; it was stopped. "
            "Upload fewer ranks or a shorter run.",
        ) from None
    proc.stderr_file.seek(0)
    stderr = proc.stderr_file.read()
    proc.stderr_file.close()
    error_path = os.path.join(out_dir, "error.json")
    if os.path.exists(error_path):
        with open(error_path) as f:
            raise ImportFailed("bad_log", str(json.load(f).get("error", "the log could not be read"))[:2000])
    tail = stderr.decode("utf-8", "replace")[-1500:]
    if proc.returncode != 0:
        if proc.returncode == -signal.SIGXCPU or proc.returncode == -signal.SIGKILL and "MemoryError" not in tail:
            raise ImportFailed("timeout", "reading the log used up its CPU-time limit")
        if "MemoryError" in tail or "Cannot allocate memory" in tail:
            raise ImportFailed(
                "memory", f"reading the log needed more than {limits.memory_limit_mb} MiB; upload fewer ranks"
            )
        # The child's traceback names this server's files: it goes to the log under an id, never to the user.
        error_id = new_error_id()
        log.error("import error %s: the importer exited with %s:\n%s", error_id, proc.returncode, tail)
        raise ImportFailed(
            "internal_error",
            f"pt2scope's importer failed on this log (exit status {proc.returncode}, error id {error_id}); "
            "if it fails again, report the error id.",
        )
    with open(os.path.join(out_dir, REPORTS_INDEX)) as f:
        return ImportedReports(out_dir, json.load(f), limits)
