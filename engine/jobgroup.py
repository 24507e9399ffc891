"""Every process of one job, as one unit: limited together, measured together, killed together.

Where the worker may create cgroups (a root worker on cgroup v1, or a delegated cgroup v2 subtree), each job gets
its own: the kernel then enforces the job's memory (all its processes together, swap included) and its number of
processes and threads, counts what hit a limit (so a failure names the right one), and lists every process of
the job, whatever it forked, double-forked or daemonised, so the parent can kill them all. Without cgroups the
parent falls back to a watchdog: the processes descending from the job's first process, their resident memory
summed every poll. Parent side only; pure Python.

The job's cgroup also shares the CPU (JobCpu): a quota of at most the cores its worker is given (cpu.max on v2,
cpu.cfs_quota_us on v1) and a weight below the web tier's (cpu.weight 10 against the default 100; cpu.shares 102
against 1024 on v1), so a job that takes every core it can (a fork bomb, a busy loop) leaves the web server and the
other workers theirs. Where the cpu controller is not ours to use, the job runs unshared and ``cpu_limit`` says so.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

CGROUP_ROOT = "/sys/fs/cgroup"
# The files of each cgroup version: limits written at creation, counters read when the job ends.
V1 = {
    "memory": ("memory", "memory.limit_in_bytes"),
    "swap": ("memory", "memory.memsw.limit_in_bytes"),
    "pids": ("pids", "pids.max"),
    "oom": ("memory", "memory.oom_control", "oom_kill"),
    "pids_hit": ("pids", "pids.events", "max"),
    "peak": ("memory", "memory.max_usage_in_bytes"),
    "cpu_quota": ("cpu", "cpu.cfs_quota_us"),
    "cpu_weight": ("cpu", "cpu.shares"),
}
V2 = {
    "memory": ("", "memory.max"),
    "swap": ("", "memory.swap.max"),
    "pids": ("", "pids.max"),
    "oom": ("", "memory.events", "oom_kill"),
    "pids_hit": ("", "pids.events", "max"),
    "peak": ("", "memory.peak"),
    "cpu_quota": ("", "cpu.max"),
    "cpu_weight": ("", "cpu.weight"),
}
CPU_PERIOD_US = 100_000  # the scheduler's accounting period for the quota (the kernel's default)
V1_SHARES_PER_WEIGHT = 1024 / 100  # cpu.shares 1024 is cpu.weight 100 (the kernel's own conversion)


@dataclass(frozen=True)
class JobCpu:
    """How much CPU one job may take: ``cores`` (the quota; PT2SCOPE_JOB_CPUS, default every core the worker may
    run on) and ``weight`` (cpu.weight's scale, 1-10000, the web tier and every other process at 100 by default;
    PT2SCOPE_JOB_CPU_WEIGHT)."""

    cores: float
    weight: int = 10

    @classmethod
    def from_env(cls, env=os.environ) -> JobCpu:
        cores = float(env.get("PT2SCOPE_JOB_CPUS") or 0) or float(len(os.sched_getaffinity(0)))
        return cls(cores=cores, weight=max(1, min(10_000, int(env.get("PT2SCOPE_JOB_CPU_WEIGHT") or 10))))


class JobGroup:
    """One job's processes. ``cgroup`` is None when the machine gives us none: then the watchdog measures."""

    def __init__(self, name: str, memory_bytes: int | None, process_limit: int, cpu: JobCpu | None = None):
        self.memory_bytes, self.process_limit = memory_bytes, process_limit
        self.cpu = cpu or JobCpu.from_env()
        self.root_pid: int | None = None
        self.dirs: dict[str, str] = {}  # controller ("" for v2) -> this job's cgroup folder
        self.files = V1
        self._join_fds: list[int] = []
        # What shares the job's CPU, in words (the worker's start line and /status say it too).
        self.cpu_limit = "not limited: no cgroup for jobs on this machine (a non-root worker without a delegated one)"
        try:
            self._create(name)
        except OSError:
            self._remove_dirs()
            self.dirs = {}
        else:
            self.cpu_limit = self._limit_cpu(name)
            self._join_fds = [
                os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs.values()
            ]

    @property
    def enforced(self) -> bool:
        """True when the kernel limits the job as a whole (a cgroup); False: the watchdog does."""
        return bool(self.dirs)

    def describe(self) -> str:
        if not self.dirs:
            return "watchdog"
        return "cgroup v2" if self.files is V2 else "cgroup v1"

    def _create(self, name: str) -> None:
        if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
            self.files = V2
            controllers = {"": os.path.join(CGROUP_ROOT, _own_cgroup("")[1:])}
        else:
            controllers = {c: os.path.join(CGROUP_ROOT, c, _own_cgroup(c)[1:]) for c in ("memory", "pids")}
        for controller, parent in controllers.items():
            if not os.access(parent, os.W_OK):
                raise PermissionError(parent)
            folder = os.path.join(parent, name)
            os.mkdir(folder)
            self.dirs[controller] = folder
        if self.memory_bytes is not None:
            self._write("memory", str(self.memory_bytes))
            try:
                self._write("swap", str(self.memory_bytes) if self.files is V1 else "0")
            except OSError:  # no swap accounting on this kernel: there is then no swap to escape to either
                pass
        self._write("pids", str(self.process_limit))

    def _limit_cpu(self, name: str) -> str:
        """Give the job its CPU quota and weight (a cgroup of the cpu controller beside the others on v1, the
        same cgroup on v2); return what now limits it, or why nothing does. Never fails the job's other limits."""
        quota = int(self.cpu.cores * CPU_PERIOD_US)
        try:
            if self.files is V1:
                parent = os.path.join(CGROUP_ROOT, "cpu", _own_cgroup("cpu")[1:])
                folder = os.path.join(parent, name)
                os.mkdir(folder)
                self.dirs["cpu"] = folder
                self._write("cpu_quota", str(quota))
                shares = max(2, round(self.cpu.weight * V1_SHARES_PER_WEIGHT))
                self._write("cpu_weight", str(shares))
                return (
                    f"cgroup v1: at most {self.cpu.cores:g} cores (cpu.cfs_quota_us {quota} per {CPU_PERIOD_US}), "
                    f"cpu.shares {shares} against 1024 for the web tier and the workers"
                )
            folder = self.dirs[""]
            if not os.path.exists(os.path.join(folder, "cpu.max")):
                with open(os.path.join(os.path.dirname(folder), "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu")
            self._write("cpu_quota", f"{quota} {CPU_PERIOD_US}")
            self._write("cpu_weight", str(self.cpu.weight))
            return (
                f"cgroup v2: at most {self.cpu.cores:g} cores (cpu.max {quota} {CPU_PERIOD_US}), "
                f"cpu.weight {self.cpu.weight} against 100 for the web tier and the workers"
            )
        except OSError as exc:
            if "cpu" in self.dirs:  # made, but its limits could not be written: the job stays out of it
                os.rmdir(self.dirs.pop("cpu"))
            return f"not limited: the cpu controller is not available to the worker ({exc.strerror or exc})"

    def join_in_child(self) -> None:
        """Popen's preexec_fn: the new process enters the job's cgroups before it runs anything (no allocation,
        no lock: only writes to descriptors opened by the parent)."""
        pid = str(os.getpid()).encode()
        for fd in self._join_fds:
            os.write(fd, pid)

    def started(self, pid: int) -> None:
        self.root_pid = pid
        for fd in self._join_fds:
            os.close(fd)
        self._join_fds = []

    def pids(self) -> list[int]:
        """Every live process of the job."""
        if self.dirs:
            folder = self.dirs.get("pids") or self.dirs[""]
            try:
                with open(os.path.join(folder, "cgroup.procs")) as f:
                    return [int(line) for line in f if line.strip()]
            except OSError:
                return []
        return _descendants(self.root_pid) if self.root_pid else []

    def memory_used(self) -> int:
        """Resident bytes of the job's processes together (the watchdog's measure; a cgroup enforces its own)."""
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process of the job until none is left; True when none is."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
            if self.root_pid and alive(self.root_pid):
                pids.append(self.root_pid)
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def counter(self, name: str) -> int:
        """A kernel counter of the job's cgroup: "oom" (processes the OOM killer ended), "pids_hit" (forks refused
        at the process limit), "peak" (bytes); 0 without a cgroup."""
        controller, filename, *key = self.files[name]
        folder = self.dirs.get(controller)
        if folder is None:
            return 0
        try:
            with open(os.path.join(folder, filename)) as f:
                text = f.read()
        except OSError:
            return 0
        if not key:
            return int(text.strip() or 0)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key[0]:
                return int(parts[1])
        return 0

    def close(self) -> None:
        """Kill what is left and remove the cgroups."""
        self.kill_all()
        for fd in self._join_fds:
            os.close(fd)
        self._join_fds = []
        self._remove_dirs()

    def _write(self, name: str, value: str) -> None:
        controller, filename = self.files[name][:2]
        with open(os.path.join(self.dirs[controller], filename), "w") as f:
            f.write(value)

    def _remove_dirs(self) -> None:
        for folder in self.dirs.values():
            for _ in range(50):  # the last killed processes leave the cgroup a moment after they die
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def remove_stale(older_than_s: float = 60.0) -> list[str]:
    """Remove job cgroups left empty by a worker that died mid-job (its jobs' processes killed since); a cgroup
    younger than ``older_than_s`` may belong to a job that is just starting, and is left alone."""
    removed = []
    try:
        parents = (
            [os.path.join(CGROUP_ROOT, _own_cgroup("")[1:])]
            if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))
            else [os.path.join(CGROUP_ROOT, c, _own_cgroup(c)[1:]) for c in ("memory", "pids", "cpu")]
        )
    except (OSError, FileNotFoundError):
        return removed
    for parent in parents:
        try:
            names = [n for n in os.listdir(parent) if n.startswith("pt2scope-job-")]
        except OSError:
            continue
        for name in names:
            folder = os.path.join(parent, name)
            try:
                if time.time() - os.stat(folder).st_mtime > older_than_s:
                    os.rmdir(folder)  # refused while any process is in it
                    removed.append(folder)
            except OSError:
                pass
    return removed


def _own_cgroup(controller: str) -> str:
    """This process's cgroup path in the hierarchy of ``controller`` ("" for v2), from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if (controller and controller in names.split(",")) or (not controller and names == ""):
                return path
    raise FileNotFoundError(f"no {controller or 'v2'} cgroup")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it, from /proc (the watchdog's view without a cgroup)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if alive(pid):
            found.append(pid)
        todo.extend(children.get(pid, []))
    return found
